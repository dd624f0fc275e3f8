//! Transcripts as team state: appended and read through the store, with the same rules for
//! torn lines on every backend, and readable from another machine of the team.

use serde_json::json;
use troupe_store::StoreError;

use crate::backend::{ok, Backend, Fixture};
use crate::both;

both!(
    transcripts_round_trip_through_any_handle,
    lines_are_read_from_a_position_on,
    a_torn_line_is_skipped_and_the_next_append_starts_a_line_of_its_own,
    a_line_longer_than_a_message_comes_back_whole,
);

async fn transcripts_round_trip_through_any_handle(b: Backend) {
    let f = Fixture::new(b).await;
    let s = &f.store;
    assert!(!ok(s.has_transcript("alice").await));
    assert_eq!(ok(s.transcript_len("alice").await), 0);
    ok(
        s.append_transcript("alice", &json!({"role": "user", "content": "hi"}))
            .await,
    );
    let two =
        b"{\"role\":\"assistant\",\"content\":\"yo\"}\n{\"role\":\"user\",\"content\":\"go\"}\n";
    let end = ok(s.append_transcript_lines("alice", two).await);
    assert_eq!(end, ok(s.transcript_len("alice").await));
    assert!(ok(s.has_transcript("alice").await));
    assert!(!ok(s.has_transcript("bob").await));
    // The agent loop's file is on this machine, whatever the backend.
    let path = ok(troupe_store::file::transcript_path(
        f.dir.path(),
        &f.team,
        "alice",
    ));
    assert!(path.starts_with(f.dir.path()), "{}", path.display());
    assert_eq!(s.transcript_is_cached(), b != Backend::File);
    // Another machine of the team reads the same transcript from the store.
    let elsewhere = tempfile::tempdir().unwrap();
    let other = f.open_on_another_machine(elsewhere.path()).await;
    assert!(ok(other.has_transcript("alice").await));
    assert_eq!(ok(other.transcript_len("alice").await), end);
    let read = ok(other.read_transcript("alice").await);
    assert_eq!(read.corrupt, 0);
    assert_eq!(read.entries.len(), 3);
    assert_eq!(read.entries[1]["content"], "yo");
    assert_eq!(read.entries[2]["content"], "go");
    // ...and goes on appending where this one stopped.
    ok(other
        .append_transcript("alice", &json!({"content": "from afar"}))
        .await);
    let read = ok(s.read_transcript("alice").await);
    assert_eq!(read.entries.len(), 4);
    assert_eq!(read.entries[3]["content"], "from afar");
    assert!(matches!(
        s.append_transcript("a.b", &json!({})).await,
        Err(StoreError::BadName { .. })
    ));
}

async fn lines_are_read_from_a_position_on(b: Backend) {
    let f = Fixture::new(b).await;
    let s = &f.store;
    let first = ok(s.append_transcript_lines("bob", b"{\"n\":1}\n").await);
    ok(s.append_transcript_lines("bob", b"{\"n\":2}\n{\"n\":3}\n")
        .await);
    let all = ok(s.read_transcript_from("bob", 0).await);
    assert_eq!(all.bytes, b"{\"n\":1}\n{\"n\":2}\n{\"n\":3}\n");
    assert_eq!((all.start, all.len, all.end()), (0, all.len, all.len));
    let rest = ok(s.read_transcript_from("bob", first).await);
    assert_eq!(rest.bytes, b"{\"n\":2}\n{\"n\":3}\n");
    assert_eq!(rest.end(), all.len);
    let none = ok(s.read_transcript_from("bob", all.len).await);
    assert!(none.bytes.is_empty());
    // A line being written (no newline yet) is not handed to a follower.
    f.raw_transcript("bob", b"{\"n\":");
    let partial = ok(s.read_transcript_from("bob", all.len).await);
    assert!(partial.bytes.is_empty(), "{:?}", partial.bytes);
    assert_eq!(partial.len, all.len + 5);
    assert!(ok(s.read_transcript_from("nobody", 0).await)
        .bytes
        .is_empty());
}

async fn a_torn_line_is_skipped_and_the_next_append_starts_a_line_of_its_own(b: Backend) {
    let f = Fixture::new(b).await;
    let s = &f.store;
    ok(s.append_transcript("alice", &json!({"content": "café"}))
        .await);
    // A writer died in the middle of `é` (0xC3 0xA9): only its first byte made it.
    f.raw_transcript("alice", b"{\"content\":\"caf\xc3");
    let read = ok(s.read_transcript("alice").await);
    assert_eq!((read.entries.len(), read.corrupt), (1, 1));
    ok(s.append_transcript("alice", &json!({"content": "again"}))
        .await);
    let read = ok(s.read_transcript("alice").await);
    assert_eq!((read.entries.len(), read.corrupt), (2, 1));
    assert_eq!(read.entries[1]["content"], "again");
    // A writer that died right before its newline left a whole record: it is kept.
    f.raw_transcript("alice", b"{\"content\":\"whole\"}");
    let read = ok(s.read_transcript("alice").await);
    assert_eq!((read.entries.len(), read.corrupt), (3, 1));
    // Appending nothing only ends the torn line, and says how long the transcript is.
    let len = ok(s.append_transcript_lines("alice", b"").await);
    assert_eq!(len, ok(s.transcript_len("alice").await));
    let all = ok(s.read_transcript_from("alice", 0).await);
    assert_eq!(all.len, len);
    assert!(all.bytes.ends_with(b"{\"content\":\"whole\"}\n"));
    assert_eq!(ok(s.append_transcript_lines("alice", b"").await), len);
}

async fn a_line_longer_than_a_message_comes_back_whole(b: Backend) {
    let f = Fixture::new(b).await;
    let s = &f.store;
    // Bigger than one NATS message may be: it is split, and read back as one line.
    let big = "x".repeat(700 * 1024);
    ok(s.append_transcript("carol", &json!({"content": big})).await);
    ok(s.append_transcript("carol", &json!({"content": "after"}))
        .await);
    let read = ok(f.open().await.read_transcript("carol").await);
    assert_eq!(read.corrupt, 0);
    assert_eq!(read.entries.len(), 2);
    assert_eq!(
        read.entries[0]["content"].as_str().map(str::len),
        Some(big.len())
    );
    assert_eq!(read.entries[1]["content"], "after");
}
