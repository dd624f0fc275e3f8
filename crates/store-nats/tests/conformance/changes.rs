//! Change notifications (`watch_changes`): a write through another handle (another process, as
//! far as the store knows) wakes the watcher naming its area; and one member read or changed
//! (`member`, `update_member`) agrees with the whole roster.

use std::time::Duration;

use serde_json::json;
use troupe_protocol::{
    AgentStatus, Envelope, Event, EventKind, MailKind, Member, Request, RequestKind,
};
use troupe_store::{Areas, ChangeWatch, NewTask, SharedStore};

use crate::backend::{ok, Backend, Fixture};
use crate::both;

both!(
    each_kind_of_write_wakes_the_watcher_with_its_area,
    one_member_is_read_and_changed_like_the_whole_roster,
);

/// Waits (bounded) until the watcher has named `want`; other areas may come first.
async fn wait_for(watch: &mut Box<dyn ChangeWatch>, want: Areas, what: &str) {
    let mut seen = Areas::NONE;
    let found = tokio::time::timeout(Duration::from_secs(20), async {
        loop {
            let areas = watch.changed().await;
            assert!(!areas.is_empty(), "a change watch never resolves empty");
            seen |= areas;
            if areas.intersects(want) {
                return;
            }
        }
    })
    .await;
    assert!(
        found.is_ok(),
        "{what}: no change named {want:?} (saw {seen:?})"
    );
}

async fn each_kind_of_write_wakes_the_watcher_with_its_area(b: Backend) {
    let f = Fixture::new(b).await;
    let writer: SharedStore = f.open().await;
    async {
        let mut watch = ok(f.store.watch_changes().await);
        ok(writer
            .update_roster(&mut |r| r.members.push(Member::new("bob", "r", 1, 1)))
            .await);
        wait_for(&mut watch, Areas::ROSTER, "a roster update").await;
        ok(writer
            .append(&Envelope::new(MailKind::Message, "lead", "bob", "hi", 1))
            .await);
        wait_for(&mut watch, Areas::MAIL, "mail").await;
        ok(writer
            .record(&Event::new(
                EventKind::Error,
                Some("bob"),
                "x".to_string(),
                1,
            ))
            .await);
        wait_for(&mut watch, Areas::EVENTS, "an event").await;
        let request = Request::open(RequestKind::Plan, "bob", "lead", 1, json!({}), 1, None);
        ok(writer.create_request(&request).await);
        wait_for(&mut watch, Areas::REQUESTS, "a request").await;
        let task = NewTask {
            subject: "write it".into(),
            description: String::new(),
            blocked_by: Vec::new(),
            created_by: "lead".into(),
        };
        ok(writer.create_task(&task).await);
        wait_for(&mut watch, Areas::TASKS, "a task").await;
        ok(writer.set_doing("bob", Some("reading")).await);
        wait_for(&mut watch, Areas::PRESENCE, "presence").await;
        ok(writer
            .append_transcript("bob", &json!({"content": "hi"}))
            .await);
        wait_for(&mut watch, Areas::TRANSCRIPTS, "a transcript line").await;
    }
    .await;
}

async fn one_member_is_read_and_changed_like_the_whole_roster(b: Backend) {
    let f = Fixture::new(b).await;
    let s = &f.store;
    ok(s.update_roster(&mut |r| {
        r.members.push(Member::new("alice", "r", 1, 1));
        r.members.push(Member::new("bob", "r", 1, 1));
    })
    .await);
    let other = f.open().await;
    let changed = ok(other
        .update_member("bob", &mut |m| m.status = AgentStatus::Idle)
        .await);
    assert_eq!(changed.map(|m| m.status), Some(AgentStatus::Idle));
    assert_eq!(
        ok(s.member("bob").await).map(|m| m.status),
        Some(AgentStatus::Idle)
    );
    assert_eq!(
        ok(s.member("bob").await).as_ref(),
        ok(s.roster().await).get("bob")
    );
    assert_eq!(
        ok(s.update_member("nobody", &mut |m| m.epoch = 7).await),
        None
    );
    assert_eq!(ok(s.member("nobody").await), None);
    assert_eq!(ok(other.roster().await).members.len(), 2);
}
