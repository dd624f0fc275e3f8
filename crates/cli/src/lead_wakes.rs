//! What wakes the lead: its team's mail (teammates' reports, scheduled prompts, protocol
//! answers, expiries) and the team's work, as the session driver asks for them.

use crate::waiting::Overdue;
use std::time::Duration;
use troupe_driver::{Cause, Readiness, Wake, Wakes};
use troupe_team::wake::WakeListener;
use troupe_team::{SettleState, Team, LEAD};

/// The lead's wakes on `team`.
pub struct LeadWakes<'t> {
    team: &'t Team,
    wake: WakeListener,
    overdue: Overdue,
}

impl<'t> LeadWakes<'t> {
    /// Binds the lead's wake socket: no wake sent after this is missed.
    pub async fn bind(team: &'t Team) -> Result<LeadWakes<'t>, String> {
        let wake = WakeListener::bind(&team.shared().store, LEAD)
            .await
            .map_err(|e| format!("lead wake socket: {e}"))?;
        Ok(LeadWakes {
            team,
            wake,
            overdue: Overdue::new(),
        })
    }
}

#[async_trait::async_trait]
impl Wakes for LeadWakes<'_> {
    async fn check(&mut self) -> Result<Readiness, String> {
        Ok(
            match self.team.settle_state().await.map_err(|e| e.to_string())? {
                SettleState::LeadHasMail => Readiness::Ready(Wake::Turn(Cause::Mail)),
                SettleState::Settled => Readiness::Quiet,
                SettleState::Busy(names) => Readiness::Busy(names),
            },
        )
    }

    async fn changed(&mut self, limit: Duration) {
        let limit = limit.min(self.overdue.interval());
        self.team.wait_for_change(&mut self.wake, limit).await
    }

    async fn notes(&mut self) -> Vec<String> {
        self.overdue.check(self.team.shared().store.as_ref()).await
    }
}
