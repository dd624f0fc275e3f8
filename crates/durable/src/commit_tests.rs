//! The batcher: every writer told once, one sync per file and batch, order kept.

use std::io::Write;
use std::sync::Arc;

use super::*;

fn temp_files(dir: &Path, n: usize) -> Vec<PathBuf> {
    (0..n)
        .map(|i| {
            let path = dir.join(format!("f{i}"));
            File::create(&path).unwrap_or_else(|e| panic!("{e}"));
            path
        })
        .collect()
}

fn leaked() -> &'static Committer {
    Box::leak(Box::new(Committer::new()))
}

/// Nothing handed over that is not durable yet.
fn idle(committer: &Committer) -> bool {
    lock(&committer.files)
        .as_ref()
        .is_none_or(std::collections::HashMap::is_empty)
}

#[test]
fn many_concurrent_writers_are_each_told_written_once_their_write_is_covered() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let files = Arc::new(temp_files(dir.path(), 4));
    let committer = leaked();
    let threads: Vec<_> = (0..16)
        .map(|t| {
            let files = files.clone();
            std::thread::spawn(move || {
                for i in 0..40 {
                    let path = &files[(t + i) % files.len()];
                    let mut file = std::fs::OpenOptions::new()
                        .append(true)
                        .open(path)
                        .unwrap_or_else(|e| panic!("{e}"));
                    file.write_all(format!("{t} {i}\n").as_bytes())
                        .unwrap_or_else(|e| panic!("{e}"));
                    let ticket = committer.submit(file, path, SyncKind::Data);
                    let seq = ticket.pending.as_ref().map_or(0, |p| p.seq);
                    let key = ticket.pending.as_ref().map(|p| p.key);
                    assert!(ticket.wait().is_ok());
                    // Told only once a sync covering it returned.
                    let files = lock(&committer.files);
                    let durable = files
                        .as_ref()
                        .and_then(|m| key.and_then(|k| m.get(&k)))
                        .map_or(u64::MAX, |s| s.durable);
                    assert!(durable >= seq, "told written before its sync");
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap_or_else(|_| panic!("writer panicked"));
    }
    assert!(idle(committer), "every write is durable and forgotten");
    assert!(committer.syncs() <= 16 * 40);
    let lines: usize = files
        .iter()
        .map(|p| {
            std::fs::read_to_string(p)
                .unwrap_or_default()
                .lines()
                .count()
        })
        .sum();
    assert_eq!(lines, 16 * 40);
}

#[test]
fn writes_handed_over_before_a_sync_share_it() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let paths = temp_files(dir.path(), 2);
    let committer = leaked();
    let open = |p: &PathBuf| File::open(p).unwrap_or_else(|e| panic!("{e}"));
    let a1 = committer.submit(open(&paths[0]), &paths[0], SyncKind::Data);
    let b = committer.submit(open(&paths[1]), &paths[1], SyncKind::Data);
    let a2 = committer.submit(open(&paths[0]), &paths[0], SyncKind::Data);
    let a3 = committer.submit(open(&paths[0]), &paths[0], SyncKind::Data);
    assert!(a1.wait().is_ok());
    assert_eq!(
        committer.syncs(),
        1,
        "one sync covered all three writes of the file"
    );
    assert!(a2.wait().is_ok() && a3.wait().is_ok());
    assert_eq!(committer.syncs(), 1);
    assert!(b.wait().is_ok());
    assert_eq!(committer.syncs(), 2);
    // A directory's sync is its own (fsync, not fdatasync).
    let d = committer.submit(open(&paths[0]), &paths[0], SyncKind::All);
    assert!(d.wait().is_ok());
    assert_eq!(committer.syncs(), 3);
    assert!(idle(committer));
}

#[test]
fn a_ticket_dropped_unwaited_leaves_nobody_waiting() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let paths = temp_files(dir.path(), 1);
    let committer = leaked();
    let open = |p: &PathBuf| File::open(p).unwrap_or_else(|e| panic!("{e}"));
    drop(committer.submit(open(&paths[0]), &paths[0], SyncKind::Data));
    let second = committer.submit(open(&paths[0]), &paths[0], SyncKind::Data);
    assert!(second.wait().is_ok());
    assert!(
        idle(committer),
        "the later sync covered the dropped write too"
    );
}

#[test]
fn a_failed_sync_is_reported_to_its_waiter() {
    let ticket = Ticket {
        path: PathBuf::from("x"),
        pending: None,
        ready: Some(Err(io::Error::other("disk on fire"))),
    };
    let err = ticket
        .wait()
        .map(|()| String::new())
        .unwrap_or_else(|e| e.to_string());
    assert!(
        err.contains("disk on fire") && err.contains("fsync"),
        "{err}"
    );
}

#[test]
fn writes_handed_over_while_a_sync_runs_share_the_next_one() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let paths = Arc::new(temp_files(dir.path(), 1));
    let committer = leaked();
    let open = |p: &PathBuf| File::open(p).unwrap_or_else(|e| panic!("{e}"));
    let first = committer.submit(open(&paths[0]), &paths[0], SyncKind::Data);
    let (key, seq) = first
        .pending
        .as_ref()
        .map(|p| (p.key, p.seq))
        .unwrap_or_else(|| panic!("the write is pending"));
    // A sync covering the first write is running (its thread is this test).
    if let Some(syncs) = lock(&committer.files)
        .as_mut()
        .and_then(|m| m.get_mut(&key))
    {
        syncs.running.push(seq);
    }
    let writers: Vec<_> = (0..4)
        .map(|_| {
            let paths = paths.clone();
            std::thread::spawn(move || {
                let file = File::open(&paths[0]).unwrap_or_else(|e| panic!("{e}"));
                committer.submit(file, &paths[0], SyncKind::Data).wait()
            })
        })
        .collect();
    // Every writer has handed its write over before the running sync ends.
    while lock(&committer.files)
        .as_ref()
        .and_then(|m| m.get(&key))
        .is_none_or(|s| s.handed < seq + 4)
    {
        std::thread::yield_now();
    }
    if let Some(syncs) = lock(&committer.files)
        .as_mut()
        .and_then(|m| m.get_mut(&key))
    {
        syncs.running.clear();
        syncs.durable = seq;
    }
    committer.ended.notify_all();
    for w in writers {
        assert!(w
            .join()
            .unwrap_or_else(|_| panic!("writer panicked"))
            .is_ok());
    }
    assert_eq!(
        committer.syncs(),
        1,
        "the four writes queued behind the running sync shared one"
    );
    assert!(first.wait().is_ok());
    assert!(idle(committer));
}
