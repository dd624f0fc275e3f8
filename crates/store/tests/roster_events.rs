//! The file backend's own files: a corrupt `roster.json` left alone, torn lines in
//! `events.jsonl` and transcripts. Behaviour every backend shares is in the conformance suite
//! (`crates/store-nats/tests/conformance`).
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code may panic on a broken fixture

use std::path::Path;

use serde_json::json;
use troupe_protocol::{AgentUsage, Event, EventKind, Usage};
use troupe_store::{Durability, EventCursor, SharedStore, StoreError};

/// The file backend as the team sees it: a trait object.
fn store(dir: &Path) -> SharedStore {
    troupe_store::file::open_with(dir, "team", Durability::OsBuffered)
        .unwrap_or_else(|e| panic!("{e}"))
}

fn ok<T>(r: Result<T, StoreError>) -> T {
    r.unwrap_or_else(|e| panic!("{e}"))
}

#[tokio::test]
async fn corrupt_roster_is_an_error_and_is_not_overwritten() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let s = store(dir.path());
    let path = dir.path().join("teams/team/roster.json");
    std::fs::write(&path, "{ not json").unwrap_or_else(|e| panic!("{e}"));
    let err = s.roster().await.map(|_| ());
    let Err(err @ StoreError::Corrupt { .. }) = err else {
        panic!("expected Corrupt, got {err:?}")
    };
    assert!(err.to_string().contains("roster.json"));
    assert!(s.update_roster(&mut |r| r.lead = "x".into()).await.is_err());
    assert_eq!(
        std::fs::read_to_string(&path).unwrap_or_default(),
        "{ not json"
    );
}

#[tokio::test]
async fn transcripts_round_trip_skipping_corrupt_lines() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let s = store(dir.path());
    ok(
        s.append_transcript("alice", &json!({"role": "user", "content": "hi"}))
            .await,
    );
    let path = ok(troupe_store::file::transcript_path(
        dir.path(),
        "team",
        "alice",
    ));
    assert!(path.ends_with("teams/team/transcripts/alice.jsonl"));
    std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .and_then(|mut f| std::io::Write::write_all(&mut f, b"{\"torn\":"))
        .unwrap_or_else(|e| panic!("{e}"));
    ok(
        s.append_transcript("alice", &json!({"role": "assistant", "content": "yo"}))
            .await,
    );
    let read = ok(s.read_transcript("alice").await);
    assert_eq!(read.corrupt, 1);
    assert_eq!(read.entries.len(), 2);
    assert_eq!(read.entries[1]["content"], "yo");
}

#[tokio::test]
async fn torn_multibyte_characters_do_not_stop_event_and_transcript_reads() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let s = store(dir.path());
    ok(
        s.record(&Event::new(EventKind::MemberSpawned, Some("alice"), "é", 1))
            .await,
    );
    let append_raw = |path: &Path, bytes: &[u8]| {
        std::fs::OpenOptions::new()
            .append(true)
            .open(path)
            .and_then(|mut f| std::io::Write::write_all(&mut f, bytes))
            .unwrap_or_else(|e| panic!("{e}"));
    };
    // `é` is 0xC3 0xA9; the crash kept only its first byte.
    append_raw(
        &dir.path().join("teams/team/events.jsonl"),
        b"{\"ts\":2,\"kind\":\"team_settled\",\"text\":\"caf\xc3",
    );
    ok(s.record(&Event::new(EventKind::TeamSettled, None, "", 3))
        .await);
    let page = ok(s.read_events(EventCursor::START).await);
    assert_eq!(page.corrupt, 1);
    assert_eq!(page.events.len(), 2);

    ok(s.append_transcript("alice", &json!({"content": "café"}))
        .await);
    let path = ok(troupe_store::file::transcript_path(
        dir.path(),
        "team",
        "alice",
    ));
    append_raw(&path, b"{\"content\":\"caf\xc3");
    // The torn last line is skipped on read; the next append starts a line of its own.
    let read = ok(s.read_transcript("alice").await);
    assert_eq!((read.entries.len(), read.corrupt), (1, 1));
    ok(s.append_transcript("alice", &json!({"content": "again"}))
        .await);
    let read = ok(s.read_transcript("alice").await);
    assert_eq!((read.entries.len(), read.corrupt), (2, 1));
    assert_eq!(read.entries[1]["content"], "again");
}

#[tokio::test]
async fn running_usage_is_published_per_agent_beside_what_it_is_doing() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let s = store(dir.path());
    assert!(ok(s.usages().await).is_empty());
    let usage = |input| AgentUsage {
        model: "claude-sonnet-4-5".into(),
        usage: Usage {
            input_tokens: input,
            output_tokens: 7,
            ..Usage::default()
        },
        ..AgentUsage::default()
    };
    ok(s.set_doing("alice", Some("bash: ls")).await);
    ok(s.set_usage("alice", &usage(100)).await);
    ok(s.set_usage("lead", &usage(5)).await);
    ok(s.set_usage("alice", &usage(250)).await);
    let other = store(dir.path());
    let usages = ok(other.usages().await);
    assert_eq!(usages.get("alice"), Some(&usage(250)));
    assert_eq!(usages.get("lead"), Some(&usage(5)));
    assert_eq!(usages.len(), 2);
    // Usage files are not mistaken for what a member is doing, nor the other way round.
    assert_eq!(
        ok(other.doing().await).keys().collect::<Vec<_>>(),
        ["alice"]
    );
    assert!(ok(s.roster().await).members.is_empty());
    assert!(matches!(
        s.set_usage("../x", &usage(1)).await,
        Err(StoreError::BadName { .. })
    ));
}

#[tokio::test]
async fn events_recorded_together_are_one_append_read_back_in_order() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let s = store(dir.path());
    ok(s.record(&Event::new(
        EventKind::MemberSpawned,
        Some("a"),
        "first".to_string(),
        1,
    ))
    .await);
    let batch: Vec<Event> = (0..3)
        .map(|i| Event::new(EventKind::ToolCalled, Some("a"), format!("call {i}"), 2 + i))
        .collect();
    ok(s.record_many(&batch).await);
    ok(s.record_many(&Vec::new()).await);
    let page = ok(s.read_events(EventCursor::START).await);
    let details: Vec<&str> = page.events.iter().map(|e| e.detail.as_str()).collect();
    assert_eq!(details, ["first", "call 0", "call 1", "call 2"]);
    assert_eq!(page.corrupt, 0);
}
