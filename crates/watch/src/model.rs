//! What the dashboard knows of a team, as plain data read from the store, and what it
//! derives from it for display: each member's shown status (with "waiting for an answer" and
//! "gone" that the roster alone cannot say), the pending requests, the board in order.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use troupe_protocol::{
    AgentStatus, Member, Request, RequestKind, RequestStatus, Roster, Task, TaskStatus, Usage,
    UsageByModel,
};
use troupe_team::LEAD;

/// Prices tokens for a model (`None` when the model's price is unknown).
pub type Pricing = fn(model: &str, usage: &Usage) -> Option<f64>;

/// What an agent's tokens cost, each call at the model it used (`by_model`); an agent of an
/// older version that kept only its total is priced at `model`. `None` when no model it used
/// has a known price.
pub fn agent_cost(
    price: Pricing,
    model: &str,
    usage: &Usage,
    by_model: &UsageByModel,
) -> Option<f64> {
    if by_model.is_empty() {
        return price(model, usage);
    }
    by_model
        .iter()
        .filter_map(|(m, u)| price(m, u))
        .reduce(|a, b| a + b)
}

/// The model a member's tokens are priced at when it kept no per-model figures: its own, else
/// the lead's (the team's default), else none.
pub fn member_model<'a>(m: &'a Member, roster: &'a Roster) -> &'a str {
    m.model
        .as_deref()
        .or(roster.lead_usage.as_ref().map(|u| u.model.as_str()))
        .unwrap_or_default()
}

/// The team at one moment, as read from its store.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TeamState {
    /// The roster.
    pub roster: Roster,
    /// What each agent is doing now (presence), by name; the lead's too when it says.
    pub doing: BTreeMap<String, String>,
    /// Agents whose lease is held by a live process (the lead included).
    pub alive: BTreeSet<String>,
    /// Every protocol request, oldest first.
    pub requests: Vec<Request>,
    /// The board, by id.
    pub tasks: Vec<Task>,
    /// Task records that could not be read.
    pub corrupt_tasks: usize,
}

/// A member's status as the dashboard shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Shown {
    /// Running a turn.
    Working,
    /// Waiting for mail.
    Idle,
    /// Blocked on an answer to a request it opened (its plan, a permission).
    Waiting {
        /// Which protocol.
        kind: RequestKind,
        /// The request.
        id: String,
    },
    /// Ended after approving a shutdown.
    Shutdown,
    /// Force-stopped.
    Stopped,
    /// Ended by an error or a crash.
    Failed,
    /// The roster says working or idle, but no live process holds its lease.
    Gone(AgentStatus),
    /// The lead, with a live process.
    LeadLive,
    /// The lead, with no live process (the team is not running).
    LeadAbsent,
}

impl Shown {
    /// The word shown in the status column.
    pub fn label(&self) -> String {
        match self {
            Shown::Working => "working".into(),
            Shown::Idle => "idle".into(),
            Shown::Waiting { kind, .. } => format!("waiting ({kind})"),
            Shown::Shutdown => "shutdown".into(),
            Shown::Stopped => "stopped".into(),
            Shown::Failed => "failed".into(),
            Shown::Gone(was) => format!("gone (was {was})"),
            Shown::LeadLive => "live".into(),
            Shown::LeadAbsent => "not running".into(),
        }
    }
}

/// One row of the roster pane.
#[derive(Debug, Clone, PartialEq)]
pub struct MemberRow {
    /// Agent name.
    pub name: String,
    /// Role given at spawn ("lead" for the lead).
    pub role: String,
    /// Status as shown.
    pub shown: Shown,
    /// The current tool call, summarised.
    pub doing: Option<String>,
    /// Its in-progress tasks ("#3 write parser").
    pub task: Option<String>,
    /// Its worktree, or its task's.
    pub worktree: Option<String>,
    /// Tokens used; `None` when not recorded (a lead that has not answered yet).
    pub tokens: Option<u64>,
    /// Cost in dollars, when the model's price is known.
    pub cost: Option<f64>,
    /// Last sign of life (roster or event log), ms since the epoch; 0 when never.
    pub last_active: u64,
}

/// The shown status of a member: pending requests it opened make it waiting; a working or
/// idle member nobody holds the lease of is gone.
pub fn shown_status(member: &Member, state: &TeamState) -> Shown {
    match member.status {
        AgentStatus::Shutdown => return Shown::Shutdown,
        AgentStatus::Stopped => return Shown::Stopped,
        AgentStatus::Failed => return Shown::Failed,
        AgentStatus::Working | AgentStatus::Idle => {}
    }
    if !state.alive.contains(&member.name) {
        return Shown::Gone(member.status);
    }
    let waiting_on = state.requests.iter().find(|r| {
        r.status == RequestStatus::Pending
            && r.from == member.name
            && matches!(r.kind, RequestKind::Plan | RequestKind::Permission)
    });
    match (waiting_on, member.status) {
        (Some(r), _) => Shown::Waiting {
            kind: r.kind,
            id: r.id.clone(),
        },
        (None, AgentStatus::Working) => Shown::Working,
        _ => Shown::Idle,
    }
}

/// The roster pane's rows: the lead first, then every member in spawn order.
pub fn member_rows(
    state: &TeamState,
    last_event: &HashMap<String, u64>,
    pricing: Option<Pricing>,
) -> Vec<MemberRow> {
    let seen =
        |name: &str, roster_seen: u64| last_event.get(name).copied().unwrap_or(0).max(roster_seen);
    let mut rows = vec![MemberRow {
        name: LEAD.to_string(),
        role: "lead".to_string(),
        shown: if state.alive.contains(LEAD) {
            Shown::LeadLive
        } else {
            Shown::LeadAbsent
        },
        doing: state.doing.get(LEAD).cloned(),
        task: tasks_cell(&state.tasks, LEAD),
        worktree: None,
        // The lead's running total, as it publishes it after each reply.
        tokens: state.roster.lead_usage.as_ref().map(|u| u.usage.total()),
        cost: match (pricing, state.roster.lead_usage.as_ref()) {
            (Some(price), Some(u)) => agent_cost(price, &u.model, &u.usage, &u.by_model),
            _ => None,
        },
        last_active: seen(LEAD, 0),
    }];
    for m in &state.roster.members {
        let shown = shown_status(m, state);
        let doing = match shown {
            // Presence is what it does now; the roster's own field is what older versions kept.
            Shown::Working | Shown::Waiting { .. } => state
                .doing
                .get(&m.name)
                .cloned()
                .or_else(|| m.activity.clone()),
            _ => None,
        };
        let cost = pricing.and_then(|price| {
            let model = member_model(m, &state.roster);
            agent_cost(price, model, &m.usage, &m.usage_by_model)
        });
        rows.push(MemberRow {
            name: m.name.clone(),
            role: m.role.clone(),
            shown,
            doing,
            task: tasks_cell(&state.tasks, &m.name),
            worktree: m.worktree.clone().or_else(|| {
                troupe_team::board::tasks_of(&state.tasks, &m.name)
                    .iter()
                    .find_map(|t| t.worktree.clone())
            }),
            tokens: Some(m.usage.total()),
            cost,
            last_active: seen(&m.name, m.last_seen),
        });
    }
    rows
}

/// A member's in-progress tasks as one cell.
fn tasks_cell(tasks: &[Task], name: &str) -> Option<String> {
    let held = troupe_team::board::tasks_of(tasks, name);
    if held.is_empty() {
        return None;
    }
    Some(
        held.iter()
            .map(|t| format!("#{} {}", t.id, t.subject))
            .collect::<Vec<_>>()
            .join("; "),
    )
}

/// Pending requests, oldest first.
pub fn pending_requests(state: &TeamState) -> Vec<&Request> {
    let mut pending: Vec<&Request> = state
        .requests
        .iter()
        .filter(|r| r.status == RequestStatus::Pending)
        .collect();
    pending.sort_by(|a, b| (a.created_at, &a.id).cmp(&(b.created_at, &b.id)));
    pending
}

/// Where a status sorts on the board: work in progress first, then what is ready or
/// waiting, then what is over.
fn board_rank(status: TaskStatus) -> u8 {
    match status {
        TaskStatus::InProgress => 0,
        TaskStatus::Pending => 1,
        TaskStatus::Failed => 2,
        TaskStatus::Completed => 3,
        TaskStatus::Cancelled => 4,
    }
}

/// The board in display order: by status (in progress, pending, failed, completed,
/// cancelled), then by id.
pub fn board_order(state: &TeamState) -> Vec<&Task> {
    let mut tasks: Vec<&Task> = state.tasks.iter().collect();
    tasks.sort_by_key(|t| (board_rank(t.status), t.id));
    tasks
}

/// A short line for the title bar: members by shown status, pending requests, tasks.
pub fn summary(rows: &[MemberRow], pending: usize, tasks: &[Task]) -> String {
    let members = rows.len().saturating_sub(1);
    let count = |f: fn(&Shown) -> bool| rows.iter().filter(|r| f(&r.shown)).count();
    let working = count(|s| matches!(s, Shown::Working));
    let waiting = count(|s| matches!(s, Shown::Waiting { .. }));
    let idle = count(|s| matches!(s, Shown::Idle));
    let open = tasks.iter().filter(|t| !t.status.is_terminal()).count();
    format!(
        "{members} member{} · {working} working · {waiting} waiting · {idle} idle · {pending} pending request{} · {open} open task{}",
        if members == 1 { "" } else { "s" },
        if pending == 1 { "" } else { "s" },
        if open == 1 { "" } else { "s" },
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn state_with(members: &[(&str, AgentStatus)], alive: &[&str]) -> TeamState {
        let mut roster = Roster::new("t", LEAD);
        for (name, status) in members {
            let mut m = Member::new(*name, "r", 1, 1_000);
            m.status = *status;
            roster.members.push(m);
        }
        TeamState {
            roster,
            alive: alive.iter().map(|s| s.to_string()).collect(),
            ..TeamState::default()
        }
    }

    #[test]
    fn statuses_say_waiting_and_gone() {
        let mut state = state_with(
            &[
                ("ann", AgentStatus::Working),
                ("bob", AgentStatus::Idle),
                ("cy", AgentStatus::Idle),
                ("dee", AgentStatus::Failed),
            ],
            &["ann", "bob", "lead"],
        );
        let plan = Request::open(RequestKind::Plan, "bob", LEAD, 0, json!({}), 5, None);
        state.requests.push(plan.clone());
        let shown: Vec<Shown> = state
            .roster
            .members
            .iter()
            .map(|m| shown_status(m, &state))
            .collect();
        assert_eq!(
            shown,
            vec![
                Shown::Working,
                Shown::Waiting {
                    kind: RequestKind::Plan,
                    id: plan.id.clone()
                },
                Shown::Gone(AgentStatus::Idle),
                Shown::Failed,
            ]
        );
        let rows = member_rows(&state, &HashMap::new(), None);
        assert_eq!(rows[0].shown, Shown::LeadLive);
        assert_eq!(rows.len(), 5);
        assert_eq!(
            summary(&rows, 1, &[]),
            "4 members · 1 working · 1 waiting · 0 idle · 1 pending request · 0 open tasks"
        );
    }
}
