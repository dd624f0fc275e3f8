//! What only a server-backed store does: the server drops a re-sent envelope, a server that is
//! down is a clear error within seconds, and a server restarted mid-stream loses nothing.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code may panic on a broken fixture

use std::collections::HashSet;
use std::time::{Duration, Instant};

use troupe_protocol::{Envelope, MailKind};
use troupe_store::{SharedStore, StoreError};
use troupe_store_nats::NatsUrl;
use troupe_testkit::nats::{fresh_team, NatsServer};

fn ok<T>(r: Result<T, StoreError>) -> T {
    r.unwrap_or_else(|e| panic!("{e}"))
}

async fn open(url: &str, dir: &std::path::Path, team: &str) -> SharedStore {
    ok(troupe_store_nats::open(&ok(NatsUrl::parse(url)), dir, team).await)
}

#[tokio::test]
async fn a_re_sent_envelope_is_stored_once() {
    let dir = tempfile::tempdir().unwrap();
    let s = open(&troupe_testkit::nats::url(), dir.path(), &fresh_team()).await;
    let env = Envelope::new(MailKind::Message, "lead", "alice", "once", 1);
    ok(s.append(&env).await);
    ok(s.append(&env).await); // a sender retrying after a lost answer
    ok(s.append_many(&[env.clone(), env.clone()]).await);
    let batch = ok(s.fetch("alice").await);
    assert_eq!(batch.messages, vec![env]);
}

#[tokio::test]
async fn a_server_that_is_down_is_a_clear_error_within_seconds() {
    // A port nobody listens on: bound, then closed.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let dir = tempfile::tempdir().unwrap();
    let url = NatsUrl::parse(&format!("nats://127.0.0.1:{port}")).unwrap();
    let started = Instant::now();
    let err = troupe_store_nats::open(&url, dir.path(), "blue")
        .await
        .map(|_| ())
        .unwrap_err();
    let text = err.to_string();
    assert!(text.contains(&format!("127.0.0.1:{port}")), "{text}");
    assert!(
        text.contains("nats-server") && text.contains("-js"),
        "{text}"
    );
    // Not a timed assertion of speed: a hang here would be the bug (it must not retry forever).
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "took {:?}",
        started.elapsed()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_restarted_mid_stream_loses_no_mail() {
    const TOTAL: usize = 2_000;
    let mut server = NatsServer::start();
    let dir = tempfile::tempdir().unwrap();
    let team = fresh_team();
    let sender = open(&server.url(), dir.path(), &team).await;
    let receiver = open(&server.url(), dir.path(), &team).await;
    let writer = tokio::spawn(async move {
        for i in 0..TOTAL {
            ok(sender
                .append(&Envelope::new(
                    MailKind::Message,
                    "w",
                    "sink",
                    i.to_string(),
                    0,
                ))
                .await);
        }
    });
    let mut seen: HashSet<String> = HashSet::new();
    let mut restarted = false;
    let start = Instant::now();
    while seen.len() < TOTAL {
        assert!(
            start.elapsed() < Duration::from_secs(180),
            "only {} of {TOTAL} arrived",
            seen.len()
        );
        if !restarted && seen.len() >= TOTAL / 4 {
            server.restart(); // SIGKILL, then up again on the same port and store
            restarted = true;
        }
        let batch = ok(receiver.fetch("sink").await);
        for m in &batch.messages {
            seen.insert(m.content.clone());
        }
        if let Some(t) = batch.ack {
            ok(receiver.ack("sink", t).await);
        }
    }
    writer.await.unwrap();
    assert!(restarted);
    for i in 0..TOTAL {
        assert!(seen.contains(&i.to_string()), "lost {i}");
    }
    // Nothing stray is left behind either.
    assert!(ok(receiver.peek("sink").await).messages.is_empty());
}

#[tokio::test]
async fn only_a_team_a_lead_created_is_opened_as_existing() {
    let dir = tempfile::tempdir().unwrap();
    let url = ok(NatsUrl::parse(&troupe_testkit::nats::url()));
    let team = fresh_team();
    assert!(ok(troupe_store_nats::open_existing(&url, dir.path(), &team).await).is_none());
    let s = ok(troupe_store_nats::open(&url, dir.path(), &team).await);
    // Opened but never written: still not a team anyone started.
    assert!(ok(troupe_store_nats::open_existing(&url, dir.path(), &team).await).is_none());
    ok(s.update_roster(&mut |r| r.lead = "lead".into()).await);
    let found = ok(troupe_store_nats::open_existing(&url, dir.path(), &team).await).unwrap();
    assert_eq!(ok(found.roster().await).lead, "lead");
}

#[tokio::test]
async fn a_team_on_a_server_makes_no_local_mail_or_request_folders() {
    let dir = tempfile::tempdir().unwrap();
    let team = fresh_team();
    let s = open(&troupe_testkit::nats::url(), dir.path(), &team).await;
    ok(
        s.append(&Envelope::new(MailKind::Message, "lead", "alice", "hi", 1))
            .await,
    );
    let batch = ok(s.fetch("alice").await);
    ok(s.ack("alice", batch.ack.unwrap()).await);
    let request = troupe_protocol::Request::open(
        troupe_protocol::RequestKind::Permission,
        "alice",
        "lead",
        0,
        serde_json::json!({}),
        1,
        None,
    );
    ok(s.create_request(&request).await);
    ok(
        s.append_transcript("alice", &serde_json::json!({"role": "user"}))
            .await,
    );
    let team_dir = dir.path().join("teams").join(&team);
    let mut made: Vec<String> = std::fs::read_dir(&team_dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    made.sort();
    // Only the local transcript cache.
    assert_eq!(made, ["transcripts"]);
}

/// Bytes on the wire per member for one status change of every member of a roster of `n`.
async fn bytes_per_member_update(n: usize) -> u64 {
    use troupe_store::RosterStore;
    let dir = tempfile::tempdir().unwrap();
    let url = ok(NatsUrl::parse(&troupe_testkit::nats::url()));
    let s = ok(troupe_store_nats::NatsStore::open(
        &url,
        dir.path(),
        &fresh_team(),
        troupe_store_nats::OpenMode::Create,
    )
    .await)
    .unwrap();
    ok(s.update_roster(&mut |r| {
        r.lead = "lead".into();
        for i in 0..n {
            r.members.push(troupe_protocol::Member::new(
                format!("m{i}"),
                "worker",
                0,
                0,
            ));
        }
    })
    .await);
    let (in0, out0) = s.traffic();
    for i in 0..n {
        let changed = ok(s
            .update_member(&format!("m{i}"), &mut |m| {
                m.status = troupe_protocol::AgentStatus::Idle;
            })
            .await);
        assert!(changed.is_some());
    }
    let (in1, out1) = s.traffic();
    assert!(ok(s.roster().await)
        .members
        .iter()
        .all(|m| m.status == troupe_protocol::AgentStatus::Idle));
    ((in1 - in0) + (out1 - out0)) / n as u64
}

#[tokio::test]
async fn a_member_update_costs_the_same_bytes_whatever_the_roster_size() {
    // One key per member: a status change moves one member's record, not the whole roster (a
    // roster in one key made this grow with the team, and a round of N teammates with N²).
    let small = bytes_per_member_update(10).await;
    let large = bytes_per_member_update(80).await;
    assert!(
        large < small * 3 / 2,
        "bytes per member update: {small} with 10 members, {large} with 80"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn members_joining_at_once_while_others_change_are_all_on_the_roster() {
    // What a lead spawning many teammates in one response does: each added by its own
    // compare-and-set while those already in change their status.
    const N: usize = 40;
    let dir = tempfile::tempdir().unwrap();
    let team = fresh_team();
    let url = troupe_testkit::nats::url();
    let mut handles: Vec<SharedStore> = Vec::new();
    for _ in 0..4 {
        handles.push(open(&url, dir.path(), &team).await);
    }
    let threads: Vec<_> = (0..N)
        .map(|i| {
            let s = handles[i % handles.len()].clone();
            tokio::spawn(async move {
                let name = format!("m{i}");
                ok(s.update_roster(&mut |r| {
                    if r.get(&name).is_none() {
                        r.members
                            .push(troupe_protocol::Member::new(name.clone(), "w", 1, 0));
                    }
                })
                .await);
                for k in 0..5u64 {
                    let changed = ok(s.update_member(&name, &mut |m| m.last_seen = k).await);
                    assert!(changed.is_some(), "{name} is on the roster");
                }
            })
        })
        .collect();
    for t in threads {
        t.await.unwrap();
    }
    let roster = ok(handles[0].roster().await);
    let mut names: Vec<&str> = roster.members.iter().map(|m| m.name.as_str()).collect();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), N, "{names:?}");
    assert!(roster.members.iter().all(|m| m.last_seen == 4));
}
