//! The roster (compare-and-set updates from many writers), the event log (resumable cursors,
//! corrupt entries counted) and presence.

use std::sync::Arc;

use troupe_protocol::{AgentStatus, AgentUsage, Event, EventKind, Member, Usage};
use troupe_store::{EventCursor, StoreError};

use crate::backend::{ok, Backend, Fixture};
use crate::both;

both!(
    missing_roster_is_empty_and_updates_persist,
    concurrent_roster_updates_from_many_handles_lose_nothing,
    concurrent_member_updates_from_many_handles_lose_nothing,
    a_corrupt_roster_is_an_error_and_is_not_overwritten,
    events_resume_from_a_cursor_and_count_corruption,
    presence_is_per_member_and_cleared_by_none,
    live_usage_is_stored_per_agent_apart_from_doing,
    bad_team_and_agent_names_are_refused,
);

async fn missing_roster_is_empty_and_updates_persist(b: Backend) {
    let f = Fixture::new(b).await;
    let s = &f.store;
    let empty = ok(s.roster().await);
    assert_eq!(empty.team, f.team);
    assert!(empty.members.is_empty());
    assert_eq!(s.team(), f.team);
    ok(s.update_roster(&mut |r| {
        r.lead = "lead".into();
        r.members.push(Member::new("alice", "tests", 0, 5));
    })
    .await);
    // An update that changes nothing writes nothing and still answers the roster.
    let same = ok(s.update_roster(&mut |_| {}).await);
    assert_eq!(same.lead, "lead");
    let roster = ok(f.open().await.roster().await);
    assert_eq!(roster.lead, "lead");
    assert_eq!(
        roster.get("alice").map(|m| m.status),
        Some(AgentStatus::Working)
    );
}

async fn concurrent_roster_updates_from_many_handles_lose_nothing(b: Backend) {
    let f = Arc::new(Fixture::new(b).await);
    let threads: Vec<_> = (0..8)
        .map(|i| {
            let f = f.clone();
            tokio::spawn(async move {
                let s = f.open().await;
                for j in 0..5 {
                    ok(s.update_roster(&mut |r| {
                        r.members.push(Member::new(format!("m{i}-{j}"), "r", 0, 0));
                    })
                    .await);
                }
            })
        })
        .collect();
    for t in threads {
        t.await.unwrap();
    }
    let roster = ok(f.open().await.roster().await);
    assert_eq!(roster.members.len(), 40);
}

/// Writers racing on one member's record: every lost compare-and-set is applied again until
/// it wins, so no increment is lost.
async fn concurrent_member_updates_from_many_handles_lose_nothing(b: Backend) {
    let f = Arc::new(Fixture::new(b).await);
    ok(f.store
        .update_roster(&mut |r| {
            r.members.push(Member::new("alice", "r", 0, 0));
        })
        .await);
    let threads: Vec<_> = (0..8)
        .map(|_| {
            let f = f.clone();
            tokio::spawn(async move {
                let s = f.open().await;
                for _ in 0..5 {
                    let updated = ok(s.update_member("alice", &mut |m| m.epoch += 1).await);
                    assert!(updated.is_some());
                }
            })
        })
        .collect();
    for t in threads {
        t.await.unwrap();
    }
    let alice = ok(f.open().await.member("alice").await).expect("alice is on the roster");
    assert_eq!(alice.epoch, 40);
    assert_eq!(ok(f.open().await.roster().await).members.len(), 1);
}

async fn a_corrupt_roster_is_an_error_and_is_not_overwritten(b: Backend) {
    let f = Fixture::new(b).await;
    let s = &f.store;
    f.raw_record("roster", b"{ not json");
    let err = s.roster().await.map(|_| ());
    let Err(err @ StoreError::Corrupt { .. }) = err else {
        panic!("expected Corrupt, got {err:?}")
    };
    assert!(err.to_string().contains("roster"), "{err}");
    assert!(s.update_roster(&mut |r| r.lead = "x".into()).await.is_err());
    assert_eq!(f.read_raw_record("roster"), b"{ not json");
}

async fn events_resume_from_a_cursor_and_count_corruption(b: Backend) {
    let f = Fixture::new(b).await;
    let s = &f.store;
    assert!(ok(s.read_events(EventCursor::START).await)
        .events
        .is_empty());
    ok(s.record(&Event::new(
        EventKind::MemberSpawned,
        Some("alice"),
        "spawned é",
        1,
    ))
    .await);
    let first = ok(s.read_events(EventCursor::START).await);
    assert_eq!(first.events.len(), 1);
    assert_eq!(first.events[0].detail, "spawned é");
    // Nothing new: the cursor stays where it is.
    let none = ok(s.read_events(first.next).await);
    assert!(none.events.is_empty());
    assert_eq!(none.next, first.next);
    f.raw_event(b"garbage");
    f.raw_event(b"{\"ts\":2,\"kind\":\"team_settled\",\"detail\":\"caf\xc3");
    // Another handle (a dashboard elsewhere) resumes from the same cursor.
    let other = f.open().await;
    ok(other
        .record(&Event::new(EventKind::TeamSettled, None, "", 2))
        .await);
    let rest = ok(other.read_events(first.next).await);
    assert_eq!(rest.corrupt, 2);
    assert_eq!(
        rest.events.iter().map(|e| e.kind).collect::<Vec<_>>(),
        [EventKind::TeamSettled]
    );
    assert!(ok(s.read_events(rest.next).await).events.is_empty());
    let all = ok(s.read_events(EventCursor::START).await);
    assert_eq!((all.events.len(), all.corrupt), (2, 2));
}

fn usage(model: &str, input: u64, output: u64) -> AgentUsage {
    AgentUsage {
        model: model.into(),
        usage: Usage {
            input_tokens: input,
            output_tokens: output,
            ..Usage::default()
        },
        by_model: Default::default(),
    }
}

/// Each agent's running token total, as the team publishes it after every model reply: the
/// newest value per agent, readable from another handle, and apart from what members do.
async fn live_usage_is_stored_per_agent_apart_from_doing(b: Backend) {
    let f = Fixture::new(b).await;
    let s = &f.store;
    assert!(ok(s.usages().await).is_empty());
    ok(s.set_usage("alice", &usage("m1", 10, 2)).await);
    ok(s.set_usage("lead", &usage("m2", 5, 1)).await);
    ok(s.set_usage("alice", &usage("m1", 30, 7)).await);
    ok(s.set_doing("alice", Some("bash: ls")).await);
    let other = f.open().await;
    let usages = ok(other.usages().await);
    assert_eq!(usages.len(), 2, "{usages:?}");
    assert_eq!(usages["alice"], usage("m1", 30, 7));
    assert_eq!(usages["lead"], usage("m2", 5, 1));
    // Usage and doing do not show up in each other.
    assert_eq!(
        ok(other.doing().await).keys().collect::<Vec<_>>(),
        ["alice"]
    );
    ok(s.set_doing("alice", None).await);
    assert_eq!(ok(other.usages().await).len(), 2);
    assert!(ok(s.roster().await).members.is_empty());
}

async fn presence_is_per_member_and_cleared_by_none(b: Backend) {
    let f = Fixture::new(b).await;
    let s = &f.store;
    assert!(ok(s.doing().await).is_empty());
    ok(s.set_doing("alice", Some("bash: cargo test")).await);
    ok(s.set_doing("bob", Some("read_file: a.rs")).await);
    ok(s.set_doing("alice", Some("edit_file: b.rs")).await);
    // Another handle (as another process) sees the same.
    let other = f.open().await;
    let doing = ok(other.doing().await);
    assert_eq!(
        doing.get("alice").map(String::as_str),
        Some("edit_file: b.rs")
    );
    assert_eq!(
        doing.get("bob").map(String::as_str),
        Some("read_file: a.rs")
    );
    ok(s.set_doing("alice", None).await);
    ok(s.set_doing("alice", None).await); // clearing twice is harmless
                                          // On a cluster another handle may read a replica a moment behind: the clearing reaches it.
    troupe_testkit::wait_until_async(
        "the other handle to see alice's presence cleared",
        std::time::Duration::from_secs(10),
        async || {
            other
                .doing()
                .await
                .is_ok_and(|d| d.keys().collect::<Vec<_>>() == ["bob"])
        },
    )
    .await;
    // Presence never touches the roster.
    assert!(ok(s.roster().await).members.is_empty());
    assert!(matches!(
        s.set_doing("../x", Some("x")).await,
        Err(StoreError::BadName { .. })
    ));
}

async fn bad_team_and_agent_names_are_refused(b: Backend) {
    let f = Fixture::new(b).await;
    let url = match b {
        Backend::File => String::new(),
        Backend::Nats | Backend::Cluster => b.server(),
    };
    for team in ["../evil", "Evil", "a.b"] {
        assert!(matches!(
            crate::backend::open(b, &url, f.dir.path(), team)
                .await
                .map(|_| ()),
            Err(StoreError::BadName { what: "team", .. })
        ));
    }
    assert!(matches!(
        f.store.acquire_lease("a.b").await,
        Err(StoreError::BadName { .. })
    ));
    assert!(matches!(
        f.store.fetch("a>b").await,
        Err(StoreError::BadName { .. })
    ));
}
