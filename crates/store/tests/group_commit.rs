//! Group commit under a crash: a child process writes mail, events and roster members from
//! several threads through one durable store, reporting on a pipe each id the store said was
//! written; it is SIGKILLed mid-stream. Every reported id must be in the store afterwards (a
//! crash loses at most what no caller was told was written), and the logs stay readable.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code may panic on a broken fixture

use std::collections::HashSet;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};

use troupe_protocol::{Envelope, Event, EventKind, MailKind, Member};
use troupe_store::file::FileStore;
use troupe_store::{Durability, EventCursor, EventLog, MailboxStore, RosterStore};

/// Set in the child: the directory of the store it writes to.
const CHILD_ENV: &str = "TROUPE_GROUP_COMMIT_CHILD";
const THREADS: usize = 6;
/// Runs `f` to completion on a runtime of this thread's own.
fn block_on<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(f)
}

/// Ids the parent waits for before it kills the child.
const KILL_AFTER: usize = 300;

/// The child: writes until killed, printing `<kind> <id>` once the store returned.
fn child(dir: &Path) -> ! {
    let store = FileStore::open_with(dir, "team", Durability::Fsync).unwrap();
    let out = Arc::new(Mutex::new(std::io::stdout()));
    let threads: Vec<_> = (0..THREADS)
        .map(|t| {
            let store = store.clone();
            let out = out.clone();
            std::thread::spawn(move || {
                block_on(async move {
                    for i in 0.. {
                        let line = match i % 3 {
                            0 => {
                                let env = Envelope::new(MailKind::Message, "lead", "bob", "x", 1);
                                store.append(&env).await.unwrap();
                                format!("mail {}", env.id)
                            }
                            1 => {
                                let id = format!("e{t}-{i}");
                                store
                                    .record(&Event::new(EventKind::TeamSettled, None, &id, 1))
                                    .await
                                    .unwrap();
                                format!("event {id}")
                            }
                            _ => {
                                let name = format!("m{t}-{i}");
                                store
                                    .update_roster(&mut |r| {
                                        r.members.push(Member::new(&name, "r", 1, 1));
                                    })
                                    .await
                                    .unwrap();
                                format!("member {name}")
                            }
                        };
                        let mut out = out.lock().unwrap();
                        writeln!(out, "{line}").unwrap();
                        out.flush().unwrap();
                    }
                })
            })
        })
        .collect();
    for t in threads {
        let _ = t.join();
    }
    std::process::exit(0)
}

#[tokio::test]
async fn a_crash_loses_only_writes_no_caller_was_told_about() {
    if let Ok(dir) = std::env::var(CHILD_ENV) {
        child(Path::new(&dir));
    }
    let dir = tempfile::tempdir().unwrap();
    let mut proc = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "a_crash_loses_only_writes_no_caller_was_told_about",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_ENV, dir.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut reported = Vec::new();
    let mut lines = BufReader::new(proc.stdout.take().unwrap()).lines();
    for line in lines.by_ref() {
        let line = line.unwrap();
        if let Some((kind, id)) = line.split_once(' ') {
            if ["mail", "event", "member"].contains(&kind) {
                reported.push((kind.to_string(), id.to_string()));
            }
        }
        if reported.len() >= KILL_AFTER {
            proc.kill().unwrap(); // SIGKILL, mid-write for some threads
            break;
        }
    }
    // What the child reported before it died is in the pipe still.
    for line in lines.map_while(Result::ok) {
        if let Some((kind, id)) = line.split_once(' ') {
            reported.push((kind.to_string(), id.to_string()));
        }
    }
    let _ = proc.wait();
    assert!(reported.len() >= KILL_AFTER);

    let store = FileStore::open_with(dir.path(), "team", Durability::Fsync).unwrap();
    let mail: HashSet<String> = store
        .peek("bob")
        .await
        .unwrap()
        .messages
        .into_iter()
        .map(|e| e.id)
        .collect();
    let events: HashSet<String> = store
        .read_events(EventCursor::START)
        .await
        .unwrap()
        .events
        .into_iter()
        .map(|e| e.detail)
        .collect();
    let roster = store.roster().await.unwrap();
    for (kind, id) in &reported {
        let found = match kind.as_str() {
            "mail" => mail.contains(id),
            "event" => events.contains(id),
            _ => roster.get(id).is_some(),
        };
        assert!(found, "{kind} {id} was reported written but is gone");
    }
    // The store still takes writes after the crash (a torn roster record is cut off).
    store
        .update_roster(&mut |r| r.members.push(Member::new("after", "r", 1, 1)))
        .await
        .unwrap();
    assert!(store.roster().await.unwrap().get("after").is_some());
}

#[tokio::test]
async fn concurrent_senders_to_one_mailbox_keep_each_senders_order() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let store = FileStore::open_with(dir.path(), "team", Durability::Fsync)
        .unwrap_or_else(|e| panic!("{e}"));
    let senders: Vec<_> = (0..8)
        .map(|t| {
            let store = store.clone();
            std::thread::spawn(move || {
                block_on(async move {
                    for i in 0..50 {
                        let env = Envelope::new(
                            MailKind::Message,
                            format!("s{t}"),
                            "bob",
                            format!("{t}:{i}"),
                            0,
                        );
                        store.append(&env).await.unwrap_or_else(|e| panic!("{e}"));
                    }
                })
            })
        })
        .collect();
    for s in senders {
        s.join().unwrap_or_else(|_| panic!("sender panicked"));
    }
    let batch = store.fetch("bob").await.unwrap_or_else(|e| panic!("{e}"));
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
