use proptest::prelude::*;

use super::*;

fn task(id: TaskId, blocked_by: Vec<TaskId>) -> Task {
    Task::new(id, format!("task {id}"), "", blocked_by, "lead", 1).unwrap_or_else(|e| panic!("{e}"))
}

fn done(ids: &[TaskId]) -> BlockerStatus {
    ids.iter().map(|&i| (i, TaskStatus::Completed)).collect()
}

#[test]
fn happy_path_claim_then_complete() {
    let mut t = task(1, vec![]);
    assert!(t.is_ready(&BlockerStatus::new()));
    t.claim("alice", &BlockerStatus::new(), 5)
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(t.status, TaskStatus::InProgress);
    assert_eq!(t.owner.as_deref(), Some("alice"));
    t.complete("alice", "shipped", 9)
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(t.status, TaskStatus::Completed);
    assert_eq!(t.result.as_deref(), Some("shipped"));
    assert_eq!(t.history.len(), 2);
    assert_eq!(t.updated_at, 9);
}

#[test]
fn claim_errors_name_the_owner_or_the_blockers() {
    let mut t = task(3, vec![1, 2]);
    let err = t
        .claim("bob", &done(&[1]), 5)
        .err()
        .unwrap_or_else(|| panic!("blocked claim succeeded"));
    assert_eq!(
        err,
        TaskError::Blocked {
            id: 3,
            waiting_on: vec![2]
        }
    );
    assert!(err.to_string().contains("task(s) 2"), "{err}");
    t.claim("alice", &done(&[1, 2]), 6)
        .unwrap_or_else(|e| panic!("{e}"));
    let err = t
        .claim("bob", &done(&[1, 2]), 7)
        .err()
        .unwrap_or_else(|| panic!("double claim succeeded"));
    assert!(err.to_string().contains("owned by alice"), "{err}");
    assert_eq!(t.owner.as_deref(), Some("alice"));
}

#[test]
fn only_owner_or_lead_finishes() {
    let mut t = task(1, vec![]);
    t.claim("alice", &BlockerStatus::new(), 1)
        .unwrap_or_else(|e| panic!("{e}"));
    let err = t
        .complete("bob", "mine", 2)
        .err()
        .unwrap_or_else(|| panic!("bob completed alice's task"));
    assert!(matches!(err, TaskError::NotOwner { .. }), "{err}");
    t.fail(TASK_LEAD, "abandoned", 3)
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(t.status, TaskStatus::Failed);
    assert!(matches!(
        t.cancel(TASK_LEAD, None, 4),
        Err(TaskError::Terminal { .. })
    ));
}

#[test]
fn release_clears_owner_with_note() {
    let mut t = task(1, vec![]);
    t.claim("user:ann", &BlockerStatus::new(), 1)
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(t.owned_by_person());
    t.release(SYSTEM_ACTOR, "ann's session ended", 2)
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(t.status, TaskStatus::Pending);
    assert_eq!(t.owner, None);
    let last = t.history.last().cloned();
    assert_eq!(
        last.and_then(|h| h.note),
        Some("ann's session ended".into())
    );
    assert!(matches!(
        t.release("ann", "again", 3),
        Err(TaskError::NotInProgress { .. })
    ));
}

#[test]
fn empty_subject_refused_and_serde_round_trip() {
    assert_eq!(
        Task::new(1, "  ", "", vec![], "lead", 0),
        Err(TaskError::EmptySubject)
    );
    let t = task(4, vec![2, 1, 2]);
    assert_eq!(t.blocked_by, vec![1, 2]);
    let text = serde_json::to_string(&t).unwrap_or_default();
    assert!(text.contains("\"status\":\"pending\""), "{text}");
    let back: Task = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(back, t);
}

#[test]
fn dependencies_unknown_and_cycles() {
    assert_eq!(
        check_dependencies(&[task(1, vec![]), task(2, vec![1])]),
        Ok(())
    );
    assert_eq!(
        check_dependencies(&[task(1, vec![9])]),
        Err(TaskError::UnknownBlocker {
            task: 1,
            blocker: 9
        })
    );
    let err = check_dependencies(&[task(1, vec![3]), task(2, vec![1]), task(3, vec![2])])
        .err()
        .unwrap_or_else(|| panic!("cycle accepted"));
    assert_eq!(
        err,
        TaskError::Cycle {
            cycle: vec![1, 3, 2, 1]
        }
    );
    assert!(
        err.to_string()
            .contains("task 1 is blocked by task 3 is blocked by task 2"),
        "{err}"
    );
    assert_eq!(
        check_dependencies(&[task(5, vec![5])]),
        Err(TaskError::Cycle { cycle: vec![5, 5] })
    );
    // A diamond is not a cycle.
    let diamond = [
        task(1, vec![]),
        task(2, vec![1]),
        task(3, vec![1]),
        task(4, vec![2, 3]),
    ];
    assert_eq!(check_dependencies(&diamond), Ok(()));
}

#[derive(Debug, Clone)]
enum Op {
    Claim(usize, bool),
    Complete(usize),
    Fail(usize),
    Release(usize),
    Cancel(usize),
    Describe,
}

const ACTORS: [&str; 4] = ["alice", "bob", TASK_LEAD, SYSTEM_ACTOR];

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        (0..4usize, any::<bool>()).prop_map(|(a, ready)| Op::Claim(a, ready)),
        (0..4usize).prop_map(Op::Complete),
        (0..4usize).prop_map(Op::Fail),
        (0..4usize).prop_map(Op::Release),
        (0..4usize).prop_map(Op::Cancel),
        Just(Op::Describe),
    ]
}

proptest! {
    #[test]
    fn fsm_invariants_hold(ops in prop::collection::vec(op(), 0..40)) {
        let mut t = task(2, vec![1]);
        let mut frozen: Option<Task> = None;
        for (i, op) in ops.into_iter().enumerate() {
            let now = 10 + i as u64;
            let before = t.clone();
            let outcome = match op {
                Op::Claim(a, ready) => {
                    let b = if ready { done(&[1]) } else { BlockerStatus::new() };
                    t.claim(ACTORS[a], &b, now)
                }
                Op::Complete(a) => t.complete(ACTORS[a], "r", now),
                Op::Fail(a) => t.fail(ACTORS[a], "r", now),
                Op::Release(a) => t.release(ACTORS[a], "why", now),
                Op::Cancel(a) => t.cancel(ACTORS[a], None, now),
                Op::Describe => t.set_description("d", now),
            };
            // A refused change leaves the task exactly as it was.
            if outcome.is_err() {
                prop_assert_eq!(&t, &before);
            }
            // Terminal never changes.
            if let Some(f) = &frozen {
                prop_assert_eq!(&t, f);
            } else if t.status.is_terminal() {
                frozen = Some(t.clone());
            }
            // A claimed task always has an owner; a pending one never does.
            match t.status {
                TaskStatus::InProgress => prop_assert!(t.owner.is_some()),
                TaskStatus::Pending => prop_assert!(t.owner.is_none()),
                _ => {}
            }
            // The history is a chain ending at the current status.
            let mut at = TaskStatus::Pending;
            for h in &t.history {
                prop_assert_eq!(h.from, at);
                at = h.to;
            }
            prop_assert_eq!(at, t.status);
        }
    }
}
