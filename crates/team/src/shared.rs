//! State every part of a running team shares — the store, the members running here, who to
//! tell — and the bookkeeping on it: mail with recipient checks, events, statuses.

use crate::error::TeamError;
use crate::notice::{Notice, NoticeSink};
use crate::spec::{TeamConfig, LEAD};
use crate::store_writer::StoreWriter;
use crate::wake::SharedWake;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use tokio_util::sync::CancellationToken;
use troupe_agent::transcript::now_ms;
use troupe_protocol::{AgentStatus, AgentUsage, Envelope, Event, EventKind, Roster};
use troupe_store::{SharedStore, StoreError, TeamStore};

/// A member running as a task in this process.
pub(crate) struct Running {
    pub(crate) epoch: u64,
}

/// The tasks this process runs for the team, owned so that exit can end and await them.
pub(crate) struct Tasks {
    /// Every member task (and its supervisor) spawned here.
    pub(crate) set: tokio::task::JoinSet<()>,
    /// Parent of every member's token: cancelling it ends them all.
    pub(crate) cancel: CancellationToken,
}

impl Default for Tasks {
    fn default() -> Tasks {
        Tasks {
            set: tokio::task::JoinSet::new(),
            cancel: CancellationToken::new(),
        }
    }
}

/// State shared by the runtime, the team tools and the members' tasks.
pub struct TeamShared {
    /// Settings.
    pub config: TeamConfig,
    /// The durable store.
    pub store: SharedStore,
    pub(crate) running: Mutex<HashMap<String, Running>>,
    pub(crate) tasks: Mutex<Tasks>,
    /// The wake-ups of members running here, by name (see [`SharedWake`]).
    pub(crate) wakes: Mutex<HashMap<String, SharedWake>>,
    /// What members running here are doing; the latest value is what reaches the store.
    pub(crate) doing: Mutex<HashMap<String, Option<String>>>,
    /// The running token totals of agents running here; the latest is what reaches the store.
    pub(crate) live_usage: Mutex<HashMap<String, AgentUsage>>,
    /// Teammate processes started by this process, as (member name, pid).
    pub(crate) children: Mutex<Vec<(String, u32)>>,
    /// The worktree each agent running here entered with create_worktree (its session works
    /// there until exit_worktree), by agent name.
    pub(crate) entered: Mutex<HashMap<String, String>>,
    /// Signalled whenever a member's status changes in this process.
    pub changed: tokio::sync::Notify,
    pub(crate) notices: NoticeSink,
    /// In-memory side of the protocols (stop flags, permission wake-ups).
    pub protocols: crate::protocols::ProtocolState,
    /// Writes presence, live usage and per-call events in order, off the agents' tasks.
    pub(crate) writer: StoreWriter,
}

impl TeamShared {
    /// Makes a member's wake-ups reachable by its tool calls (a permission wait).
    pub(crate) fn register_wake(&self, name: &str, wake: SharedWake) {
        if let Ok(mut wakes) = self.wakes.lock() {
            wakes.insert(name.to_string(), wake);
        }
    }

    /// Forgets a member's wake-ups when its loop ends.
    pub(crate) fn forget_wake(&self, name: &str) {
        if let Ok(mut wakes) = self.wakes.lock() {
            wakes.remove(name);
        }
    }

    /// The wake-ups of a member running here.
    pub(crate) fn wake_of(&self, name: &str) -> Option<SharedWake> {
        self.wakes.lock().ok().and_then(|w| w.get(name).cloned())
    }

    /// Drops a member's entry among the running once its task is over.
    pub(crate) fn forget_running(&self, name: &str, epoch: u64) {
        if let Ok(mut running) = self.running.lock() {
            if running.get(name).is_some_and(|r| r.epoch == epoch) {
                running.remove(name);
            }
        }
        self.changed.notify_waiters();
    }

    /// The roster with what each live member is doing now (kept out of the synced roster).
    pub async fn roster_view(&self) -> Result<Roster, StoreError> {
        roster_with_doing(&*self.store).await
    }

    /// Delivers one envelope after checking the recipient is on the roster.
    pub async fn send(&self, env: Envelope) -> Result<Envelope, TeamError> {
        deliver(&*self.store, &env).await?;
        self.notice(Notice::Mail {
            from: env.from.clone(),
            to: env.to.clone(),
            kind: env.kind.as_str().to_string(),
            content: env.content.clone(),
        });
        Ok(env)
    }

    /// Records an event; a failure to record is logged, not fatal.
    pub async fn record(&self, kind: EventKind, agent: Option<&str>, detail: String) {
        if let Err(e) = self
            .store
            .record(&Event::new(kind, agent, detail, now_ms()))
            .await
        {
            tracing::warn!(error = %e, "could not record a team event");
        }
    }

    /// Shows a notice to whoever watches.
    pub fn notice(&self, notice: Notice) {
        if let Some(sink) = &self.notices {
            sink(notice);
        }
    }

    /// Sets a member's status (and what it is doing), records the change and wakes waiters.
    pub async fn set_status(&self, name: &str, epoch: u64, status: AgentStatus, detail: &str) {
        let mut changed = false;
        let result = self
            .store
            .update_member(name, &mut |m| {
                // An ended incarnation stays ended (a force-stop must not be undone by the
                // member's own bookkeeping afterwards). The closure may be applied more than
                // once: what counts is the last application, the one written.
                changed = m.epoch == epoch && m.status != status && !m.status.is_ended();
                if changed {
                    m.status = status;
                    m.last_seen = now_ms();
                }
            })
            .await;
        if let Err(e) = result {
            tracing::warn!(error = %e, member = name, "could not update the roster");
        }
        if changed && status != AgentStatus::Working {
            self.publish_doing(name, None);
        }
        if changed {
            let text = if detail.is_empty() {
                status.as_str().to_string()
            } else {
                format!("{}: {detail}", status.as_str())
            };
            self.record(EventKind::StatusChanged, Some(name), text)
                .await;
            self.notice(Notice::Status {
                name: name.to_string(),
                status,
                detail: detail.to_string(),
            });
        }
        if status.is_ended() {
            if let Ok(mut running) = self.running.lock() {
                if running.get(name).is_some_and(|r| r.epoch == epoch) {
                    running.remove(name);
                }
            }
        }
        self.changed.notify_waiters();
    }

    /// Records the end of a member's work phase in one roster write: the tokens it used (and
    /// when it was last seen), its outstanding background commands and, when it reported, its
    /// report. As three writes, each waiting its turn on the roster lock, they were half of a
    /// teammate's roster writes.
    pub async fn record_phase(
        &self,
        name: &str,
        usage: troupe_protocol::Usage,
        by_model: &troupe_protocol::UsageByModel,
        background: Vec<troupe_protocol::BackgroundCommand>,
        report: Option<&str>,
    ) {
        let result = self
            .store
            .update_member(name, &mut |m| {
                m.usage = usage;
                m.usage_by_model.clone_from(by_model);
                m.last_seen = now_ms();
                if m.background != background {
                    m.background.clone_from(&background);
                }
                if let Some(report) = report {
                    m.last_report = Some(report.to_string());
                }
            })
            .await;
        if let Err(e) = result {
            tracing::warn!(error = %e, member = name, "could not update the roster");
        }
    }

    /// Records a member's outstanding background commands (running, or finished and not yet
    /// read), so the settle rule and `troupe team status` see them from any process.
    pub async fn set_background(
        &self,
        name: &str,
        commands: Vec<troupe_protocol::BackgroundCommand>,
    ) {
        let result = self
            .store
            .update_member(name, &mut |m| {
                if m.background != commands {
                    m.background.clone_from(&commands);
                }
            })
            .await;
        if let Err(e) = result {
            tracing::warn!(error = %e, member = name, "could not update the roster");
        }
    }

    /// Records what a member is doing now (per tool call): kept in memory and queued for the
    /// team's ordered writer ([`StoreWriter`]), never in the synced roster, so many teammates
    /// never queue on the roster lock for it and no agent waits for the store.
    pub fn set_doing(self: &Arc<Self>, name: &str, doing: Option<String>) {
        if let Ok(mut map) = self.doing.lock() {
            map.insert(name.to_string(), doing.clone());
        }
        self.writer.doing(&self.store, name, doing);
    }

    /// Records a member's tool call in the event log (`troupe team log` shows it), through the
    /// ordered writer: the append is synced, and no agent waits for it.
    pub fn record_tool_call(self: &Arc<Self>, name: &str, tool: &str, summary: &str) {
        let event = Event::new(
            EventKind::ToolCalled,
            Some(name),
            format!("{tool}({summary})"),
            now_ms(),
        )
        .with_data(serde_json::json!({"tool": tool, "summary": summary}));
        self.writer.event(&self.store, event);
    }

    /// Records an event through the ordered writer (after what was queued before it).
    pub fn record_later(&self, event: Event) {
        self.writer.event(&self.store, event);
    }

    /// Publishes an agent's running token total (after each model reply): kept in memory and
    /// queued for the ordered writer, like what it is doing, so a reply never waits for the
    /// store. The roster keeps the durable per-phase figure; the roster view shows whichever
    /// is newer.
    pub fn set_live_usage(self: &Arc<Self>, agent: &str, usage: AgentUsage) {
        if let Ok(mut map) = self.live_usage.lock() {
            map.insert(agent.to_string(), usage.clone());
        }
        self.writer.usage(&self.store, agent, usage);
    }

    /// Sets a member's doing and waits until it is written, after everything queued before
    /// (this thread blocks).
    fn publish_doing(&self, name: &str, doing: Option<String>) {
        if let Ok(mut map) = self.doing.lock() {
            map.insert(name.to_string(), doing.clone());
        }
        self.writer.doing(&self.store, name, doing);
        self.writer.flush();
    }
}

/// The roster with each live member's current doing and each agent's latest token total (from
/// the store's presence) filled in, the lead's as [`Roster::lead_usage`].
pub async fn roster_with_doing(store: &dyn TeamStore) -> Result<Roster, StoreError> {
    let mut roster = store.roster().await?;
    with_live_usage(store, &mut roster).await;
    let doing = store.doing().await.unwrap_or_default();
    for m in &mut roster.members {
        if m.status == AgentStatus::Working {
            if let Some(d) = doing.get(&m.name) {
                m.activity = Some(d.clone());
            }
        } else {
            m.activity = None;
        }
    }
    Ok(roster)
}

/// Puts the usage each agent published after its last model reply into `roster` (the roster's
/// own figure is per phase; the larger is the newer) and the lead's into `lead_usage`.
pub async fn with_live_usage(store: &dyn TeamStore, roster: &mut Roster) {
    let mut usages = store.usages().await.unwrap_or_default();
    for m in &mut roster.members {
        if let Some(live) = usages.remove(&m.name) {
            if live.usage.total() > m.usage.total() {
                m.usage = live.usage;
                m.usage_by_model = live.by_model;
            }
        }
    }
    roster.lead_usage = usages.remove(LEAD);
}

/// Appends mail to its recipient's mailbox after checking the recipient is on the roster (or
/// is the lead), and records it in the event log — the one way mail enters a team, from a
/// running team or from another terminal.
pub async fn deliver(store: &dyn TeamStore, env: &Envelope) -> Result<(), TeamError> {
    if env.to != LEAD && store.member(&env.to).await?.is_none() {
        let roster = store.roster().await?;
        return Err(TeamError::UnknownRecipient {
            name: env.to.clone(),
            team: roster.team.clone(),
            members: members_list(&roster),
        });
    }
    store.append(env).await?;
    let detail = format!(
        "{} → {}: {}",
        env.kind.as_str(),
        env.to,
        one_line(&env.content)
    );
    if let Err(e) = store
        .record(&Event::new(
            EventKind::MessageSent,
            Some(&env.from),
            detail,
            now_ms(),
        ))
        .await
    {
        tracing::warn!(error = %e, "could not record a mail event");
    }
    Ok(())
}

/// "alice (coder, idle), bob (tester, working)" — or a note that the team is empty.
pub fn members_list(roster: &Roster) -> String {
    let mut parts: Vec<String> = vec![format!("{LEAD} (lead)")];
    parts.extend(
        roster
            .members
            .iter()
            .map(|m| format!("{} ({}, {})", m.name, m.role, m.status.as_str())),
    );
    parts.join(", ")
}

/// First line of a text, cut to 120 characters, for one-line logs.
pub fn one_line(text: &str) -> String {
    let line = text.lines().next().unwrap_or("");
    if line.chars().count() > 120 {
        format!("{}…", line.chars().take(120).collect::<String>())
    } else {
        line.to_string()
    }
}
