//! The task board through `Arc<dyn TeamStore>`: create/list/get, dependency errors, a corrupt
//! record, the event log, and claims racing across threads (separate store handles, so the
//! `flock`s really contend) and across processes (this test binary re-run as children).

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::{Arc, Barrier};

use troupe_protocol::request::SYSTEM_ACTOR;
use troupe_protocol::{EventKind, TaskError, TaskStatus};
use troupe_store::{Durability, EventCursor, NewTask, SharedStore, StoreError, TaskFilter};

const CHILD_ENV: &str = "TROUPE_TASK_CHILD";
const DIR_ENV: &str = "TROUPE_TASK_DIR";
const IDS_ENV: &str = "TROUPE_TASK_IDS";

fn open(dir: &Path) -> SharedStore {
    troupe_store::file::open_with(dir, "team", Durability::Fsync).unwrap_or_else(|e| panic!("{e}"))
}

fn ok<T>(r: Result<T, StoreError>) -> T {
    r.unwrap_or_else(|e| panic!("{e}"))
}

fn new(subject: &str, blocked_by: Vec<u64>) -> NewTask {
    NewTask {
        subject: subject.to_string(),
        description: String::new(),
        blocked_by,
        created_by: "lead".to_string(),
    }
}

#[test]
fn create_list_get_and_claim_through_the_trait_object() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let store = open(dir.path());
    let a = ok(store.create_task(&new("write parser", vec![])));
    let b = ok(store.create_task(&new("write tests", vec![a.id])));
    assert_eq!((a.id, b.id), (1, 2));
    // A second handle (as another process would open it) continues the numbering.
    let other = open(dir.path());
    assert_eq!(ok(other.create_task(&new("docs", vec![]))).id, 3);
    assert!(dir.path().join("teams/team/tasks/2.json").is_file());

    assert_eq!(ok(store.get_task(2)).blocked_by, vec![1]);
    let all = ok(store.list_tasks(&TaskFilter::default()));
    assert_eq!(
        all.tasks.iter().map(|t| t.id).collect::<Vec<_>>(),
        vec![1, 2, 3]
    );
    assert!(all.corrupt.is_empty());

    // Task 2 waits on task 1: the refusal names the blocker.
    let err = store.claim_task(2, "bob", 10).err();
    assert!(
        matches!(&err, Some(StoreError::Task(TaskError::Blocked { waiting_on, .. })) if waiting_on == &vec![1]),
        "{err:?}"
    );
    ok(store.claim_task(1, "alice", 11));
    let err = store.claim_task(1, "bob", 12).err();
    assert!(
        err.as_ref()
            .is_some_and(|e| e.to_string().contains("owned by alice")),
        "{err:?}"
    );
    ok(store.update_task(1, &mut |t, _| t.complete("alice", "done", 13)));
    let claimed = ok(store.claim_task(2, "bob", 14));
    assert_eq!(claimed.owner.as_deref(), Some("bob"));

    let mine = TaskFilter {
        status: Some(TaskStatus::InProgress),
        owner: Some("bob".to_string()),
    };
    assert_eq!(ok(store.list_tasks(&mine)).tasks.len(), 1);

    // Bob ends: his task returns to the board, saying why.
    let released = ok(store.release_tasks_of("bob", SYSTEM_ACTOR, "bob stopped", 15));
    assert_eq!(released.len(), 1);
    let t = ok(store.get_task(2));
    assert_eq!((t.status, t.owner.clone()), (TaskStatus::Pending, None));
    assert_eq!(
        t.history.last().and_then(|h| h.note.clone()).as_deref(),
        Some("bob stopped")
    );

    // Every creation and transition is in the event log.
    let events = ok(store.read_events(EventCursor::START)).events;
    let count = |k: EventKind| events.iter().filter(|e| e.kind == k).count();
    assert_eq!(count(EventKind::TaskCreated), 3);
    assert_eq!(count(EventKind::TaskTransitioned), 4);
}

#[test]
fn unknown_ids_and_dependency_errors() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let store = open(dir.path());
    assert!(matches!(
        store.get_task(7),
        Err(StoreError::UnknownTask { id: 7, .. })
    ));
    assert!(matches!(
        store.claim_task(7, "bob", 1),
        Err(StoreError::UnknownTask { id: 7, .. })
    ));
    assert!(matches!(
        store.create_task(&new("x", vec![9])),
        Err(StoreError::Task(TaskError::UnknownBlocker {
            blocker: 9,
            ..
        }))
    ));
    assert!(matches!(
        store.create_task(&new(" ", vec![])),
        Err(StoreError::Task(TaskError::EmptySubject))
    ));
    // Refused creations allocate nothing visible.
    assert!(ok(store.list_tasks(&TaskFilter::default()))
        .tasks
        .is_empty());

    let one = ok(store.create_task(&new("one", vec![])));
    let two = ok(store.create_task(&new("two", vec![one.id])));
    // Making 1 wait on 2 closes a cycle; nothing is saved.
    let err = store
        .update_task(one.id, &mut |t, _| t.set_blocked_by(vec![two.id], 5))
        .err();
    assert!(
        matches!(&err, Some(StoreError::Task(TaskError::Cycle { cycle })) if cycle.len() == 3),
        "{err:?}"
    );
    assert!(ok(store.get_task(one.id)).blocked_by.is_empty());
}

#[test]
fn a_corrupt_record_is_reported_and_the_board_still_works() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let store = open(dir.path());
    ok(store.create_task(&new("good", vec![])));
    ok(store.create_task(&new("bad", vec![])));
    let bad = dir.path().join("teams/team/tasks/2.json");
    std::fs::write(&bad, b"{ not json").unwrap_or_else(|e| panic!("{e}"));

    let err = store.get_task(2).err();
    assert!(
        matches!(&err, Some(StoreError::Corrupt { path, .. }) if path == &bad),
        "{err:?}"
    );
    assert!(err.is_some_and(|e| e.to_string().contains("2.json")));
    let list = ok(store.list_tasks(&TaskFilter::default()));
    assert_eq!(list.tasks.iter().map(|t| t.id).collect::<Vec<_>>(), vec![1]);
    assert_eq!(list.corrupt.len(), 1);
    assert_eq!(list.corrupt[0].id, 2);
    // The rest of the board still works, and the corrupt id is never reused.
    ok(store.claim_task(1, "alice", 3));
    assert_eq!(ok(store.create_task(&new("next", vec![]))).id, 3);
    assert!(matches!(
        store.claim_task(2, "alice", 4),
        Err(StoreError::Corrupt { .. })
    ));
}

/// Runs `claimers` racing claims of a fresh task, each through its own handle; returns the
/// number that succeeded and checks every loser was told the winner's name.
fn thread_trial(dir: &Path, claimers: usize) -> usize {
    let id = ok(open(dir).create_task(&new("contended", vec![]))).id;
    let barrier = Arc::new(Barrier::new(claimers));
    let handles: Vec<_> = (0..claimers)
        .map(|i| {
            let store = open(dir);
            let barrier = barrier.clone();
            std::thread::spawn(move || {
                barrier.wait();
                store.claim_task(id, &format!("c{i}"), 1)
            })
        })
        .collect();
    let results: Vec<_> = handles
        .into_iter()
        .map(|h| h.join().unwrap_or_else(|_| panic!("claimer panicked")))
        .collect();
    let winner = ok(open(dir).get_task(id)).owner;
    let winner = winner.unwrap_or_else(|| panic!("task {id} has no owner"));
    for r in &results {
        if let Err(e) = r {
            assert!(e.to_string().contains(&winner), "{e}");
        }
    }
    results.iter().filter(|r| r.is_ok()).count()
}

#[test]
fn claim_race_threads_exactly_one_winner_in_200_trials() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    for trial in 0..200 {
        assert_eq!(thread_trial(dir.path(), 4), 1, "trial {trial}");
    }
}

/// What a child process does when the race test re-runs itself in this binary: announce it is
/// ready, wait for the parent's go, claim every task in order and report each outcome. Returns
/// whether this process is such a child (then the caller returns at once: the parent asserts).
fn child_mode() -> bool {
    let (Ok(name), Ok(dir)) = (std::env::var(CHILD_ENV), std::env::var(DIR_ENV)) else {
        return false;
    };
    let store = open(Path::new(&dir));
    let ids: Vec<u64> = std::env::var(IDS_ENV)
        .unwrap_or_default()
        .split(',')
        .filter_map(|s| s.parse().ok())
        .collect();
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "READY");
    let _ = out.flush();
    let mut go = String::new();
    let _ = std::io::stdin().lock().read_line(&mut go);
    for id in ids {
        let outcome = store.claim_task(id, &name, 1);
        let word = if outcome.is_ok() { "won" } else { "lost" };
        let _ = writeln!(out, "RESULT {id} {word}");
    }
    let _ = out.flush();
    true
}

#[test]
fn claim_race_processes_exactly_one_winner_per_task() {
    if child_mode() {
        return;
    }
    const PROCS: usize = 4;
    const TRIALS: usize = 200;
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let store = open(dir.path());
    // Every trial's task exists up front; the children start together and claim them in the
    // same order, so the four processes race on each task.
    let ids: Vec<String> = (0..TRIALS)
        .map(|_| {
            ok(store.create_task(&new("contended", vec![])))
                .id
                .to_string()
        })
        .collect();
    let exe = std::env::current_exe().unwrap_or_else(|e| panic!("{e}"));
    let mut children: Vec<_> = (0..PROCS)
        .map(|p| {
            Command::new(&exe)
                .args([
                    "--exact",
                    "claim_race_processes_exactly_one_winner_per_task",
                    "--nocapture",
                    "--test-threads=1",
                ])
                .env(CHILD_ENV, format!("p{p}"))
                .env(DIR_ENV, dir.path())
                .env(IDS_ENV, ids.join(","))
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::inherit())
                .spawn()
                .unwrap_or_else(|e| panic!("cannot spawn child: {e}"))
        })
        .collect();
    // Wait until every child is ready, then release them all at once.
    let mut readers = Vec::new();
    for child in &mut children {
        let stdout = child.stdout.take().unwrap_or_else(|| panic!("no stdout"));
        let mut reader = BufReader::new(stdout);
        let mut line = String::new();
        loop {
            line.clear();
            let n = reader
                .read_line(&mut line)
                .unwrap_or_else(|e| panic!("{e}"));
            assert!(n > 0, "child exited before it was ready");
            // libtest may print "test <name> ... " on the same line first.
            if line.trim_end().ends_with("READY") {
                break;
            }
        }
        readers.push(reader);
    }
    for child in &mut children {
        let mut stdin = child.stdin.take().unwrap_or_else(|| panic!("no stdin"));
        stdin.write_all(b"go\n").unwrap_or_else(|e| panic!("{e}"));
    }
    let mut wins = vec![0usize; TRIALS + 1];
    let mut reports = 0;
    for (child, reader) in children.iter_mut().zip(readers) {
        for line in reader.lines() {
            let line = line.unwrap_or_else(|e| panic!("{e}"));
            let mut parts = line.split_whitespace();
            if parts.next() != Some("RESULT") {
                continue;
            }
            let id: usize = parts
                .next()
                .and_then(|s| s.parse().ok())
                .unwrap_or_else(|| panic!("bad line {line}"));
            reports += 1;
            if parts.next() == Some("won") {
                wins[id] += 1;
            }
        }
        let status = child.wait().unwrap_or_else(|e| panic!("{e}"));
        assert!(status.success(), "child failed: {status:?}");
    }
    assert_eq!(reports, PROCS * TRIALS, "every child reported every claim");
    for (id, &won) in wins.iter().enumerate().skip(1) {
        assert_eq!(won, 1, "task {id}: {won} winners");
        let t = ok(store.get_task(id as u64));
        assert_eq!(t.status, TaskStatus::InProgress);
        assert_eq!(t.history.len(), 1, "task {id} was claimed once");
    }
}

#[test]
fn racing_blocker_edits_never_close_a_cycle() {
    // Claims lock only their task; a change of blockers also holds the board's lock, so two
    // edits that would each be fine alone, but close a cycle together, never both succeed.
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    for trial in 0..100 {
        let a = ok(open(dir.path()).create_task(&new("a", vec![]))).id;
        let b = ok(open(dir.path()).create_task(&new("b", vec![]))).id;
        let barrier = Arc::new(Barrier::new(2));
        let edits: Vec<_> = [(a, b), (b, a)]
            .into_iter()
            .map(|(task, blocker)| {
                let store = open(dir.path());
                let barrier = barrier.clone();
                std::thread::spawn(move || {
                    barrier.wait();
                    store.update_task(task, &mut |t, _| t.set_blocked_by(vec![blocker], 1))
                })
            })
            .collect();
        let results: Vec<_> = edits
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|_| panic!("editor panicked")))
            .collect();
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
