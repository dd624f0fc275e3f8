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

fn missing_roster_is_empty_and_updates_persist(b: Backend) {
    let f = Fixture::new(b);
    let s = &f.store;
    let empty = ok(s.roster());
    assert_eq!(empty.team, f.team);
    assert!(empty.members.is_empty());
    assert_eq!(s.team(), f.team);
    ok(s.update_roster(&mut |r| {
        r.lead = "lead".into();
        r.members.push(Member::new("alice", "tests", 0, 5));
    }));
    // An update that changes nothing writes nothing and still answers the roster.
    let same = ok(s.update_roster(&mut |_| {}));
    assert_eq!(same.lead, "lead");
    let roster = ok(f.open().roster());
    assert_eq!(roster.lead, "lead");
    assert_eq!(
        roster.get("alice").map(|m| m.status),
        Some(AgentStatus::Working)
    );
}

fn concurrent_roster_updates_from_many_handles_lose_nothing(b: Backend) {
    let f = Arc::new(Fixture::new(b));
    let threads: Vec<_> = (0..8)
        .map(|i| {
            let f = f.clone();
            std::thread::spawn(move || {
                let s = f.open();
                for j in 0..5 {
                    ok(s.update_roster(&mut |r| {
                        r.members.push(Member::new(format!("m{i}-{j}"), "r", 0, 0));
                    }));
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let roster = ok(f.open().roster());
    assert_eq!(roster.members.len(), 40);
}

/// Writers racing on one member's record: every lost compare-and-set is applied again until
/// it wins, so no increment is lost.
fn concurrent_member_updates_from_many_handles_lose_nothing(b: Backend) {
    let f = Arc::new(Fixture::new(b));
    ok(f.store.update_roster(&mut |r| {
        r.members.push(Member::new("alice", "r", 0, 0));
    }));
    let threads: Vec<_> = (0..8)
        .map(|_| {
            let f = f.clone();
            std::thread::spawn(move || {
                let s = f.open();
                for _ in 0..5 {
                    let updated = ok(s.update_member("alice", &mut |m| m.epoch += 1));
                    assert!(updated.is_some());
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let alice = ok(f.open().member("alice")).expect("alice is on the roster");
    assert_eq!(alice.epoch, 40);
    assert_eq!(ok(f.open().roster()).members.len(), 1);
}

fn a_corrupt_roster_is_an_error_and_is_not_overwritten(b: Backend) {
    let f = Fixture::new(b);
    let s = &f.store;
    f.raw_record("roster", b"{ not json");
    let err = s.roster().map(|_| ());
    let Err(err @ StoreError::Corrupt { .. }) = err else {
        panic!("expected Corrupt, got {err:?}")
    };
    assert!(err.to_string().contains("roster"), "{err}");
    assert!(s.update_roster(&mut |r| r.lead = "x".into()).is_err());
    assert_eq!(f.read_raw_record("roster"), b"{ not json");
}

fn events_resume_from_a_cursor_and_count_corruption(b: Backend) {
    let f = Fixture::new(b);
    let s = &f.store;
    assert!(ok(s.read_events(EventCursor::START)).events.is_empty());
    ok(s.record(&Event::new(
        EventKind::MemberSpawned,
        Some("alice"),
        "spawned é",
        1,
    )));
    let first = ok(s.read_events(EventCursor::START));
    assert_eq!(first.events.len(), 1);
    assert_eq!(first.events[0].detail, "spawned é");
    // Nothing new: the cursor stays where it is.
    let none = ok(s.read_events(first.next));
    assert!(none.events.is_empty());
    assert_eq!(none.next, first.next);
    f.raw_event(b"garbage");
    f.raw_event(b"{\"ts\":2,\"kind\":\"team_settled\",\"detail\":\"caf\xc3");
    // Another handle (a dashboard elsewhere) resumes from the same cursor.
    let other = f.open();
    ok(other.record(&Event::new(EventKind::TeamSettled, None, "", 2)));
    let rest = ok(other.read_events(first.next));
    assert_eq!(rest.corrupt, 2);
    assert_eq!(
        rest.events.iter().map(|e| e.kind).collect::<Vec<_>>(),
        [EventKind::TeamSettled]
    );
    assert!(ok(s.read_events(rest.next)).events.is_empty());
    let all = ok(s.read_events(EventCursor::START));
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
fn live_usage_is_stored_per_agent_apart_from_doing(b: Backend) {
    let f = Fixture::new(b);
    let s = &f.store;
    assert!(ok(s.usages()).is_empty());
    ok(s.set_usage("alice", &usage("m1", 10, 2)));
    ok(s.set_usage("lead", &usage("m2", 5, 1)));
    ok(s.set_usage("alice", &usage("m1", 30, 7)));
    ok(s.set_doing("alice", Some("bash: ls")));
    let other = f.open();
    let usages = ok(other.usages());
    assert_eq!(usages.len(), 2, "{usages:?}");
    assert_eq!(usages["alice"], usage("m1", 30, 7));
    assert_eq!(usages["lead"], usage("m2", 5, 1));
    // Usage and doing do not show up in each other.
    assert_eq!(ok(other.doing()).keys().collect::<Vec<_>>(), ["alice"]);
    ok(s.set_doing("alice", None));
    assert_eq!(ok(other.usages()).len(), 2);
    assert!(ok(s.roster()).members.is_empty());
}

fn presence_is_per_member_and_cleared_by_none(b: Backend) {
    let f = Fixture::new(b);
    let s = &f.store;
    assert!(ok(s.doing()).is_empty());
    ok(s.set_doing("alice", Some("bash: cargo test")));
    ok(s.set_doing("bob", Some("read_file: a.rs")));
    ok(s.set_doing("alice", Some("edit_file: b.rs")));
    // Another handle (as another process) sees the same.
    let other = f.open();
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

fn bad_team_and_agent_names_are_refused(b: Backend) {
    let f = Fixture::new(b);
    let url = match b {
        Backend::File => String::new(),
        Backend::Nats | Backend::Cluster => b.server(),
    };
    for team in ["../evil", "Evil", "a.b"] {
        assert!(matches!(
            crate::backend::open(b, &url, f.dir.path(), team).map(|_| ()),
            Err(StoreError::BadName { what: "team", .. })
        ));
    }
    assert!(matches!(
        f.store.acquire_lease("a.b"),
        Err(StoreError::BadName { .. })
    ));
    assert!(matches!(
        f.store.fetch("a>b"),
        Err(StoreError::BadName { .. })
    ));
}
