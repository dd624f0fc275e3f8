//! Starting a teammate as its own process: the configuration that makes it the member the
//! lead's team expects ([`crate::launch::ProcessLaunch`], on its stdin), its log, and the lease
//! handed down to it.

use crate::error::TeamError;
use crate::launch::{ProcessLaunch, CONFIG_FROM_STDIN, VERSION};
use crate::runtime::Team;
use crate::spec::MemberSpec;
use std::io::Write;
use std::process::Stdio;
use troupe_protocol::Roster;
use troupe_store::Lease;

impl Team {
    /// Starts a member as its own process, which inherits `lease`; the process reads its
    /// profile from the roster like any incarnation.
    pub(crate) async fn start_process(
        &self,
        spec: MemberSpec,
        lease: Lease,
    ) -> Result<(), TeamError> {
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
        // What troupe resolved for its children (the settings' env among it); the credentials
        // go in the launch document below, on the pipe.
        troupe_tools::child_env::apply_overlay(&mut cmd);
        cmd.args(CONFIG_FROM_STDIN)
            .stdin(Stdio::piped())
            .stdout(Stdio::from(log))
            .stderr(Stdio::from(log2));
        // The child inherits the lease: the member is alive from before the child starts.
        let handoff = lease.pass_to_child(&mut cmd);
        let recipe = &config.recipe;
        let run_model = recipe.model();
        let rules = &recipe.policy.rules;
        let listed = |list: &[troupe_agent::permissions::Rule]| {
            list.iter().map(|r| r.as_str().to_string()).collect()
        };
        let launch = ProcessLaunch {
            version: VERSION,
            team: config.team.clone(),
            name: spec.name.clone(),
            role: spec.role.clone(),
            prompt: spec.prompt.clone(),
            workspace: config.workspace.clone(),
            model: spec.model.clone().unwrap_or(run_model.model),
            provider: run_model.provider.to_string(),
            reasoning: run_model.reasoning,
            max_tokens: recipe.max_tokens,
            permission_mode: recipe.policy.mode.to_string(),
            allow_rules: listed(&rules.allow),
            ask_rules: listed(&rules.ask),
            deny_rules: listed(&rules.deny),
            lease: Some(handoff),
            options: config.process_options.clone(),
            secrets: troupe_tools::secrets::all(),
            traceparent: troupe_protocol::trace_context::take_spawned(&spec.name),
        };
        let document = serde_json::to_vec(&launch).map_err(|e| err(e.to_string()))?;
        let mut child = cmd.spawn().map_err(|e| err(e.to_string()))?;
        let pid = child.id();
        lease.hand_over(pid);
        if let Ok(mut children) = self.shared().children.lock() {
            children.push((spec.name.clone(), pid));
        }
        // Written whole, then closed: the child reads it to the end before anything else.
        let sent = match child.stdin.take() {
            Some(mut stdin) => stdin.write_all(&document),
            None => Ok(()),
        };
        // The child records itself in the roster; reap it in the background so it never lingers
        // as a zombie.
        std::thread::spawn(move || {
            let mut child = child;
            let _ = child.wait();
        });
        sent.map_err(|e| {
            err(format!(
                "could not hand the teammate its configuration: {e}"
            ))
        })?;
        let name = spec.name.clone();
        self.shared()
            .store
            .update_roster(&mut |roster: &mut Roster| {
                if let Some(m) = roster.get_mut(&name) {
                    m.pid = Some(pid);
                }
            })
            .await?;
        Ok(())
    }
}
