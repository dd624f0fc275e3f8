//! The board's pure rules: readiness, who claims, who counts as about to work, the prompt.

use super::*;
use troupe_protocol::TaskTransition;

fn task(id: u64, status: TaskStatus, owner: Option<&str>, blocked_by: Vec<u64>) -> Task {
    let mut t = Task::new(id, format!("task {id}"), "", blocked_by, "lead", 1)
        .unwrap_or_else(|e| panic!("{e}"));
    t.status = status;
    t.owner = owner.map(str::to_string);
    if status == TaskStatus::InProgress {
        t.history.push(TaskTransition {
            from: TaskStatus::Pending,
            to: TaskStatus::InProgress,
            by: owner.unwrap_or_default().to_string(),
            at: 100,
            note: None,
        });
    }
    t
}

fn member(name: &str, status: AgentStatus, last_seen: u64) -> Member {
    let mut m = Member::new(name, "coder", 1, last_seen);
    m.status = status;
    m
}

#[test]
fn ready_means_pending_unowned_and_unblocked() {
    let tasks = vec![
        task(1, TaskStatus::Completed, Some("a"), vec![]),
        task(2, TaskStatus::Pending, None, vec![1]),
        task(3, TaskStatus::Pending, None, vec![4]),
        task(4, TaskStatus::InProgress, Some("user:sam"), vec![]),
    ];
    let ids: Vec<u64> = ready(&tasks).iter().map(|t| t.id).collect();
    assert_eq!(ids, vec![2]);
    assert!(holds_task(&tasks, "user:sam"));
    assert!(!holds_task(&tasks, "a"));
}

#[test]
fn only_live_teammates_that_did_not_opt_out_claim_work() {
    let mut alice = member("alice", AgentStatus::Idle, 1);
    assert!(claims_work(&alice));
    alice.auto_claim = false;
    assert!(!claims_work(&alice));
    assert!(!claims_work(&member("lead", AgentStatus::Idle, 1)));
    assert!(!claims_work(&member("bob", AgentStatus::Shutdown, 1)));
    // A teammate in plan mode takes work only once its plan is approved.
    let mut planner = member("pat", AgentStatus::Idle, 1);
    planner.require_plan = true;
    assert!(!claims_work(&planner));
    planner.plan_approved = true;
    assert!(claims_work(&planner));
}

#[test]
fn settle_counts_idle_claimers_that_are_about_to_work() {
    let mut roster = Roster::new("t", "lead");
    roster.members.push(member("idle", AgentStatus::Idle, 50));
    let mut optout = member("optout", AgentStatus::Idle, 50);
    optout.auto_claim = false;
    roster.members.push(optout);
    // A ready task: the idle claimer is about to take it; the one that opted out is not.
    let ready_board = vec![task(1, TaskStatus::Pending, None, vec![])];
    assert_eq!(claimers_with_work(&roster, &ready_board), vec!["idle"]);
    // Nothing ready: settled.
    let blocked = vec![
        task(1, TaskStatus::Pending, None, vec![2]),
        task(2, TaskStatus::InProgress, Some("user:sam"), vec![]),
    ];
    assert!(claimers_with_work(&roster, &blocked).is_empty());
    // Claimed (at 100) after it went idle (50): its work phase is starting.
    let claimed = vec![task(1, TaskStatus::InProgress, Some("idle"), vec![])];
    assert_eq!(claimers_with_work(&roster, &claimed), vec!["idle"]);
    // Idle since after the claim, still holding it (it ended a phase without completing):
    // settled, and it is given nothing more while it holds one.
    roster.members[0].last_seen = 200;
    let mut held = claimed.clone();
    held.push(task(2, TaskStatus::Pending, None, vec![]));
    assert!(claimers_with_work(&roster, &held).is_empty());
}

#[test]
fn the_work_prompt_states_the_task_and_how_to_finish_it() {
    let mut t = task(7, TaskStatus::InProgress, Some("alice"), vec![]);
    t.description = "parse the config file".into();
    let p = work_prompt(&t);
    assert!(p.contains("task 7") && p.contains("Subject: task 7"), "{p}");
    assert!(p.contains("parse the config file"), "{p}");
    assert!(p.contains("complete_task{id: 7, result}"), "{p}");
}

#[test]
fn a_status_change_names_its_board_change() {
    assert_eq!(Change::to_status(TaskStatus::Completed), Change::Completed);
    assert_eq!(Change::to_status(TaskStatus::Pending), Change::Released);
    assert_eq!(Change::to_status(TaskStatus::InProgress), Change::Claimed);
}
