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

#[test]
fn many_concurrent_writers_are_each_told_written_exactly_once() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let files = Arc::new(temp_files(dir.path(), 4));
    let committer = Arc::new(Committer::default());
    let threads: Vec<_> = (0..16)
        .map(|t| {
            let files = files.clone();
            let committer = committer.clone();
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
                    let TicketState::Pending(rx) = ticket.state else {
                        panic!("the commit thread should be running");
                    };
                    assert!(matches!(rx.recv(), Ok(Ok(()))));
                    // Told once: the thread answered and let go of the channel.
                    assert!(rx.recv().is_err(), "a second answer");
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap_or_else(|_| panic!("writer panicked"));
    }
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
fn a_batch_syncs_each_file_once_and_answers_every_waiter() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let paths = temp_files(dir.path(), 2);
    let mut receivers = Vec::new();
    let mut batch = Vec::new();
    for i in 0..8 {
        let (done, rx) = mpsc::sync_channel(1);
        receivers.push(rx);
        batch.push(Job {
            file: File::open(&paths[i % 2]).unwrap_or_else(|e| panic!("{e}")),
            kind: if i == 3 {
                SyncKind::All
            } else {
                SyncKind::Data
            },
            done,
        });
    }
    let groups = group(batch);
    assert_eq!(groups.len(), 2, "one sync per file");
    assert_eq!(groups[0].waiters.len(), 4);
    assert_eq!(groups[0].kind, SyncKind::Data);
    assert_eq!(
        groups[1].kind,
        SyncKind::All,
        "the strongest sync asked for"
    );
    answer(groups);
    for rx in receivers {
        assert!(matches!(rx.recv(), Ok(Ok(()))));
    }
}

#[test]
fn a_failed_sync_is_reported_to_its_waiters() {
    let groups = vec![];
    assert!(sync_groups(&groups).is_empty());
    let ticket = Ticket {
        path: PathBuf::from("x"),
        state: TicketState::Ready(Err(io::Error::other("disk on fire"))),
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
