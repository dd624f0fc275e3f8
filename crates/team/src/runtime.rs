//! The team: its store, its running members, spawning (in this process or as a child
//! process), mail between members, and status bookkeeping.

use crate::error::TeamError;
use crate::member;
use crate::notice::NoticeSink;
use crate::spec::MemberSpec;
pub use crate::spec::{SpawnRequest, TeamConfig, TeammateMode, LEAD};
use std::collections::HashMap;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use troupe_agent::transcript::now_ms;
use troupe_protocol::{validate_agent_name, Envelope, EventKind, MailKind, Member, Roster};
use troupe_store::SharedStore;

use crate::shared::Running;
pub use crate::shared::{members_list, one_line, pid_alive, TeamShared};

/// A handle to a team; cheap to clone.
#[derive(Clone)]
pub struct Team {
    shared: Arc<TeamShared>,
}

impl Team {
    /// Runs a team on `store` (opened by the caller, e.g. `troupe_store::file::open`) and
    /// makes sure the roster names the lead.
    pub fn open(
        config: TeamConfig,
        store: SharedStore,
        notices: NoticeSink,
    ) -> Result<Team, TeamError> {
        let team_name = config.team.clone();
        store.update_roster(&mut |roster: &mut Roster| {
            if roster.team.is_empty() {
                roster.team = team_name.clone();
            }
            if roster.lead.is_empty() {
                roster.lead = LEAD.to_string();
            }
        })?;
        Ok(Team {
            shared: Arc::new(TeamShared {
                config,
                store,
                running: Mutex::new(HashMap::new()),
                tasks: Mutex::new(crate::shared::Tasks::default()),
                wakes: Mutex::new(HashMap::new()),
                doing: Mutex::new(HashMap::new()),
                children: Mutex::new(Vec::new()),
                changed: tokio::sync::Notify::new(),
                notices,
                protocols: crate::protocols::ProtocolState::default(),
            }),
        })
    }

    /// The shared state (for tools and the settle rule).
    pub fn shared(&self) -> &Arc<TeamShared> {
        &self.shared
    }

    /// The team's name.
    pub fn name(&self) -> &str {
        &self.shared.config.team
    }

    /// The current roster, with what each working member is doing now.
    pub fn roster(&self) -> Result<Roster, TeamError> {
        Ok(self.shared.roster_view()?)
    }

    /// Spawns a teammate: validates the name, records it (a new epoch if the name had ended),
    /// and starts its loop. Must be called inside a tokio runtime.
    pub fn spawn(&self, req: SpawnRequest) -> Result<Member, TeamError> {
        validate_agent_name(&req.name).map_err(|e| TeamError::InvalidName {
            name: req.name.clone(),
            reason: e.to_string(),
        })?;
        if req.name == LEAD {
            return Err(TeamError::NameTaken(req.name));
        }
        let now = now_ms();
        let mut taken = false;
        let mut member = None;
        self.shared
            .store
            .update_roster(&mut |roster: &mut Roster| {
                let epoch = match roster.get(&req.name) {
                    Some(m) if !m.status.is_ended() => {
                        taken = true;
                        return;
                    }
                    Some(m) => m.epoch + 1,
                    None => 1,
                };
                let mut m = Member::new(req.name.clone(), req.role.clone(), epoch, now);
                m.model = req.model.clone();
                m.require_plan = req.require_plan;
                roster.members.retain(|x| x.name != req.name);
                roster.members.push(m.clone());
                member = Some(m);
            })?;
        let member = match member {
            Some(m) if !taken => m,
            _ => return Err(TeamError::NameTaken(req.name)),
        };
        self.shared.record(
            EventKind::MemberSpawned,
            Some(&member.name),
            format!("spawned as {} (epoch {})", member.role, member.epoch),
        );
        let spec = MemberSpec {
            name: member.name.clone(),
            role: member.role.clone(),
            epoch: member.epoch,
            prompt: Some(req.prompt),
            model: req.model,
        };
        self.start(spec)?;
        Ok(member)
    }

    /// Restarts members that were working or idle when the lead last ran (`--continue`),
    /// from their transcripts, with their unread mail intact. Returns their names.
    pub fn resume_members(&self) -> Result<Vec<String>, TeamError> {
        let roster = self.roster()?;
        let mut resumed = Vec::new();
        for m in roster.members.iter().filter(|m| !m.status.is_ended()) {
            if self.is_running(&m.name) {
                continue;
            }
            if let Some(pid) = m.pid {
                if pid_alive(pid) {
                    continue; // its own process is still running
                }
            }
            let spec = MemberSpec {
                name: m.name.clone(),
                role: m.role.clone(),
                epoch: m.epoch,
                prompt: None,
                model: m.model.clone(),
            };
            self.start(spec)?;
            resumed.push(m.name.clone());
        }
        Ok(resumed)
    }

    fn start(&self, spec: MemberSpec) -> Result<(), TeamError> {
        match self.shared.config.mode {
            TeammateMode::InProcess => {
                let Ok(mut tasks) = self.shared.tasks.lock() else {
                    return Err(TeamError::Spawn {
                        name: spec.name,
                        reason: "the team's task list is poisoned".into(),
                    });
                };
                let cancel = tasks.cancel.child_token();
                if let Ok(mut running) = self.shared.running.lock() {
                    running.insert(spec.name.clone(), Running { epoch: spec.epoch });
                }
                let shared = self.shared.clone();
                tasks.set.spawn(member::supervise(shared, spec, cancel));
                Ok(())
            }
            TeammateMode::Process => self.start_process(spec),
        }
    }

    fn start_process(&self, spec: MemberSpec) -> Result<(), TeamError> {
        let config = &self.shared.config;
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
        let child = cmd.spawn().map_err(|e| err(e.to_string()))?;
        let pid = child.id();
        if let Ok(mut children) = self.shared.children.lock() {
            children.push(pid);
        }
        // The child records itself in the roster; reap it in the background so it never lingers
        // as a zombie.
        std::thread::spawn(move || {
            let mut child = child;
            let _ = child.wait();
        });
        let name = spec.name.clone();
        self.shared
            .store
            .update_roster(&mut |roster: &mut Roster| {
                if let Some(m) = roster.get_mut(&name) {
                    m.pid = Some(pid);
                }
            })?;
        Ok(())
    }

    /// Joins the team as `name` in this process (`troupe teammate`): a new member, a new epoch
    /// of an ended one, or a rejoin of a live one whose process is gone (same epoch, transcript
    /// and unread mail intact). Returns what to run.
    pub fn join(
        &self,
        name: &str,
        role: Option<&str>,
        prompt: Option<String>,
        model: Option<String>,
    ) -> Result<MemberSpec, TeamError> {
        validate_agent_name(name).map_err(|e| TeamError::InvalidName {
            name: name.to_string(),
            reason: e.to_string(),
        })?;
        let me = std::process::id();
        let now = now_ms();
        let mut outcome: Result<(MemberSpec, bool), TeamError> =
            Err(TeamError::NameTaken(name.to_string()));
        self.shared
            .store
            .update_roster(&mut |roster: &mut Roster| {
                outcome = match roster.get_mut(name) {
                    Some(m) if !m.status.is_ended() => match m.pid {
                        Some(pid) if pid != me && pid_alive(pid) => {
                            Err(TeamError::NameTaken(name.to_string()))
                        }
                        _ => {
                            m.pid = Some(me);
                            m.last_seen = now;
                            let spec = MemberSpec {
                                name: name.into(),
                                role: m.role.clone(),
                                epoch: m.epoch,
                                prompt: prompt.clone(),
                                model: model.clone().or(m.model.clone()),
                            };
                            Ok((spec, false))
                        }
                    },
                    previous => {
                        let epoch = previous.map(|m| m.epoch + 1).unwrap_or(1);
                        let mut m = Member::new(name, role.unwrap_or("teammate"), epoch, now);
                        m.pid = Some(me);
                        m.model = model.clone();
                        let spec = MemberSpec {
                            name: name.into(),
                            role: m.role.clone(),
                            epoch,
                            prompt: prompt.clone(),
                            model: model.clone(),
                        };
                        roster.members.retain(|x| x.name != name);
                        roster.members.push(m);
                        Ok((spec, true))
                    }
                };
            })?;
        let (mut spec, fresh) = outcome?;
        if fresh {
            self.shared.record(
                EventKind::MemberSpawned,
                Some(name),
                format!("joined as {} (epoch {}, pid {me})", spec.role, spec.epoch),
            );
        } else {
            self.shared.record(
                EventKind::MemberSpawned,
                Some(name),
                format!("rejoined (epoch {}, pid {me})", spec.epoch),
            );
            // A rejoin continues the transcript; the first prompt is already in it.
            let has_history = self.shared.store.has_transcript(name).unwrap_or(false);
            if has_history {
                spec.prompt = None;
            }
        }
        Ok(spec)
    }

    /// True when a member runs as a task in this process.
    pub fn is_running(&self, name: &str) -> bool {
        self.shared
            .running
            .lock()
            .map(|r| r.contains_key(name))
            .unwrap_or(false)
    }

    /// Sends mail from `from` to a member (or the lead); unknown names are an error listing the members.
    pub fn send(
        &self,
        from: &str,
        to: &str,
        kind: MailKind,
        content: &str,
    ) -> Result<Envelope, TeamError> {
        self.shared
            .send(Envelope::new(kind, from, to, content, now_ms()))
    }

    /// Sends `content` to every live member except the sender; returns the recipients.
    pub fn broadcast(&self, from: &str, content: &str) -> Result<Vec<String>, TeamError> {
        let roster = self.roster()?;
        let mut sent = Vec::new();
        for name in roster.live_names().into_iter().filter(|n| n != from) {
            self.shared.send(Envelope::new(
                MailKind::Broadcast,
                from,
                &name,
                content,
                now_ms(),
            ))?;
            sent.push(name);
        }
        if from != LEAD {
            self.shared.send(Envelope::new(
                MailKind::Broadcast,
                from,
                LEAD,
                content,
                now_ms(),
            ))?;
            sent.push(LEAD.to_string());
        }
        Ok(sent)
    }

    /// Ends every in-process member at its next round boundary (the tool calls in flight
    /// finish; an idle member leaves at once) and waits for them, at most `limit`; whatever
    /// is still running then is aborted. Returns the names that had to be aborted. Members
    /// stay on the roster as they were (working ones are left idle), so `--continue` starts
    /// them again. Teammate processes this lead started get SIGTERM.
    pub async fn stop_all(&self, limit: Duration) -> Vec<String> {
        let mut set = match self.shared.tasks.lock() {
            Ok(mut tasks) => {
                tasks.cancel.cancel();
                std::mem::take(&mut tasks.set)
            }
            Err(_) => tokio::task::JoinSet::new(),
        };
        if let Ok(children) = self.shared.children.lock() {
            for &pid in children.iter() {
                if let Ok(pid) = i32::try_from(pid) {
                    // SAFETY: sending a signal to a process id has no memory-safety preconditions.
                    unsafe { libc::kill(pid, libc::SIGTERM) };
                }
            }
        }
        let drained =
            tokio::time::timeout(limit, async { while set.join_next().await.is_some() {} }).await;
        if drained.is_ok() {
            return Vec::new();
        }
        let stuck: Vec<String> = self
            .shared
            .running
            .lock()
            .map(|r| r.keys().cloned().collect())
            .unwrap_or_default();
        tracing::warn!(members = ?stuck, "teammates did not finish their round in time; aborting them");
        set.abort_all();
        while set.join_next().await.is_some() {}
        stuck
    }
}
