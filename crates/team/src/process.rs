//! Starting a teammate as its own `troupe teammate` process: the command line that makes it
//! the member the lead's team expects (team, name, model, the whole permission policy, the
//! lead's settings and MCP flags), its log, and the lease handed down to it.

use crate::error::TeamError;
use crate::runtime::Team;
use crate::spec::MemberSpec;
use std::process::Stdio;
use troupe_protocol::Roster;
use troupe_store::Lease;

impl Team {
    /// Starts a member as its own `troupe teammate` process, which inherits `lease`; the
    /// process reads its profile from the roster like any incarnation.
    pub(crate) fn start_process(&self, spec: MemberSpec, lease: Lease) -> Result<(), TeamError> {
        let config = &self.shared().config;
        let err = |reason: String| TeamError::Spawn {
            name: spec.name.clone(),
            reason,
        };
        let exe = match &config.exe {
            Some(exe) => exe.clone(),
            None => std::env::current_exe().map_err(|e| err(e.to_string()))?,
        };
        // The child's own output is local to this machine, whatever backend holds the team.
        let log_dir = config.troupe_dir.join("logs").join(&config.team);
        std::fs::create_dir_all(&log_dir)
            .map_err(|e| err(format!("{}: {e}", log_dir.display())))?;
        let log_path = log_dir.join(format!("{}.log", spec.name));
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log_path)
            .map_err(|e| err(format!("{}: {e}", log_path.display())))?;
        let log2 = log.try_clone().map_err(|e| err(e.to_string()))?;
        let mut cmd = std::process::Command::new(exe);
        cmd.arg("teammate")
            .args(["--team", &config.team, "--name", &spec.name])
            // `--flag=value`: a role or prompt the model wrote may start with `-`.
            .arg(format!("--role={}", spec.role))
            .arg("--cwd")
            .arg(&config.workspace)
            .arg(format!(
                "--model={}",
                spec.model.as_deref().unwrap_or(&config.model.model)
            ))
            .args(["--provider", &config.model.provider.to_string()])
            .args(["--max-tokens", &config.max_tokens.to_string()])
            .args(["--permission-mode", &config.policy.mode.to_string()])
            .stdin(Stdio::null())
            .stdout(Stdio::from(log))
            .stderr(Stdio::from(log2));
        if let Some(prompt) = &spec.prompt {
            cmd.arg(format!("--prompt={prompt}"));
        }
        // The same settings files are read from the same workspace; a `--settings` the lead was
        // given goes along, so the teammate's effective settings are the lead's.
        if let Some(settings) = &config.settings_arg {
            cmd.arg(format!("--settings={settings}"));
        }
        cmd.args(&config.teammate_args);
        // The whole policy goes with the mode: a deny rule that held only in the lead's own
        // process would not be a rule. `--flag=value` keeps a rule that starts with `-` a value.
        let rules = &config.policy.rules;
        for (flag, list) in [
            ("--allow-rule", &rules.allow),
            ("--ask-rule", &rules.ask),
            ("--deny-rule", &rules.deny),
        ] {
            for rule in list {
                cmd.arg(format!("{flag}={}", rule.as_str()));
            }
        }
        // The child inherits the lease: the member is alive from before the child starts.
        let handoff = lease.pass_to_child(&mut cmd);
        cmd.arg(format!("--lease={handoff}"));
        let child = cmd.spawn().map_err(|e| err(e.to_string()))?;
        let pid = child.id();
        lease.hand_over(pid);
        if let Ok(mut children) = self.shared().children.lock() {
            children.push((spec.name.clone(), pid));
        }
        // The child records itself in the roster; reap it in the background so it never lingers
        // as a zombie.
        std::thread::spawn(move || {
            let mut child = child;
            let _ = child.wait();
        });
        let name = spec.name.clone();
        self.shared()
            .store
            .update_roster(&mut |roster: &mut Roster| {
                if let Some(m) = roster.get_mut(&name) {
                    m.pid = Some(pid);
                }
            })?;
        Ok(())
    }
}
