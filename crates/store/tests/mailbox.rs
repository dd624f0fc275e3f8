//! The file backend's mailbox format: byte-offset cursors, truncation of a consumed log, torn
//! lines, and the wake socket's path. What every backend must do is in the conformance suite
//! (`crates/store-nats/tests/conformance`), run on this backend too.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code may panic on a broken fixture

use std::collections::HashSet;
use std::fs::OpenOptions;
use std::io::Write;
use std::path::Path;
use std::time::Duration;

use troupe_protocol::{Envelope, EventKind, MailKind};
use troupe_store::{AckToken, Durability, EventCursor, SharedStore, StoreError};

/// The file backend as the team sees it: a trait object (the conformance tests a second
/// backend reuses go through nothing else).
fn store(dir: &Path) -> SharedStore {
    troupe_store::file::open_with(dir, "team", Durability::OsBuffered)
        .unwrap_or_else(|e| panic!("{e}"))
}

/// The token of a batch that read something.
fn token(batch: &troupe_store::Batch) -> AckToken {
    batch
        .ack
        .unwrap_or_else(|| panic!("the batch read nothing: {batch:?}"))
}

/// A file-backend ack token at a byte offset (for tests of the file format only).
fn at(offset: u64) -> AckToken {
    AckToken::from_backend(offset)
}

fn mail(to: &str, n: u64) -> Envelope {
    Envelope::new(MailKind::Message, "lead", to, format!("m{n}"), n)
}

fn contents(batch: &troupe_store::Batch) -> Vec<String> {
    batch.messages.iter().map(|m| m.content.clone()).collect()
}

fn log_path(dir: &Path, agent: &str) -> std::path::PathBuf {
    dir.join("teams/team/inbox").join(format!("{agent}.jsonl"))
}

fn ok<T>(r: Result<T, StoreError>) -> T {
    r.unwrap_or_else(|e| panic!("{e}"))
}

#[tokio::test]
async fn crashed_consumer_gets_the_same_messages_and_dedups_by_id() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let s = store(dir.path());
    for n in 0..4 {
        ok(s.append(&mail("alice", n)).await);
    }
    // A consumer fetches, "processes" two messages, and crashes before acking.
    let mut processed: HashSet<String> = HashSet::new();
    let before_crash = ok(s.fetch("alice").await);
    for m in before_crash.messages.iter().take(2) {
        processed.insert(m.id.clone());
    }
    drop(s);
    // After a restart (a fresh store handle) the whole batch comes back.
    let s = store(dir.path());
    let after = ok(s.fetch("alice").await);
    assert_eq!(after.messages, before_crash.messages);
    let new: Vec<_> = after
        .messages
        .iter()
        .filter(|m| processed.insert(m.id.clone()))
        .map(|m| m.content.clone())
        .collect();
    assert_eq!(new, ["m2", "m3"]);
    ok(s.ack("alice", token(&after)).await);

    // A crash inside a full ack, after the cursor was reset to 0 but before the log was
    // truncated, re-delivers messages already processed; the consumer skips them by id.
    for n in 4..6 {
        ok(s.append(&mail("alice", n)).await);
    }
    let b = ok(s.fetch("alice").await);
    for m in &b.messages {
        processed.insert(m.id.clone());
    }
    ok(s.ack("alice", at(first_line_end(dir.path()))).await);
    std::fs::write(dir.path().join("teams/team/inbox/alice.cursor"), "0")
        .unwrap_or_else(|e| panic!("{e}"));
    let replay = ok(s.fetch("alice").await);
    assert_eq!(replay.messages, b.messages);
    assert!(replay.messages.iter().all(|m| processed.contains(&m.id)));
}

/// Offset just after the first line of alice's log.
fn first_line_end(dir: &Path) -> u64 {
    let bytes = std::fs::read(log_path(dir, "alice")).unwrap_or_default();
    bytes
        .iter()
        .position(|b| *b == b'\n')
        .map_or(0, |i| i as u64 + 1)
}

#[tokio::test]
async fn a_message_torn_inside_a_character_is_skipped_and_later_mail_still_arrives() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let s = store(dir.path());
    ok(s.append(&mail("alice", 0)).await);
    // A writer that died mid-line, inside the two bytes of `é`.
    let mut f = OpenOptions::new()
        .append(true)
        .open(log_path(dir.path(), "alice"))
        .unwrap_or_else(|e| panic!("{e}"));
    f.write_all(b"{\"id\":\"x\",\"content\":\"caf\xc3")
        .unwrap_or_else(|e| panic!("{e}"));
    ok(s.append(&mail("alice", 1)).await);
    let batch = ok(s.fetch("alice").await);
    assert_eq!(contents(&batch), ["m0", "m1"]);
    assert_eq!(batch.corrupt.len(), 1);
    assert!(
        batch.corrupt[0].error.contains("UTF-8"),
        "{:?}",
        batch.corrupt
    );
    let events = ok(s.read_events(EventCursor::START).await).events;
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].kind, EventKind::CorruptMail);
    ok(s.ack("alice", token(&batch)).await);
    assert!(ok(s.fetch("alice").await).is_empty());
}

#[tokio::test]
async fn full_consumption_truncates_partial_ack_does_not() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let s = store(dir.path());
    let log = log_path(dir.path(), "alice");
    let len = |p: &Path| std::fs::metadata(p).map(|m| m.len()).unwrap_or(u64::MAX);
    for n in 0..3 {
        ok(s.append(&mail("alice", n)).await);
    }
    // Ack only the first message: cursor moves, log stays.
    let mid = first_line_end(dir.path());
    ok(s.ack("alice", at(mid)).await);
    let full_len = len(&log);
    assert!(full_len > mid);
    let cursor = std::fs::read_to_string(dir.path().join("teams/team/inbox/alice.cursor"))
        .unwrap_or_default();
    // Fixed width, written in place: 20 digits and a newline.
    assert_eq!(cursor, format!("{mid:020}\n"));
    let rest = ok(s.fetch("alice").await);
    assert_eq!(contents(&rest), ["m1", "m2"]);
    assert_eq!(rest.ack, Some(at(full_len)));
    // Ack the rest: log truncated, cursor back to 0.
    ok(s.ack("alice", token(&rest)).await);
    assert_eq!(len(&log), 0);
    let cursor = std::fs::read_to_string(dir.path().join("teams/team/inbox/alice.cursor"))
        .unwrap_or_default();
    assert_eq!(cursor.trim().parse::<u64>().ok(), Some(0));
    // A repeated ack of an old offset is refused rather than skipping new mail.
    ok(s.append(&mail("alice", 9)).await);
    let next = ok(s.fetch("alice").await);
    assert_eq!(contents(&next), ["m9"]);
    assert!(matches!(
        s.ack("alice", token(&rest)).await,
        Err(StoreError::BadAck { .. })
    ));
    assert_eq!(contents(&ok(s.fetch("alice").await)), ["m9"]);
}

#[tokio::test]
async fn misaligned_ack_is_refused() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let s = store(dir.path());
    ok(s.append(&mail("alice", 0)).await);
    let b = ok(s.fetch("alice").await);
    assert!(matches!(
        s.ack("alice", at(token(&b).backend_position() - 1)).await,
        Err(StoreError::BadAck { .. })
    ));
    assert!(matches!(
        s.ack("alice", at(token(&b).backend_position() + 10)).await,
        Err(StoreError::BadAck { .. })
    ));
    assert_eq!(ok(s.fetch("alice").await).messages.len(), 1);
}

#[tokio::test]
async fn cursor_past_end_reads_from_start() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let s = store(dir.path());
    ok(s.append(&mail("alice", 0)).await);
    std::fs::write(dir.path().join("teams/team/inbox/alice.cursor"), "99999")
        .unwrap_or_else(|e| panic!("{e}"));
    let b = ok(s.fetch("alice").await);
    assert_eq!(contents(&b), ["m0"]);
    ok(s.ack("alice", token(&b)).await);
    assert!(ok(s.fetch("alice").await).messages.is_empty());
}

#[tokio::test]
async fn partial_trailing_line_waits_until_complete() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let s = store(dir.path());
    ok(s.append(&mail("alice", 0)).await);
    let line = serde_json::to_string(&mail("alice", 1)).unwrap_or_default();
    let (head, tail) = line.split_at(line.len() / 2);
    let mut f = OpenOptions::new()
        .append(true)
        .open(log_path(dir.path(), "alice"))
        .unwrap_or_else(|e| panic!("{e}"));
    f.write_all(head.as_bytes())
        .unwrap_or_else(|e| panic!("{e}"));
    let b = ok(s.fetch("alice").await);
    assert_eq!(contents(&b), ["m0"]);
    assert!(b.corrupt.is_empty());
    f.write_all(format!("{tail}\n").as_bytes())
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(contents(&ok(s.fetch("alice").await)), ["m0", "m1"]);
}

/// Waits for the watch to fire; the bound only keeps a broken build from hanging the suite,
/// nothing asserts on time.
async fn wait_for_wake(watch: &mut Box<dyn troupe_store::Watch>) {
    tokio::time::timeout(Duration::from_secs(10), watch.changed())
        .await
        .unwrap_or_else(|_| panic!("no wake-up came"));
}

#[tokio::test]
async fn appending_without_watcher_is_fine() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let s = store(dir.path());
    // A socket file with nobody bound to it: the wake fails silently, the mail is stored.
    let watch = ok(s.watch("alice").await);
    drop(watch);
    ok(s.append(&mail("alice", 0)).await);
    assert_eq!(ok(s.fetch("alice").await).messages.len(), 1);
}

#[tokio::test]
async fn wake_works_when_the_socket_path_is_too_long() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let deep = dir.path().join("x".repeat(60)).join("y".repeat(60));
    let s = store(&deep);
    let mut watch = ok(s.watch("alice").await);
    // A second handle (as in another process) finds the same fallback socket.
    let other = store(&deep);
    ok(other.append(&mail("alice", 0)).await);
    wait_for_wake(&mut watch).await;
}
