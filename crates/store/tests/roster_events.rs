//! Roster read-modify-write, event log and transcripts.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code may panic on a broken fixture

use std::path::Path;
use std::sync::Arc;

use serde_json::json;
use troupe_protocol::{AgentStatus, AgentUsage, Event, EventKind, Member, Usage};
use troupe_store::{Durability, EventCursor, SharedStore, StoreError, TeamStore};

/// The file backend as the team sees it: a trait object.
fn store(dir: &Path) -> SharedStore {
    troupe_store::file::open_with(dir, "team", Durability::OsBuffered)
        .unwrap_or_else(|e| panic!("{e}"))
}

fn ok<T>(r: Result<T, StoreError>) -> T {
    r.unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn missing_roster_is_empty_and_updates_persist() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let s = store(dir.path());
    let empty = ok(s.roster());
    assert_eq!(empty.team, "team");
    assert!(empty.members.is_empty());
    ok(s.update_roster(&mut |r| {
        r.lead = "lead".into();
        r.members.push(Member::new("alice", "tests", 0, 5));
    }));
    let again = store(dir.path());
    let roster = ok(again.roster());
    assert_eq!(roster.lead, "lead");
    assert_eq!(
        roster.get("alice").map(|m| m.status),
        Some(AgentStatus::Working)
    );
}

#[test]
fn concurrent_updates_lose_nothing() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let root = Arc::new(dir.path().to_path_buf());
    let threads: Vec<_> = (0..8)
        .map(|i| {
            let root = root.clone();
            std::thread::spawn(move || {
                let s = store(&root);
                for j in 0..5 {
                    ok(s.update_roster(&mut |r| {
                        r.members.push(Member::new(format!("m{i}-{j}"), "r", 0, 0));
                    }));
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap_or_else(|_| panic!("thread panicked"));
    }
    assert_eq!(ok(store(&root).roster()).members.len(), 40);
}

#[test]
fn corrupt_roster_is_an_error_and_is_not_overwritten() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let s = store(dir.path());
    let path = dir.path().join("teams/team/roster.json");
    std::fs::write(&path, "{ not json").unwrap_or_else(|e| panic!("{e}"));
    let err = s.roster().map(|_| ());
    let Err(err @ StoreError::Corrupt { .. }) = err else {
        panic!("expected Corrupt, got {err:?}")
    };
    assert!(err.to_string().contains("roster.json"));
    assert!(s.update_roster(&mut |r| r.lead = "x".into()).is_err());
    assert_eq!(
        std::fs::read_to_string(&path).unwrap_or_default(),
        "{ not json"
    );
}

#[test]
fn events_read_from_offsets_and_count_corruption() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let s = store(dir.path());
    ok(s.record(&Event::new(
        EventKind::MemberSpawned,
        Some("alice"),
        "spawned",
        1,
    )));
    let first = ok(s.read_events(EventCursor::START));
    assert_eq!(first.events.len(), 1);
    std::fs::OpenOptions::new()
        .append(true)
        .open(dir.path().join("teams/team/events.jsonl"))
        .and_then(|mut f| std::io::Write::write_all(&mut f, b"garbage\n"))
        .unwrap_or_else(|e| panic!("{e}"));
    ok(s.record(&Event::new(EventKind::TeamSettled, None, "", 2)));
    let rest = ok(s.read_events(first.next));
    assert_eq!(rest.corrupt, 1);
    assert_eq!(
        rest.events.iter().map(|e| e.kind).collect::<Vec<_>>(),
        [EventKind::TeamSettled]
    );
    assert!(ok(s.read_events(rest.next)).events.is_empty());
}

#[test]
fn transcripts_round_trip_skipping_corrupt_lines() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let s = store(dir.path());
    ok(s.append_transcript("alice", &json!({"role": "user", "content": "hi"})));
    let path = ok(s.transcript_file("alice"));
    assert!(path.ends_with("teams/team/transcripts/alice.jsonl"));
    std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .and_then(|mut f| std::io::Write::write_all(&mut f, b"{\"torn\":"))
        .unwrap_or_else(|e| panic!("{e}"));
    ok(s.append_transcript("alice", &json!({"role": "assistant", "content": "yo"})));
    let read = ok(s.read_transcript("alice"));
    assert_eq!(read.corrupt, 1);
    assert_eq!(read.entries.len(), 2);
    assert_eq!(read.entries[1]["content"], "yo");
}

#[test]
fn torn_multibyte_characters_do_not_stop_event_and_transcript_reads() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let s = store(dir.path());
    ok(s.record(&Event::new(EventKind::MemberSpawned, Some("alice"), "é", 1)));
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
    ok(s.record(&Event::new(EventKind::TeamSettled, None, "", 3)));
    let page = ok(s.read_events(EventCursor::START));
    assert_eq!(page.corrupt, 1);
    assert_eq!(page.events.len(), 2);

    ok(s.append_transcript("alice", &json!({"content": "café"})));
    let path = ok(s.transcript_file("alice"));
    append_raw(&path, b"{\"content\":\"caf\xc3");
    // The torn last line is skipped on read; the next append starts a line of its own.
    let read = ok(s.read_transcript("alice"));
    assert_eq!((read.entries.len(), read.corrupt), (1, 1));
    ok(s.append_transcript("alice", &json!({"content": "again"})));
    let read = ok(s.read_transcript("alice"));
    assert_eq!((read.entries.len(), read.corrupt), (2, 1));
    assert_eq!(read.entries[1]["content"], "again");
}

#[test]
fn store_is_usable_as_a_trait_object() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let s: Arc<dyn TeamStore> = store(dir.path());
    assert_eq!(s.team(), "team");
    ok(s.record(&Event::new(EventKind::TurnStarted, Some("lead"), "", 1)));
    assert_eq!(ok(s.read_events(EventCursor::START)).events.len(), 1);
}

#[test]
fn presence_is_per_member_and_cleared_by_none() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let s = store(dir.path());
    assert!(ok(s.doing()).is_empty());
    ok(s.set_doing("alice", Some("bash: cargo test")));
    ok(s.set_doing("bob", Some("read_file: a.rs")));
    ok(s.set_doing("alice", Some("edit_file: b.rs")));
    // Another handle (as another process) sees the same.
    let other = store(dir.path());
    let doing = ok(other.doing());
    assert_eq!(
        doing.get("alice").map(String::as_str),
        Some("edit_file: b.rs")
    );
    assert_eq!(
        doing.get("bob").map(String::as_str),
        Some("read_file: a.rs")
    );
    ok(s.set_doing("alice", None));
    ok(s.set_doing("alice", None)); // clearing twice is harmless
    assert_eq!(ok(other.doing()).keys().collect::<Vec<_>>(), ["bob"]);
    // Presence never touches the roster.
    assert!(ok(s.roster()).members.is_empty());
    assert!(matches!(
        s.set_doing("../x", Some("x")),
        Err(StoreError::BadName { .. })
    ));
}

#[test]
fn a_lease_is_exclusive_until_dropped() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let s = store(dir.path());
    let lease = ok(s.acquire_lease("lead"));
    assert_eq!(lease.holder().pid, std::process::id());
    match store(dir.path()).acquire_lease("lead") {
        Err(StoreError::LeaseHeld { agent, holder, .. }) => {
            assert_eq!(agent, "lead");
            assert_eq!(holder.as_ref(), Some(lease.holder()));
        }
        other => panic!("expected the lease to be held: {other:?}"),
    }
    drop(lease);
    assert!(s.acquire_lease("lead").is_ok());
}

#[test]
fn has_transcript_only_after_an_entry() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let s = store(dir.path());
    assert!(!ok(s.has_transcript("alice")));
    ok(s.append_transcript("alice", &json!({"content": "hi"})));
    assert!(ok(s.has_transcript("alice")));
    assert!(!ok(s.has_transcript("bob")));
}

#[test]
fn bad_team_name_is_refused() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    assert!(matches!(
        troupe_store::file::open(dir.path(), "../evil").map(|_| ()),
        Err(StoreError::BadName { what: "team", .. })
    ));
}

#[test]
fn running_usage_is_published_per_agent_beside_what_it_is_doing() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let s = store(dir.path());
    assert!(ok(s.usages()).is_empty());
    let usage = |input| AgentUsage {
        model: "claude-sonnet-4-5".into(),
        usage: Usage {
            input_tokens: input,
            output_tokens: 7,
            ..Usage::default()
        },
    };
    ok(s.set_doing("alice", Some("bash: ls")));
    ok(s.set_usage("alice", &usage(100)));
    ok(s.set_usage("lead", &usage(5)));
    ok(s.set_usage("alice", &usage(250)));
    let other = store(dir.path());
    let usages = ok(other.usages());
    assert_eq!(usages.get("alice"), Some(&usage(250)));
    assert_eq!(usages.get("lead"), Some(&usage(5)));
    assert_eq!(usages.len(), 2);
    // Usage files are not mistaken for what a member is doing, nor the other way round.
    assert_eq!(ok(other.doing()).keys().collect::<Vec<_>>(), ["alice"]);
    assert!(ok(s.roster()).members.is_empty());
    assert!(matches!(
        s.set_usage("../x", &usage(1)),
        Err(StoreError::BadName { .. })
    ));
}
