//! State every part of a running team shares — the store, the members running here, who to
//! tell — and the bookkeeping on it: mail with recipient checks, events, statuses.

use crate::error::TeamError;
use crate::notice::{Notice, NoticeSink};
use crate::spec::{TeamConfig, LEAD};
use std::collections::HashMap;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};
use troupe_agent::transcript::now_ms;
use troupe_protocol::{AgentStatus, Envelope, Event, EventKind, Roster};
use troupe_store::{EventLog, FileStore, MailboxStore, RosterStore};

/// A member running as a task in this process.
pub(crate) struct Running {
    pub(crate) epoch: u64,
    pub(crate) stop: Arc<AtomicBool>,
}

/// State shared by the runtime, the team tools and the members' tasks.
pub struct TeamShared {
    /// Settings.
    pub config: TeamConfig,
    /// The durable store.
    pub store: Arc<FileStore>,
    pub(crate) running: Mutex<HashMap<String, Running>>,
    /// Teammate processes started by this process.
    pub(crate) children: Mutex<Vec<u32>>,
    /// Signalled whenever a member's status changes in this process.
    pub changed: tokio::sync::Notify,
    pub(crate) notices: NoticeSink,
    /// In-memory side of the protocols (stop flags, permission wake-ups).
    pub protocols: crate::protocols::ProtocolState,
}

impl TeamShared {
    /// Delivers one envelope after checking the recipient is on the roster.
    pub fn send(&self, env: Envelope) -> Result<Envelope, TeamError> {
        deliver(&self.store, &env)?;
        self.notice(Notice::Mail {
            from: env.from.clone(),
            to: env.to.clone(),
            kind: env.kind.as_str().to_string(),
            content: env.content.clone(),
        });
        Ok(env)
    }

    /// Records an event; a failure to record is logged, not fatal.
    pub fn record(&self, kind: EventKind, agent: Option<&str>, detail: String) {
        if let Err(e) = self
            .store
            .record(&Event::new(kind, agent, detail, now_ms()))
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
    pub fn set_status(&self, name: &str, epoch: u64, status: AgentStatus, detail: &str) {
        let mut changed = false;
        let result = self.store.update_roster(&mut |roster: &mut Roster| {
            if let Some(m) = roster.get_mut(name) {
                // An ended incarnation stays ended (a force-stop must not be undone by the
                // member's own bookkeeping afterwards).
                if m.epoch == epoch && m.status != status && !m.status.is_ended() {
                    m.status = status;
                    m.last_seen = now_ms();
                    if status != AgentStatus::Working {
                        m.activity = None;
                    }
                    changed = true;
                }
            }
        });
        if let Err(e) = result {
            tracing::warn!(error = %e, member = name, "could not update the roster");
        }
        if changed {
            let text = if detail.is_empty() {
                status.as_str().to_string()
            } else {
                format!("{}: {detail}", status.as_str())
            };
            self.record(EventKind::StatusChanged, Some(name), text);
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

    /// Keeps a member's latest report in the roster.
    pub fn set_report(&self, name: &str, report: &str) {
        let result = self.store.update_roster(&mut |roster: &mut Roster| {
            if let Some(m) = roster.get_mut(name) {
                m.last_report = Some(report.to_string());
            }
        });
        if let Err(e) = result {
            tracing::warn!(error = %e, member = name, "could not update the roster");
        }
    }

    /// Updates what a member is doing and the tokens it has used.
    pub fn set_activity(
        &self,
        name: &str,
        activity: Option<String>,
        usage: Option<troupe_protocol::Usage>,
    ) {
        let result = self.store.update_roster(&mut |roster: &mut Roster| {
            if let Some(m) = roster.get_mut(name) {
                if activity.is_some() {
                    m.activity = activity.clone();
                }
                if let Some(u) = usage {
                    m.usage = u;
                }
                m.last_seen = now_ms();
            }
        });
        if let Err(e) = result {
            tracing::warn!(error = %e, member = name, "could not update the roster");
        }
    }
}

/// Appends mail to its recipient's mailbox after checking the recipient is on the roster (or
/// is the lead), and records it in the event log — the one way mail enters a team, from a
/// running team or from another terminal.
pub fn deliver(store: &FileStore, env: &Envelope) -> Result<(), TeamError> {
    if env.to != LEAD {
        let roster = store.roster()?;
        if roster.get(&env.to).is_none() {
            return Err(TeamError::UnknownRecipient {
                name: env.to.clone(),
                team: roster.team.clone(),
                members: members_list(&roster),
            });
        }
    }
    store.append(env)?;
    let detail = format!(
        "{} → {}: {}",
        env.kind.as_str(),
        env.to,
        one_line(&env.content)
    );
    if let Err(e) = store.record(&Event::new(
        EventKind::MessageSent,
        Some(&env.from),
        detail,
        now_ms(),
    )) {
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

/// True when a process with this id exists.
pub fn pid_alive(pid: u32) -> bool {
    let Ok(pid) = i32::try_from(pid) else {
        return false;
    };
    // SAFETY: kill with signal 0 performs only the existence and permission check.
    unsafe { libc::kill(pid, 0) == 0 }
}
