//! The settle rule (docs/DESIGN.md, "Protocols"): a headless run ends when every teammate is idle
//! or ended, no request is pending, the lead's inbox is drained, and no idle auto-claiming teammate
//! has a ready task waiting for it.

use crate::liveness;
use crate::member::fail;
use crate::runtime::Team;
use crate::spec::LEAD;
use crate::wake::WakeListener;
use std::time::Duration;
use troupe_protocol::AgentStatus;

/// How long to wait between checks when nothing signals (a teammate process that died
/// without a word is noticed this way).
const FALLBACK_CHECK: Duration = Duration::from_millis(500);

/// Where the team stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SettleState {
    /// Nothing left to do.
    Settled,
    /// The lead has unread mail: run a lead turn.
    LeadHasMail,
    /// Someone is still working (names).
    Busy(Vec<String>),
}

impl Team {
    /// Checks the settle rule once. Liveness is the lease (see `liveness`): a working member
    /// that no live process holds the lease of died mid-work and is marked failed; an idle one
    /// is merely not running (left by an earlier lead, or a `troupe teammate` that was told to
    /// end) and waits, resumable, with its mail. Tasks owned by members that are not alive go
    /// back to the board.
    pub async fn settle_state(&self) -> Result<SettleState, crate::TeamError> {
        let shared = self.shared();
        // Sweeps first: an expiry may leave mail for the lead.
        let pending = crate::protocols::sweep::settle_check(shared).await?;
        let unread = shared.store.peek(LEAD).await?;
        if !unread.is_empty() {
            return Ok(SettleState::LeadHasMail);
        }
        let roster = self.roster().await?;
        let mut busy = Vec::new();
        for m in &roster.members {
            if m.status.is_ended() {
                continue;
            }
            if !shared.store.is_alive(&m.name).await? {
                if m.status == AgentStatus::Working {
                    let was = m.pid.map(|p| format!(" (pid {p})")).unwrap_or_default();
                    fail(
                        shared,
                        &m.name,
                        m.epoch,
                        &format!("its process{was} is gone: nothing holds its lease"),
                    )
                    .await;
                    let why = format!("its owner {} died", m.name);
                    liveness::release_tasks_of(&**shared, &m.name, &why).await?;
                    return Ok(SettleState::LeadHasMail);
                }
                continue; // not running: nothing it does can keep the team busy
            }
            if m.status == AgentStatus::Working {
                busy.push(m.name.clone());
            } else if !m.background.is_empty() {
                // Idle, but a background command of its runs (or just finished): it wakes then.
                busy.push(m.name.clone());
            } else if !shared.store.peek(&m.name).await?.is_empty() {
                // Idle with unread mail: it is about to wake (protocol answers land here).
                busy.push(m.name.clone());
            }
        }
        // After the members: one that died mid-work gives its tasks back with that reason.
        if !liveness::release_ghost_tasks(&**shared).await?.is_empty() {
            return Ok(SettleState::LeadHasMail);
        }
        // Idle auto-claiming teammates about to take (or start on) a ready task are busy too.
        // The board is read after the roster: a member claims first, then records it works.
        let board = shared
            .store
            .list_tasks(&troupe_store::TaskFilter::default())
            .await?;
        for name in crate::board::claimers_with_work(&roster, &board.tasks) {
            if !busy.contains(&name) {
                busy.push(name);
            }
        }
        busy.extend(pending);
        if busy.is_empty() {
            Ok(SettleState::Settled)
        } else {
            Ok(SettleState::Busy(busy))
        }
    }

    /// Waits until something may have changed: mail for the lead, a status change, or a timeout.
    pub async fn wait_for_change(&self, lead_wake: &mut WakeListener, limit: Duration) {
        let changed = self.shared().changed.notified();
        tokio::select! {
            _ = lead_wake.wait() => {}
            _ = changed => {}
            _ = tokio::time::sleep(limit.min(FALLBACK_CHECK)) => {}
        }
    }
}
