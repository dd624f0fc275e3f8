//! Mail: at-least-once delivery with acks after persistence, redelivery to a restarted
//! consumer, corrupt entries skipped and reported, several writer processes, wake-ups.

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use troupe_protocol::{Envelope, EventKind, MailKind};
use troupe_store::{AckToken, Batch, EventCursor, StoreError, Watch};

use crate::backend::{ok, Backend, Fixture};
use crate::both;
use crate::children::{spawn, PER_WRITER};

fn token(batch: &Batch) -> AckToken {
    batch
        .ack
        .unwrap_or_else(|| panic!("the batch read nothing: {batch:?}"))
}

fn mail(to: &str, n: u64) -> Envelope {
    Envelope::new(MailKind::Message, "lead", to, format!("m{n}"), n)
}

fn contents(batch: &Batch) -> Vec<String> {
    batch.messages.iter().map(|m| m.content.clone()).collect()
}

both!(
    fetch_without_ack_redelivers_and_ack_consumes,
    a_restarted_consumer_gets_what_it_never_acked,
    peek_shows_unacked_mail_and_consumes_nothing,
    corrupt_mail_is_skipped_reported_and_acked_past,
    append_many_keeps_each_recipients_order,
    unsafe_recipient_names_are_refused,
    append_and_notify_wake_the_watcher,
    a_wake_from_another_handle_reaches_the_watcher,
    four_writer_processes_lose_and_duplicate_nothing,
    a_consumer_killed_between_fetch_and_ack_gets_the_same_messages,
    async_fetch_and_ack_hold_no_thread_and_deliver_as_the_sync_ones,
);

/// `fetch_async`/`ack_async` (the agent loop's, every round) deliver and consume as `fetch` and
/// `ack` do, and neither holds the thread it is awaited on where it waits on something: a task
/// beside the operation runs while it is still under way. (A synchronous call made inside the
/// first poll is always done by then; an async one is done by then only when the machine
/// happened to finish it first, so of ten tries at least one must see it under way.) The file
/// backend's `fetch` reads a cursor and a log without a lock, in place like its `peek`
/// (decision 0034): only NATS's, a round trip to the server, is held to being under way.
async fn async_fetch_and_ack_hold_no_thread_and_deliver_as_the_sync_ones(b: Backend) {
    use std::sync::atomic::{AtomicBool, Ordering};
    const TRIES: u64 = 10;
    let f = Fixture::new(b).await;
    let s = f.store.clone();
    // The mailbox taken over first (a first fetch in a process recreates its NATS consumer).
    assert!(ok(s.fetch("alice").await).is_empty());
    async move {
        // Whether a task beside `op` ran before `op` was done.
        async fn beside<T>(op: impl std::future::Future<Output = T>) -> (T, bool) {
            let done = AtomicBool::new(false);
            tokio::join!(
                async {
                    let out = op.await;
                    done.store(true, Ordering::SeqCst);
                    out
                },
                async { !done.load(Ordering::SeqCst) }
            )
        }
        let (mut fetches_under_way, mut acks_under_way) = (0, 0);
        for n in 0..TRIES {
            ok(s.append(&mail("alice", n)).await);
            let (batch, under_way) = beside(s.fetch("alice")).await;
            let batch = ok(batch);
            fetches_under_way += u32::from(under_way);
            assert_eq!(contents(&batch), [format!("m{n}")]);
            // Unacked: the same message again.
            let again = ok(s.fetch("alice").await);
            assert_eq!(again.messages, batch.messages);
            let (acked, under_way) = beside(s.ack("alice", token(&again))).await;
            ok(acked);
            acks_under_way += u32::from(under_way);
            assert!(ok(s.fetch("alice").await).is_empty());
        }
        if b != Backend::File {
            assert!(
                fetches_under_way > 0,
                "fetch_async held the thread every time"
            );
        }
        assert!(acks_under_way > 0, "ack_async held the thread every time");
    }
    .await;
    // Consumed for every handle, not only in this one's memory.
    assert!(ok(f.open().await.peek("alice").await).is_empty());
}

async fn fetch_without_ack_redelivers_and_ack_consumes(b: Backend) {
    let f = Fixture::new(b).await;
    let s = &f.store;
    for n in 0..3 {
        ok(s.append(&mail("alice", n)).await);
    }
    let first = ok(s.fetch("alice").await);
    assert_eq!(contents(&first), ["m0", "m1", "m2"]);
    // No ack: the same messages come again (at-least-once).
    let again = ok(s.fetch("alice").await);
    assert_eq!(again.messages, first.messages);
    // Mail that came after the fetch is not consumed by acking the earlier batch.
    ok(s.append(&mail("alice", 3)).await);
    ok(s.ack("alice", token(&first)).await);
    // A repeated ack is harmless.
    ok(s.ack("alice", token(&first)).await);
    let last = ok(s.fetch("alice").await);
    assert_eq!(contents(&last), ["m3"]);
    ok(s.ack("alice", token(&last)).await);
    assert!(ok(s.fetch("alice").await).is_empty());
    // Other agents' mailboxes are separate.
    assert!(ok(s.fetch("bob").await).messages.is_empty());
}

async fn a_restarted_consumer_gets_what_it_never_acked(b: Backend) {
    let f = Fixture::new(b).await;
    for n in 0..4 {
        ok(f.store.append(&mail("alice", n)).await);
    }
    // A consumer fetches, "processes" two messages, and crashes before acking.
    let mut processed: HashSet<String> = HashSet::new();
    let before_crash = ok(f.store.fetch("alice").await);
    for m in before_crash.messages.iter().take(2) {
        processed.insert(m.id.clone());
    }
    // After a restart (a fresh handle, as a new process) the whole batch comes back.
    let s = f.open().await;
    let after = ok(s.fetch("alice").await);
    assert_eq!(after.messages, before_crash.messages);
    let new: Vec<_> = after
        .messages
        .iter()
        .filter(|m| processed.insert(m.id.clone()))
        .map(|m| m.content.clone())
        .collect();
    assert_eq!(new, ["m2", "m3"], "the consumer skips what it had by id");
    ok(s.ack("alice", token(&after)).await);
    assert!(ok(s.fetch("alice").await).is_empty());
    assert!(ok(f.open().await.peek("alice").await).is_empty());
}

async fn peek_shows_unacked_mail_and_consumes_nothing(b: Backend) {
    let f = Fixture::new(b).await;
    let s = &f.store;
    assert!(ok(s.peek("alice").await).is_empty());
    ok(s.append(&mail("alice", 0)).await);
    ok(s.append(&mail("alice", 1)).await);
    let other = f.open().await;
    assert_eq!(contents(&ok(other.peek("alice").await)), ["m0", "m1"]);
    let batch = ok(s.fetch("alice").await);
    // Fetched but not acked is still unread.
    assert_eq!(contents(&ok(other.peek("alice").await)), ["m0", "m1"]);
    ok(s.ack("alice", token(&batch)).await);
    assert!(ok(other.peek("alice").await).is_empty());
}

async fn corrupt_mail_is_skipped_reported_and_acked_past(b: Backend) {
    let f = Fixture::new(b).await;
    let s = &f.store;
    for n in 0..3 {
        ok(s.append(&mail("alice", n)).await);
    }
    f.raw_mail("alice", b"{\"id\": not json at all");
    // A writer that died inside the two bytes of `\xc3\xa9`.
    f.raw_mail("alice", b"{\"id\":\"x\",\"content\":\"caf\xc3");
    for n in 3..6 {
        ok(s.append(&mail("alice", n)).await);
    }
    // peek reports but records nothing.
    let peeked = ok(s.peek("alice").await);
    assert_eq!(peeked.corrupt.len(), 2);
    assert!(ok(s.read_events(EventCursor::START).await)
        .events
        .is_empty());

    let batch = ok(s.fetch("alice").await);
    assert_eq!(contents(&batch), ["m0", "m1", "m2", "m3", "m4", "m5"]);
    assert_eq!(batch.corrupt.len(), 2);
    assert!(batch.corrupt[0].text.contains("not json"));
    assert!(
        batch.corrupt[1].error.contains("UTF-8"),
        "{:?}",
        batch.corrupt
    );
    let events = ok(s.read_events(EventCursor::START).await).events;
    assert_eq!(events.len(), 2);
    assert!(events.iter().all(|e| e.kind == EventKind::CorruptMail));
    assert_eq!(events[0].agent.as_deref(), Some("alice"));
    assert_eq!(events[0].data["offset"], batch.corrupt[0].offset);
    // Acking the batch consumes the corrupt entries too.
    ok(s.ack("alice", token(&batch)).await);
    assert!(ok(s.fetch("alice").await).is_empty());
}

async fn append_many_keeps_each_recipients_order(b: Backend) {
    let f = Fixture::new(b).await;
    let s = &f.store;
    let batch: Vec<_> = (0..6)
        .map(|n| mail(if n % 2 == 0 { "alice" } else { "bob" }, n))
        .collect();
    ok(s.append_many(&batch).await);
    assert_eq!(contents(&ok(s.fetch("alice").await)), ["m0", "m2", "m4"]);
    assert_eq!(contents(&ok(s.fetch("bob").await)), ["m1", "m3", "m5"]);
}

async fn unsafe_recipient_names_are_refused(b: Backend) {
    let f = Fixture::new(b).await;
    for bad in ["../x", "Alice", "", "a.b", "a*"] {
        assert!(
            matches!(
                f.store.append(&mail(bad, 0)).await,
                Err(StoreError::BadName { what: "agent", .. })
            ),
            "{bad:?}"
        );
    }
}

/// Waits for the watch to fire; the bound only keeps a broken build from hanging the suite,
/// nothing asserts on time.
async fn wait_for_wake(watch: &mut Box<dyn Watch>) {
    tokio::time::timeout(Duration::from_secs(10), watch.changed())
        .await
        .unwrap_or_else(|_| panic!("no wake-up came"));
}

async fn append_and_notify_wake_the_watcher(b: Backend) {
    let f = Fixture::new(b).await;
    let s = f.store.clone();
    async move {
        let mut watch = ok(s.watch("alice").await);
        ok(s.append(&mail("alice", 0)).await);
        wait_for_wake(&mut watch).await;
        ok(s.notify("alice").await);
        wait_for_wake(&mut watch).await;
        // Several appends while nobody waits coalesce into one wake, and none is lost.
        ok(s.append(&mail("alice", 1)).await);
        ok(s.append(&mail("alice", 2)).await);
        wait_for_wake(&mut watch).await;
        // Watching again replaces the stale watcher.
        drop(watch);
        let mut watch = ok(s.watch("alice").await);
        ok(s.append(&mail("alice", 3)).await);
        wait_for_wake(&mut watch).await;
        assert_eq!(ok(s.fetch("alice").await).messages.len(), 4);
        // A wake for alice's own mail may come late: in a cluster a sender asks again for a
        // moment while no server knows of a watcher, and the stale watcher's going made that
        // moment for the wakes of m1 and m2. Let such late wakes pass first.
        while tokio::time::timeout(Duration::from_millis(700), watch.changed())
            .await
            .is_ok()
        {}
        // Mail to someone else wakes nobody here (a wake may be spurious; this one has
        // nothing to report, so the store must not produce it).
        ok(s.append(&mail("bob", 9)).await);
        let quiet = tokio::time::timeout(Duration::from_millis(300), watch.changed()).await;
        assert!(quiet.is_err(), "bob's mail woke alice");
    }
    .await;
}

async fn a_wake_from_another_handle_reaches_the_watcher(b: Backend) {
    let f = Fixture::new(b).await;
    let s = f.store.clone();
    let other = f.open().await;
    async move {
        let mut watch = ok(s.watch("alice").await);
        ok(other.notify("alice").await);
        wait_for_wake(&mut watch).await;
        // A wake comes only once the mail is stored: the woken agent's fetch always finds it.
        for n in 0..50 {
            ok(other.append(&mail("alice", n)).await);
            wait_for_wake(&mut watch).await;
            let batch = ok(s.fetch("alice").await);
            assert_eq!(contents(&batch), [format!("m{n}")], "woken for m{n}");
            ok(s.ack("alice", token(&batch)).await);
        }
    }
    .await;
}

/// Reads lines from a child until one starts with `prefix`; returns the rest of it.
pub fn read_until(child: &mut std::process::Child, prefix: &str) -> String {
    // Byte by byte: a buffered reader would swallow what later calls must still read.
    let out = child.stdout.as_mut().unwrap();
    let mut line = String::new();
    loop {
        line.clear();
        assert!(
            read_line(out, &mut line) > 0,
            "the child ended before saying {prefix}"
        );
        if let Some(rest) = line.trim_end().strip_prefix(prefix) {
            return rest.trim().to_string();
        }
    }
}

/// Reads one line without reading ahead.
fn read_line(out: &mut impl std::io::Read, line: &mut String) -> usize {
    let mut bytes = Vec::new();
    let mut byte = [0u8; 1];
    while out.read(&mut byte).unwrap() == 1 {
        bytes.push(byte[0]);
        if byte[0] == b'\n' {
            break;
        }
    }
    line.push_str(&String::from_utf8_lossy(&bytes));
    bytes.len()
}

async fn four_writer_processes_lose_and_duplicate_nothing(b: Backend) {
    const WRITERS: usize = 4;
    let f = Fixture::new(b).await;
    let s = &f.store;
    // The consumer acks as it goes, concurrently with the writers.
    let mut children: Vec<_> = (0..WRITERS)
        .map(|w| spawn(&format!("writer:{w}"), &f.spec()))
        .collect();
    let mut seen: HashMap<String, usize> = HashMap::new();
    let total = WRITERS * PER_WRITER;
    let start = std::time::Instant::now();
    while seen.len() < total {
        assert!(
            start.elapsed() < Duration::from_secs(120),
            "only {} of {total} arrived",
            seen.len()
        );
        let batch = ok(s.fetch("sink").await);
        for m in &batch.messages {
            *seen.entry(m.content.clone()).or_default() += 1;
        }
        if let Some(t) = batch.ack {
            ok(s.ack("sink", t).await);
        }
    }
    for c in &mut children {
        assert!(c.wait().unwrap().success());
    }
    // Whatever is left would be a duplicate or a stray.
    let rest = ok(s.fetch("sink").await);
    assert!(rest.messages.is_empty(), "{} extra", rest.messages.len());
    assert_eq!(seen.len(), total);
    let twice: Vec<_> = seen.iter().filter(|(_, n)| **n > 1).collect();
    assert!(twice.is_empty(), "delivered twice: {twice:?}");
    for w in 0..WRITERS {
        for i in 0..PER_WRITER {
            assert!(seen.contains_key(&format!("{w}:{i}")), "lost {w}:{i}");
        }
    }
}

async fn a_consumer_killed_between_fetch_and_ack_gets_the_same_messages(b: Backend) {
    let f = Fixture::new(b).await;
    for n in 0..5 {
        ok(f.store.append(&mail("sink", n)).await);
    }
    let mut child = spawn("crashing-consumer", &f.spec());
    let ids = read_until(&mut child, "IDS");
    let _ = child.wait();
    let seen: Vec<&str> = ids.split(',').collect();
    assert_eq!(seen.len(), 5);
    // The restarted consumer (here, this process) gets them all again, at once.
    let s = f.open().await;
    let batch = ok(s.fetch("sink").await);
    let again: Vec<&str> = batch.messages.iter().map(|m| m.id.as_str()).collect();
    assert_eq!(again, seen);
    ok(s.ack("sink", token(&batch)).await);
    assert!(ok(s.peek("sink").await).is_empty());
}
