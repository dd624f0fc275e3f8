//! `--max-budget-usd`: the lead's spending watched reply by reply. Once the run's cost passes
//! the budget the lead stops after the round's tool calls (no further turn starts), and the
//! result is Claude Code's `error_max_budget_usd`.

use crate::cost::cost_usd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use troupe_agent::AgentEvent;

/// The budget and what the lead has spent against it so far.
pub(crate) struct BudgetWatch {
    budget: Option<f64>,
    spent: f64,
    stop: Arc<AtomicBool>,
}

impl BudgetWatch {
    /// Watches `budget` (none: watches nothing), counting from `spent` already, stopping the
    /// lead through `stop` (its stop flag).
    pub(crate) fn new(budget: Option<f64>, spent: f64, stop: Arc<AtomicBool>) -> BudgetWatch {
        BudgetWatch {
            budget,
            spent,
            stop,
        }
    }

    /// Counts a reply's cost; past the budget, asks the lead to stop.
    pub(crate) fn observe(&mut self, event: &AgentEvent<'_>) {
        let (Some(budget), AgentEvent::Reply { usage, model, .. }) = (self.budget, event) else {
            return;
        };
        self.spent += cost_usd(model, usage);
        if self.spent > budget {
            self.stop.store(true, Ordering::SeqCst);
        }
    }
}
