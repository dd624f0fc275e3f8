//! The team: its store, its running members, spawning (in this process or as a child
//! process), mail between members, and status bookkeeping.

use crate::error::TeamError;
use crate::member;
use crate::notice::NoticeSink;
use crate::spec::{Isolation, MemberSpec};
pub use crate::spec::{SpawnRequest, TeamConfig, TeammateMode, LEAD};
use crate::worktree::Worktrees;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use troupe_agent::transcript::now_ms;
use troupe_protocol::{validate_agent_name, Envelope, EventKind, MailKind, Member, Roster};
use troupe_store::{Lease, LeaseState, SharedStore, StoreError};

use crate::liveness;
use crate::shared::Running;
pub use crate::shared::{members_list, one_line, TeamShared};

/// How long a spawn waits for an ended member of this process to let go of its lease.
const ENDING_GRACE: Duration = Duration::from_secs(5);

/// A handle to a team; cheap to clone.
#[derive(Clone)]
pub struct Team {
    shared: Arc<TeamShared>,
}

impl Team {
    /// Runs a team on `store` (opened by the caller, e.g. `troupe_store::file::open`) and
    /// makes sure the roster names the lead.
    pub async fn open(
        config: TeamConfig,
        store: SharedStore,
        notices: NoticeSink,
    ) -> Result<Team, TeamError> {
        let team_name = config.team.clone();
        store
            .update_roster(&mut |roster: &mut Roster| {
                if roster.team.is_empty() {
                    roster.team = team_name.clone();
                }
                if roster.lead.is_empty() {
                    roster.lead = LEAD.to_string();
                }
            })
            .await?;
        let writer = crate::store_writer::StoreWriter::start(store.clone());
        Ok(Team {
            shared: Arc::new(TeamShared {
                config,
                writer,
                store,
                running: Mutex::new(HashMap::new()),
                tasks: Mutex::new(crate::shared::Tasks::default()),
                wakes: Mutex::new(HashMap::new()),
                doing: Mutex::new(HashMap::new()),
                live_usage: Mutex::new(HashMap::new()),
                entered: Mutex::new(HashMap::new()),
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
    pub async fn roster(&self) -> Result<Roster, TeamError> {
        Ok(self.shared.roster_view().await?)
    }

    /// Spawns a teammate: validates the name, takes its lease (no live process may hold it),
    /// records it (a new epoch if the name had ended), and starts its loop. Must be called
    /// inside a tokio runtime.
    pub async fn spawn(&self, req: SpawnRequest) -> Result<Member, TeamError> {
        validate_agent_name(&req.name).map_err(|e| TeamError::InvalidName {
            name: req.name.clone(),
            reason: e.to_string(),
        })?;
        if req.name == LEAD {
            return Err(TeamError::NameTaken(req.name));
        }
        let profile = crate::profile::checked(&self.shared.config, req.profile.clone())?;
        // The definition's model, unless the spawn names one.
        let model = req
            .model
            .clone()
            .or_else(|| {
                let agent = profile.agent.as_deref()?;
                self.shared.config.agents.get(agent)?.model.clone()
            })
            // The full id on the roster, as the member's calls send it.
            .map(|name| {
                let run = self.shared.config.recipe.model();
                run.named(&name, &troupe_tools::child_env::var)
            });
        // The lease before the roster: from the moment the member is on it, something alive
        // holds its lease (this process, or the child it is handed to).
        let lease = match self.take_lease(&req.name).await {
            Ok(lease) => lease,
            Err(e @ StoreError::LeaseHeld { .. }) => {
                let live = self
                    .shared
                    .store
                    .member(&req.name)
                    .await?
                    .is_some_and(|m| !m.status.is_ended());
                return Err(if live {
                    TeamError::NameTaken(req.name)
                } else {
                    e.into()
                });
            }
            Err(e) => return Err(e.into()),
        };
        let worktree = self.own_worktree(&req).await?;
        let now = now_ms();
        let joined = self
            .shared
            .store
            .join_member(&req.name, &mut |existing: Option<&Member>| {
                let epoch = match existing {
                    Some(m) if !m.status.is_ended() => return None,
                    Some(m) => m.epoch + 1,
                    None => 1,
                };
                let mut m = Member::new(req.name.clone(), req.role.clone(), epoch, now);
                m.model = model.clone();
                m.require_plan = req.require_plan;
                m.worktree = worktree.clone();
                m.auto_claim = req.auto_claim;
                m.profile = profile.clone();
                Some(m)
            })
            .await?;
        let Some(member) = joined else {
            return Err(TeamError::NameTaken(req.name));
        };
        self.shared
            .record(
                EventKind::MemberSpawned,
                Some(&member.name),
                format!("spawned as {} (epoch {})", member.role, member.epoch),
            )
            .await;
        if member.epoch > 1 {
            // Whatever an earlier incarnation left in progress is no one's now.
            let why = format!(
                "its owner {} had ended (a new {} was spawned)",
                member.name, member.name
            );
            log_release(liveness::release_tasks_of(&*self.shared, &member.name, &why).await);
        }
        let spec = MemberSpec {
            name: member.name.clone(),
            role: member.role.clone(),
            epoch: member.epoch,
            prompt: Some(req.prompt),
            model,
            worktree,
            auto_claim: member.auto_claim,
            profile,
        };
        // Its first turn continues the trace of the turn that spawned it (in this process).
        if let Some(tp) = troupe_protocol::trace_context::current(LEAD) {
            troupe_protocol::trace_context::spawn(&member.name, &tp);
        }
        self.start(spec, lease).await?;
        Ok(member)
    }

    /// The worktree a teammate spawned with `isolation: "worktree"` works in for its whole life
    /// (named after it; made now, or the one an earlier incarnation left). A workspace that
    /// cannot have one refuses the spawn: isolation is never silently dropped.
    async fn own_worktree(&self, req: &SpawnRequest) -> Result<Option<String>, TeamError> {
        if req.isolation == Isolation::Shared {
            return Ok(None);
        }
        let live = self
            .shared
            .store
            .member(&req.name)
            .await?
            .is_some_and(|m| !m.status.is_ended());
        if live {
            return Err(TeamError::NameTaken(req.name.clone()));
        }
        let config = &self.shared.config;
        let manager = Worktrees::new(
            &config.workspace,
            &config.troupe_dir,
            self.shared.store.as_ref(),
        );
        let record =
            manager
                .ensure_member(&req.name, LEAD)
                .await
                .map_err(|e| TeamError::Spawn {
                    name: req.name.clone(),
                    reason: format!("it asked for a worktree of its own: {e}"),
                })?;
        Ok(Some(record.name))
    }

    /// Restarts members that were working or idle when the lead last ran (`--continue`),
    /// from their transcripts, with their unread mail intact; a member some live process
    /// still runs (it holds its lease) is left to it. Returns their names.
    pub async fn resume_members(&self) -> Result<Vec<String>, TeamError> {
        let roster = self.roster().await?;
        let mut resumed = Vec::new();
        for m in roster.members.iter().filter(|m| !m.status.is_ended()) {
            if self.is_running(&m.name) {
                continue;
            }
            // Taking the lease is the liveness check, with no gap between asking and acting.
            let lease = match self.shared.store.acquire_lease(&m.name).await {
                Ok(lease) => lease,
                Err(StoreError::LeaseHeld { .. }) => continue, // its own process still runs
                Err(e) => return Err(e.into()),
            };
            let why = format!(
                "its owner {}'s process had ended (it is resumed afresh)",
                m.name
            );
            log_release(liveness::release_tasks_of(&*self.shared, &m.name, &why).await);
            let spec = MemberSpec {
                name: m.name.clone(),
                role: m.role.clone(),
                epoch: m.epoch,
                prompt: None,
                model: m.model.clone(),
                worktree: m.worktree.clone(),
                auto_claim: m.auto_claim,
                profile: m.profile.clone(),
            };
            self.start(spec, lease).await?;
            resumed.push(m.name.clone());
        }
        Ok(resumed)
    }

    /// Takes `name`'s lease for a spawn. A member of this process that has just ended (failed,
    /// shut down) still holds it for a moment after its end is told — its task gives its tasks
    /// back, then lets go — so a respawn prompted by that news waits for it, briefly, instead
    /// of being refused. Any other holder is refused at once. Runs on the blocking pool.
    async fn take_lease(&self, name: &str) -> Result<Lease, StoreError> {
        let deadline = std::time::Instant::now() + ENDING_GRACE;
        loop {
            match self.shared.store.acquire_lease(name).await {
                Err(StoreError::LeaseHeld {
                    holder: Some(holder),
                    ..
                }) if holder.pid == std::process::id()
                    && holder.is_on_this_host()
                    && std::time::Instant::now() < deadline
                    && self.ending_here(name).await =>
                {
                    tokio::time::sleep(Duration::from_millis(5)).await;
                }
                other => return other,
            }
        }
    }

    /// Whether `name` is a member of this process whose end is recorded while its task is
    /// still finishing.
    async fn ending_here(&self, name: &str) -> bool {
        self.shared
            .store
            .member(name)
            .await
            .ok()
            .flatten()
            .is_some_and(|m| m.status.is_ended())
    }

    /// Starts a member that holds `lease`: in this process, which holds the lease until the
    /// member's task ends, or in a child process the lease is handed to.
    async fn start(&self, spec: MemberSpec, lease: Lease) -> Result<(), TeamError> {
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
                tasks.set.spawn(async move {
                    let name = spec.name.clone();
                    member::supervise(shared.clone(), spec, cancel).await;
                    // Its tasks go back while the lease is still held, so nobody else finds
                    // them ownerless first and gives them back with a vaguer note.
                    async {
                        let s: &TeamShared = &shared;
                        if let Some(why) = liveness::end_note(&*s.store, &name).await {
                            log_release(liveness::release_tasks_of(s, &name, &why).await);
                        }
                    }
                    .await;
                    // Let go before the task ends, so a respawn sees the member gone.
                    lease.release().await;
                });
                Ok(())
            }
            TeammateMode::Process => self.start_process(spec, lease).await,
        }
    }

    /// Joins the team as `name` in this process (`troupe teammate`), which holds `lease`,
    /// `name`'s lease: a new member, a new epoch of an ended one, or a rejoin of a live one
    /// (same epoch, transcript and unread mail intact) — holding the lease proves no other
    /// process of it is alive. Tasks an earlier process of `name` left in progress go back to
    /// the board. Returns what to run.
    pub async fn join(
        &self,
        lease: &Lease,
        name: &str,
        role: Option<&str>,
        prompt: Option<String>,
        model: Option<String>,
    ) -> Result<MemberSpec, TeamError> {
        validate_agent_name(name).map_err(|e| TeamError::InvalidName {
            name: name.to_string(),
            reason: e.to_string(),
        })?;
        if lease.agent() != name {
            return Err(TeamError::Spawn {
                name: name.to_string(),
                reason: format!("this process holds the lease of '{}'", lease.agent()),
            });
        }
        let me = std::process::id();
        let now = now_ms();
        // Whatever an earlier process of this name held in progress is no one's now. Given back
        // before this process shows on the roster, so nothing claimed for it is taken away.
        // (This process holds the name's lease: no other process of the name is alive.)
        let fresh = self
            .shared
            .store
            .member(name)
            .await?
            .is_none_or(|m| m.status.is_ended());
        let why = if fresh {
            format!("its owner {name} had ended (a new {name} joined)")
        } else {
            format!("its owner {name}'s previous process ended ({name} rejoined as pid {me})")
        };
        log_release(liveness::release_tasks_of(&*self.shared, name, &why).await);
        let mut outcome: Option<(MemberSpec, bool)> = None;
        self.shared
            .store
            .update_roster(&mut |roster: &mut Roster| {
                outcome = Some(match roster.get_mut(name) {
                    Some(m) if !m.status.is_ended() => {
                        m.pid = Some(me);
                        m.last_seen = now;
                        let spec = MemberSpec {
                            name: name.into(),
                            role: m.role.clone(),
                            epoch: m.epoch,
                            prompt: prompt.clone(),
                            model: model.clone().or(m.model.clone()),
                            worktree: m.worktree.clone(),
                            auto_claim: m.auto_claim,
                            profile: m.profile.clone(),
                        };
                        (spec, false)
                    }
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
                            worktree: None,
                            auto_claim: m.auto_claim,
                            profile: m.profile.clone(),
                        };
                        roster.members.retain(|x| x.name != name);
                        roster.members.push(m);
                        (spec, true)
                    }
                });
            })
            .await?;
        let Some((mut spec, fresh)) = outcome else {
            return Err(TeamError::NameTaken(name.to_string()));
        };
        if fresh {
            self.shared
                .record(
                    EventKind::MemberSpawned,
                    Some(name),
                    format!("joined as {} (epoch {}, pid {me})", spec.role, spec.epoch),
                )
                .await;
        } else {
            self.shared
                .record(
                    EventKind::MemberSpawned,
                    Some(name),
                    format!("rejoined (epoch {}, pid {me})", spec.epoch),
                )
                .await;
            // A rejoin continues the transcript; the first prompt is already in it.
            let has_history = self
                .shared
                .store
                .has_transcript(name)
                .await
                .unwrap_or(false);
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
    pub async fn send(
        &self,
        from: &str,
        to: &str,
        kind: MailKind,
        content: &str,
    ) -> Result<Envelope, TeamError> {
        self.shared
            .send(Envelope::new(kind, from, to, content, now_ms()))
            .await
    }

    /// Sends `content` to every live member except the sender; returns the recipients.
    pub async fn broadcast(&self, from: &str, content: &str) -> Result<Vec<String>, TeamError> {
        let roster = self.roster().await?;
        let mut sent = Vec::new();
        for name in roster.live_names().into_iter().filter(|n| n != from) {
            self.shared
                .send(Envelope::new(
                    MailKind::Broadcast,
                    from,
                    &name,
                    content,
                    now_ms(),
                ))
                .await?;
            sent.push(name);
        }
        if from != LEAD {
            self.shared
                .send(Envelope::new(
                    MailKind::Broadcast,
                    from,
                    LEAD,
                    content,
                    now_ms(),
                ))
                .await?;
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
        let children = self
            .shared
            .children
            .lock()
            .map(|c| c.clone())
            .unwrap_or_default();
        for (name, pid) in children {
            // Only a child that still holds its member's lease is that member: an exited
            // child's pid may belong to anyone by now.
            let holds = matches!(
                self.shared.store.probe_lease(&name).await,
                Ok(LeaseState::Held(Some(h))) if h.pid == pid && h.is_on_this_host()
            );
            // SIGTERM to our child, which ends at its round boundary.
            let child = i32::try_from(pid)
                .ok()
                .and_then(rustix::process::Pid::from_raw);
            if let (true, Some(child)) = (holds, child) {
                let _ = rustix::process::kill_process(child, rustix::process::Signal::TERM);
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

/// Logs a release that failed: the board keeps the tasks, and the next check of the team
/// (settle, `troupe team status`) gives them back.
fn log_release(result: Result<Vec<troupe_protocol::Task>, StoreError>) {
    if let Err(e) = result {
        tracing::warn!(error = %e, "could not give an ended member's tasks back to the board");
    }
}
