//! The batcher: every writer told once, one sync per file and batch, order kept.

use std::io::Write;
use std::sync::Arc;

use super::*;
use crate::file::FileStore;
use crate::{Durability, MailboxStore};
use troupe_protocol::{Envelope, MailKind};

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

#[test]
fn many_concurrent_writers_are_each_told_written_exactly_once() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let files = Arc::new(temp_files(dir.path(), 4));
    let committer = leaked();
    let slots = Arc::new(std::sync::Mutex::new(Vec::new()));
    let threads: Vec<_> = (0..16)
        .map(|t| {
            let files = files.clone();
            let slots = slots.clone();
            std::thread::spawn(move || {
                for i in 0..40 {
                    let path = &files[(t + i) % files.len()];
                    let mut file = std::fs::OpenOptions::new()
                        .append(true)
                        .open(path)
                        .unwrap_or_else(|e| panic!("{e}"));
                    file.write_all(format!("{t} {i}\n").as_bytes())
                        .unwrap_or_else(|e| panic!("{e}"));
                    let mut ticket = committer.submit(file, path, SyncKind::Data);
                    let Some((c, key, slot)) = ticket.pending.take() else {
                        panic!("a durable sync is queued");
                    };
                    assert!(c.wait(key, &slot).is_ok());
                    lock(&slots).push(slot);
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap_or_else(|_| panic!("writer panicked"));
    }
    // Told once: no answer arrived after the one each writer took.
    let slots = lock(&slots);
    assert_eq!(slots.len(), 16 * 40);
    for slot in slots.iter() {
        assert!(matches!(*lock(&slot.state), SlotState::Waiting));
    }
    assert!(idle(committer), "every lead was given up");
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

/// Nothing queued and nobody leading.
fn idle(committer: &Committer) -> bool {
    lock(&committer.files)
        .as_ref()
        .is_none_or(std::collections::HashMap::is_empty)
}

#[test]
fn writes_queued_behind_a_lead_share_its_one_sync() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let paths = temp_files(dir.path(), 2);
    let committer = leaked();
    let open = |p: &PathBuf| File::open(p).unwrap_or_else(|e| panic!("{e}"));
    // Three handles of one file and one of another: the first of each file leads.
    let a1 = committer.submit(open(&paths[0]), &paths[0], SyncKind::Data);
    let b = committer.submit(open(&paths[1]), &paths[1], SyncKind::Data);
    let a2 = committer.submit(open(&paths[0]), &paths[0], SyncKind::All);
    let a3 = committer.submit(open(&paths[0]), &paths[0], SyncKind::Data);
    assert!(a1.wait().is_ok());
    assert_eq!(
        committer.syncs(),
        1,
        "one sync answered all three writes of the file"
    );
    assert!(a2.wait().is_ok() && a3.wait().is_ok());
    assert_eq!(committer.syncs(), 1);
    assert!(b.wait().is_ok());
    assert_eq!(committer.syncs(), 2);
    assert!(idle(committer));
}

#[test]
fn a_ticket_dropped_unwaited_still_leads_and_nobody_is_left_waiting() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let paths = temp_files(dir.path(), 1);
    let committer = leaked();
    let open = |p: &PathBuf| File::open(p).unwrap_or_else(|e| panic!("{e}"));
    let first = committer.submit(open(&paths[0]), &paths[0], SyncKind::Data);
    let second = committer.submit(open(&paths[0]), &paths[0], SyncKind::Data);
    drop(first); // it held the lead: dropping it runs the sync
    assert!(second.wait().is_ok());
    let third = committer.submit(open(&paths[0]), &paths[0], SyncKind::Data);
    assert!(third.wait().is_ok());
    assert!(idle(committer));
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
fn concurrent_senders_to_one_mailbox_keep_each_senders_order() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let store = FileStore::open_with(dir.path(), "team", Durability::Fsync)
        .unwrap_or_else(|e| panic!("{e}"));
    let senders: Vec<_> = (0..8)
        .map(|t| {
            let store = store.clone();
            std::thread::spawn(move || {
                for i in 0..50 {
                    let env = Envelope::new(
                        MailKind::Message,
                        format!("s{t}"),
                        "bob",
                        format!("{t}:{i}"),
                        0,
                    );
                    store.append(&env).unwrap_or_else(|e| panic!("{e}"));
                }
            })
        })
        .collect();
    for s in senders {
        s.join().unwrap_or_else(|_| panic!("sender panicked"));
    }
    let batch = store.fetch("bob").unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(batch.messages.len(), 8 * 50);
    let mut next = [0usize; 8];
    for env in &batch.messages {
        let (t, i) = env.content.split_once(':').unwrap_or_default();
        let t: usize = t.parse().unwrap_or_default();
        assert_eq!(
            i.parse::<usize>().ok(),
            Some(next[t]),
            "sender {t} out of order"
        );
        next[t] += 1;
    }
}
