//! The task board: create/list/get, dependency errors, a corrupt record, the event log, and
//! claims racing across threads and processes (each with its own handle, so they contend in
//! the backend itself: file locks, or compare-and-set on the server).

use std::io::Write;
use std::sync::Arc;
use tokio::sync::Barrier;

use troupe_protocol::request::SYSTEM_ACTOR;
use troupe_protocol::{EventKind, TaskError, TaskStatus};
use troupe_store::{EventCursor, NewTask, SharedStore, StoreError, TaskFilter};

use crate::backend::{ok, Backend, Fixture};
use crate::both;
use crate::children::spawn;
use crate::mailbox::read_until;

fn new(subject: &str, blocked_by: Vec<u64>) -> NewTask {
    NewTask {
        subject: subject.to_string(),
        description: String::new(),
        blocked_by,
        created_by: "lead".to_string(),
    }
}

both!(
    create_list_get_and_claim_through_the_trait_object,
    unknown_ids_and_dependency_errors,
    a_corrupt_record_is_reported_and_the_board_still_works,
    claim_race_threads_exactly_one_winner_in_200_trials,
    claim_race_processes_exactly_one_winner_per_task,
    racing_blocker_edits_never_close_a_cycle,
    a_blocker_edit_stalled_past_the_lock_never_overlaps_the_next,
    concurrent_creators_on_many_handles_get_distinct_ids,
);

/// 6 handles (as 6 processes) × 5 tasks created at once: 30 tasks, ids 1..=30, none twice,
/// every one on the board.
async fn concurrent_creators_on_many_handles_get_distinct_ids(b: Backend) {
    let f = std::sync::Arc::new(Fixture::new(b).await);
    let threads: Vec<_> = (0..6)
        .map(|i| {
            let f = f.clone();
            tokio::spawn(async move {
                let s = f.open().await;
                let mut ids = Vec::new();
                for j in 0..5 {
                    ids.push(ok(s.create_task(&new(&format!("t{i}-{j}"), vec![])).await).id);
                }
                ids
            })
        })
        .collect();
    let mut ids: Vec<_> = Vec::new();
    for t in threads {
        ids.extend(t.await.unwrap());
    }
    ids.sort_unstable();
    assert_eq!(ids, (1..=30).collect::<Vec<_>>());
    assert_eq!(
        ok(f.store.list_tasks(&TaskFilter::default()).await)
            .tasks
            .len(),
        30
    );
}

async fn create_list_get_and_claim_through_the_trait_object(b: Backend) {
    let f = Fixture::new(b).await;
    let store = &f.store;
    let a = ok(store.create_task(&new("write parser", vec![])).await);
    let b2 = ok(store.create_task(&new("write tests", vec![a.id])).await);
    assert_eq!((a.id, b2.id), (1, 2));
    // A second handle (as another process would open it) continues the numbering.
    let other = f.open().await;
    assert_eq!(ok(other.create_task(&new("docs", vec![])).await).id, 3);

    assert_eq!(ok(store.get_task(2).await).blocked_by, vec![1]);
    let all = ok(store.list_tasks(&TaskFilter::default()).await);
    assert_eq!(
        all.tasks.iter().map(|t| t.id).collect::<Vec<_>>(),
        vec![1, 2, 3]
    );
    assert!(all.corrupt.is_empty());

    // Task 2 waits on task 1: the refusal names the blocker.
    let err = store.claim_task(2, "bob", 10).await.err();
    assert!(
        matches!(&err, Some(StoreError::Task(TaskError::Blocked { waiting_on, .. })) if waiting_on == &vec![1]),
        "{err:?}"
    );
    ok(store.claim_task(1, "alice", 11).await);
    let err = store.claim_task(1, "bob", 12).await.err();
    assert!(
        err.as_ref()
            .is_some_and(|e| e.to_string().contains("owned by alice")),
        "{err:?}"
    );
    ok(store
        .update_task(1, &mut |t, _| t.complete("alice", "done", 13))
        .await);
    let claimed = ok(store.claim_task(2, "bob", 14).await);
    assert_eq!(claimed.owner.as_deref(), Some("bob"));

    let mine = TaskFilter {
        status: Some(TaskStatus::InProgress),
        owner: Some("bob".to_string()),
    };
    assert_eq!(ok(store.list_tasks(&mine).await).tasks.len(), 1);

    // Bob ends: his task returns to the board, saying why.
    let released = ok(store
        .release_tasks_of("bob", SYSTEM_ACTOR, "bob stopped", 15)
        .await);
    assert_eq!(released.len(), 1);
    let t = ok(store.get_task(2).await);
    assert_eq!((t.status, t.owner.clone()), (TaskStatus::Pending, None));
    assert_eq!(
        t.history.last().and_then(|h| h.note.clone()).as_deref(),
        Some("bob stopped")
    );

    // Every creation and transition is in the event log.
    let events = ok(store.read_events(EventCursor::START).await).events;
    let count = |k: EventKind| events.iter().filter(|e| e.kind == k).count();
    assert_eq!(count(EventKind::TaskCreated), 3);
    assert_eq!(count(EventKind::TaskTransitioned), 4);
}

async fn unknown_ids_and_dependency_errors(b: Backend) {
    let f = Fixture::new(b).await;
    let store = &f.store;
    assert!(matches!(
        store.get_task(7).await,
        Err(StoreError::UnknownTask { id: 7, .. })
    ));
    assert!(matches!(
        store.claim_task(7, "bob", 1).await,
        Err(StoreError::UnknownTask { id: 7, .. })
    ));
    assert!(matches!(
        store.create_task(&new("x", vec![9])).await,
        Err(StoreError::Task(TaskError::UnknownBlocker {
            blocker: 9,
            ..
        }))
    ));
    assert!(matches!(
        store.create_task(&new(" ", vec![])).await,
        Err(StoreError::Task(TaskError::EmptySubject))
    ));
    // Refused creations leave nothing on the board.
    assert!(ok(store.list_tasks(&TaskFilter::default()).await)
        .tasks
        .is_empty());

    let one = ok(store.create_task(&new("one", vec![])).await);
    let two = ok(store.create_task(&new("two", vec![one.id])).await);
    // Making 1 wait on 2 closes a cycle; nothing is saved.
    let err = store
        .update_task(one.id, &mut |t, _| t.set_blocked_by(vec![two.id], 5))
        .await
        .err();
    assert!(
        matches!(&err, Some(StoreError::Task(TaskError::Cycle { cycle })) if cycle.len() == 3),
        "{err:?}"
    );
    assert!(ok(store.get_task(one.id).await).blocked_by.is_empty());
    // A blocker change that is fine is saved and recorded as an edit.
    let three = ok(store.create_task(&new("three", vec![])).await);
    let t = ok(store
        .update_task(three.id, &mut |t, _| t.set_blocked_by(vec![one.id], 6))
        .await);
    assert_eq!(t.blocked_by, vec![one.id]);
    let edits = ok(store.read_events(EventCursor::START).await)
        .events
        .iter()
        .filter(|e| e.kind == EventKind::TaskEdited)
        .count();
    assert_eq!(edits, 1);
}

async fn a_corrupt_record_is_reported_and_the_board_still_works(b: Backend) {
    let f = Fixture::new(b).await;
    let store = &f.store;
    ok(store.create_task(&new("good", vec![])).await);
    ok(store.create_task(&new("bad", vec![])).await);
    f.raw_record("task:2", b"{ not json");

    let err = store.get_task(2).await.err();
    assert!(matches!(&err, Some(StoreError::Corrupt { .. })), "{err:?}");
    assert!(err.is_some_and(|e| e.to_string().contains('2')));
    let list = ok(store.list_tasks(&TaskFilter::default()).await);
    assert_eq!(list.tasks.iter().map(|t| t.id).collect::<Vec<_>>(), vec![1]);
    assert_eq!(list.corrupt.len(), 1);
    assert_eq!(list.corrupt[0].id, 2);
    // The rest of the board still works, and the corrupt id is never reused.
    ok(store.claim_task(1, "alice", 3).await);
    assert_eq!(ok(store.create_task(&new("next", vec![])).await).id, 3);
    assert!(matches!(
        store.claim_task(2, "alice", 4).await,
        Err(StoreError::Corrupt { .. })
    ));
}

/// Runs racing claims of a fresh task, one per handle; returns how many succeeded and checks
/// every loser was told the winner's name.
async fn thread_trial(creator: &SharedStore, handles: &[SharedStore]) -> usize {
    let id = ok(creator.create_task(&new("contended", vec![])).await).id;
    let barrier = Arc::new(Barrier::new(handles.len()));
    let threads: Vec<_> = handles
        .iter()
        .enumerate()
        .map(|(i, store)| {
            let (store, barrier) = (store.clone(), barrier.clone());
            tokio::spawn(async move {
                barrier.wait().await;
                store.claim_task(id, &format!("c{i}"), 1).await
            })
        })
        .collect();
    let mut results = Vec::new();
    for h in threads {
        results.push(h.await.unwrap());
    }
    let winner = ok(creator.get_task(id).await).owner;
    let winner = winner.unwrap_or_else(|| panic!("task {id} has no owner"));
    for r in &results {
        if let Err(e) = r {
            assert!(e.to_string().contains(&winner), "{e}");
        }
    }
    results.iter().filter(|r| r.is_ok()).count()
}

async fn claim_race_threads_exactly_one_winner_in_200_trials(b: Backend) {
    let f = Fixture::new(b).await;
    let mut handles = Vec::new();
    for _ in 0..4 {
        handles.push(f.open().await);
    }
    for trial in 0..200 {
        assert_eq!(thread_trial(&f.store, &handles).await, 1, "trial {trial}");
    }
}

async fn claim_race_processes_exactly_one_winner_per_task(b: Backend) {
    const PROCS: usize = 4;
    const TRIALS: u64 = 200;
    let f = Fixture::new(b).await;
    // Every trial's task exists up front; the children start together and claim them in the
    // same order, so the four processes race on each task.
    for _ in 0..TRIALS {
        ok(f.store.create_task(&new("contended", vec![])).await);
    }
    let mut children: Vec<_> = (0..PROCS)
        .map(|p| spawn(&format!("claimer:p{p}:1:{TRIALS}"), &f.spec()))
        .collect();
    for child in &mut children {
        read_until(child, "READY");
    }
    for child in &mut children {
        child.stdin.take().unwrap().write_all(b"go\n").unwrap();
    }
    let mut wins = vec![0usize; TRIALS as usize + 1];
    for child in &mut children {
        let won = read_until(child, "WON");
        for id in won.split(',').filter(|s| !s.is_empty()) {
            wins[id.parse::<usize>().unwrap()] += 1;
        }
        assert!(child.wait().unwrap().success());
    }
    for (id, &won) in wins.iter().enumerate().skip(1) {
        assert_eq!(won, 1, "task {id}: {won} winners");
        let t = ok(f.store.get_task(id as u64).await);
        assert_eq!(t.status, TaskStatus::InProgress);
        assert_eq!(t.history.len(), 1, "task {id} was claimed once");
    }
}

async fn racing_blocker_edits_never_close_a_cycle(b: Backend) {
    // A change of blockers holds the whole board still, so two edits that would each be fine
    // alone, but close a cycle together, never both succeed.
    let f = Fixture::new(b).await;
    let handles = [f.open().await, f.open().await];
    for trial in 0..100 {
        let a = ok(f.store.create_task(&new("a", vec![])).await).id;
        let b2 = ok(f.store.create_task(&new("b", vec![])).await).id;
        let barrier = Arc::new(Barrier::new(2));
        let edits: Vec<_> = [(a, b2), (b2, a)]
            .into_iter()
            .zip(handles.iter())
            .map(|((task, blocker), store)| {
                let (store, barrier) = (store.clone(), barrier.clone());
                tokio::spawn(async move {
                    barrier.wait().await;
                    store
                        .update_task(task, &mut |t, _| t.set_blocked_by(vec![blocker], 1))
                        .await
                })
            })
            .collect();
        let mut results = Vec::new();
        for h in edits {
            results.push(h.await.unwrap());
        }
        let done = results.iter().filter(|r| r.is_ok()).count();
        assert_eq!(done, 1, "trial {trial}: {results:?}");
        assert!(
            results
                .iter()
                .any(|r| matches!(r, Err(StoreError::Task(TaskError::Cycle { .. })))),
            "trial {trial}: {results:?}"
        );
    }
}

/// A writer that stalls while it holds the board lock, longer than the lock lives (a paused VM,
/// a stopped process): on the file store its lock holds (the kernel's), so the other writer
/// waits; on a server its lock lapses and the other writer goes ahead, and the stalled one is
/// fenced out at its write (the lock's epoch moved on) and starts over. Either way the two
/// edits, which close a cycle together, never both land.
async fn a_blocker_edit_stalled_past_the_lock_never_overlaps_the_next(b: Backend) {
    let f = Fixture::new(b).await;
    let a = ok(f.store.create_task(&new("a", vec![])).await).id;
    let b2 = ok(f.store.create_task(&new("b", vec![])).await).id;
    // The call of the closure made under the lock: the server store calls it once without the
    // lock first (a blocker change then takes the lock and starts over).
    let locked_call = match b {
        Backend::File => 1,
        Backend::Nats | Backend::Cluster => 2,
    };
    let stall = f.lease_lapse() * 2 + std::time::Duration::from_secs(1);
    let (stalling_tx, stalling) = std::sync::mpsc::channel();
    let slow = {
        let store = f.open().await;
        tokio::spawn(async move {
            let mut calls = 0;
            store
                .update_task(a, &mut |t, _| {
                    calls += 1;
                    if calls == locked_call {
                        let _ = stalling_tx.send(());
                        std::thread::sleep(stall);
                    }
                    t.set_blocked_by(vec![b2], 1)
                })
                .await
        })
    };
    stalling.recv().unwrap();
    let fast = f
        .open()
        .await
        .update_task(b2, &mut |t, _| t.set_blocked_by(vec![a], 2))
        .await;
    let slow = slow.await.unwrap();
    let results = [&slow, &fast];
    assert_eq!(
        results.iter().filter(|r| r.is_ok()).count(),
        1,
        "{results:?}"
    );
    assert!(
        results
            .iter()
            .any(|r| matches!(r, Err(StoreError::Task(TaskError::Cycle { .. })))),
        "{results:?}"
    );
    let (ta, tb) = (
        ok(f.store.get_task(a).await),
        ok(f.store.get_task(b2).await),
    );
    assert!(
        ta.blocked_by.is_empty() || tb.blocked_by.is_empty(),
        "a cycle formed: {ta:?} {tb:?}"
    );
}
