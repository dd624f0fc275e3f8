//! Change notifications (`TeamStore::watch_changes`) and tail reads of the event log on the
//! file backend: every kind of write names its area, reads never wake a watcher, a team that
//! does not exist yet can be waited for, and a follower starts at the log's end.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code may panic on a broken fixture

use std::path::Path;
use std::time::Duration;

use serde_json::json;
use troupe_protocol::{Event, EventKind, Member, Request, RequestKind};
use troupe_store::{
    Areas, ChangeWatch, Durability, EventCursor, NewTask, RequestFilter, SharedStore,
};

/// A bound on every wait: generous, never a timed assertion.
const LIMIT: Duration = Duration::from_secs(30);

fn store(dir: &Path) -> SharedStore {
    troupe_store::file::open_with(dir, "team", Durability::OsBuffered).unwrap()
}

fn event(detail: &str) -> Event {
    Event::new(EventKind::Error, Some("lead"), detail, 1)
}

/// Waits until a change names `area`; returns everything named meanwhile.
async fn until(watch: &mut Box<dyn ChangeWatch>, area: Areas) -> Areas {
    let mut seen = Areas::NONE;
    tokio::time::timeout(LIMIT, async {
        loop {
            let got = watch.changed().await;
            assert!(!got.is_empty(), "a change never resolves empty");
            seen |= got;
            if got.intersects(area) {
                return;
            }
        }
    })
    .await
    .unwrap_or_else(|_| panic!("no change named {area:?}; saw {seen:?}"));
    seen
}

#[tokio::test]
async fn reads_wake_nobody_and_the_next_write_is_named_alone() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(dir.path());
    // Something in every area first, so the reads below have files to open.
    s.update_roster(&mut |r| r.members.push(Member::new("bob", "dev", 1, 1)))
        .await
        .unwrap();
    s.record(&event("first")).await.unwrap();
    s.set_doing("bob", Some("bash(ls)")).await.unwrap();
    let r = Request::open(RequestKind::Plan, "bob", "lead", 0, json!({}), 1, None);
    s.create_request(&r).await.unwrap();
    s.create_task(&NewTask {
        subject: "t".into(),
        created_by: "lead".into(),
        ..NewTask::default()
    })
    .await
    .unwrap();
    s.append_transcript("bob", &json!({"type": "x"}))
        .await
        .unwrap();

    let mut watch = s.watch_changes().await.unwrap();
    // Everything a dashboard reads.
    let _ = s.roster().await.unwrap();
    let _ = s.doing().await.unwrap();
    let _ = s.list_requests(&RequestFilter::default()).await.unwrap();
    let _ = s.get_request(&r.id).await.unwrap();
    let _ = s.list_tasks(&Default::default()).await.unwrap();
    let _ = s.read_events(EventCursor::START).await.unwrap();
    let _ = s.read_recent_events(10).await.unwrap();
    let _ = s.read_transcript("bob").await.unwrap();
    let _ = s.peek("bob").await.unwrap();
    let _ = s.is_alive("bob").await.unwrap();

    s.record(&event("second")).await.unwrap();
    let got = tokio::time::timeout(LIMIT, watch.changed()).await.unwrap();
    assert_eq!(got, Areas::EVENTS, "only the append is a change");
}

#[tokio::test]
async fn each_kind_of_write_names_its_area() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(dir.path());
    let mut watch = s.watch_changes().await.unwrap();

    s.update_roster(&mut |r| r.members.push(Member::new("bob", "dev", 1, 1)))
        .await
        .unwrap();
    until(&mut watch, Areas::ROSTER).await;
    s.set_doing("bob", Some("bash(ls)")).await.unwrap();
    until(&mut watch, Areas::PRESENCE).await;
    let r = Request::open(RequestKind::Plan, "bob", "lead", 0, json!({}), 1, None);
    s.create_request(&r).await.unwrap();
    until(&mut watch, Areas::REQUESTS).await;
    s.create_task(&NewTask {
        subject: "t".into(),
        created_by: "lead".into(),
        ..NewTask::default()
    })
    .await
    .unwrap();
    until(&mut watch, Areas::TASKS).await;
    let env =
        troupe_protocol::Envelope::new(troupe_protocol::MailKind::Message, "lead", "bob", "hi", 1);
    s.append(&env).await.unwrap();
    until(&mut watch, Areas::MAIL).await;
    s.append_transcript("bob", &json!({"type": "x"}))
        .await
        .unwrap();
    until(&mut watch, Areas::TRANSCRIPTS).await;
    let lease = s.acquire_lease("bob").await.unwrap();
    until(&mut watch, Areas::LIVENESS).await;
    drop(lease);
    s.record(&event("e")).await.unwrap();
    until(&mut watch, Areas::EVENTS).await;
}

#[tokio::test]
async fn a_burst_of_appends_is_one_wake_and_nothing_is_lost() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(dir.path());
    let mut watch = s.watch_changes().await.unwrap();
    let mut cursor = EventCursor::START;
    let mut seen = 0;
    let mut wakes = 0;
    let writer = {
        let s = s.clone();
        tokio::spawn(async move {
            for i in 0..2_000 {
                s.record(&event(&format!("e{i}"))).await.unwrap();
            }
        })
    };
    tokio::time::timeout(LIMIT, async {
        while seen < 2_000 {
            until(&mut watch, Areas::EVENTS).await;
            wakes += 1;
            let page = s.read_events(cursor).await.unwrap();
            seen += page.events.len();
            cursor = page.next;
        }
    })
    .await
    .unwrap();
    writer.await.unwrap();
    assert_eq!(seen, 2_000);
    assert!(wakes <= 2_000, "never more wakes than appends: {wakes}");
}

#[tokio::test]
async fn a_team_that_does_not_exist_yet_is_waited_for() {
    let dir = tempfile::tempdir().unwrap();
    let troupe_dir = dir.path().join(".troupe");
    let wait = tokio::spawn({
        let troupe_dir = troupe_dir.clone();
        async move { troupe_store::file::wait_for_team(&troupe_dir, "later").await }
    });
    // Nothing exists yet, not even `.troupe`: the wait watches the workspace, then deeper.
    assert!(!troupe_store::file::exists(&troupe_dir, "later"));
    std::fs::create_dir_all(troupe_dir.join("teams")).unwrap();
    troupe_store::file::open(&troupe_dir, "later").unwrap();
    tokio::time::timeout(LIMIT, wait)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
}

#[tokio::test]
async fn a_follower_starts_at_the_end_of_a_long_log() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(dir.path());
    for i in 0..1_000 {
        s.record(&event(&format!("e{i}"))).await.unwrap();
    }
    let recent = s.read_recent_events(3).await.unwrap();
    let details: Vec<&str> = recent.events.iter().map(|e| e.detail.as_str()).collect();
    assert_eq!(details, vec!["e997", "e998", "e999"]);
    s.record(&event("next")).await.unwrap();
    let page = s.read_events(recent.next).await.unwrap();
    assert_eq!(page.events.len(), 1);
    assert_eq!(page.events[0].detail, "next");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_team_made_step_by_step_while_the_wait_moves_its_watch_is_never_missed() {
    // Each directory on the way may appear while the wait is moving its watch down to the
    // one before it; the wait must see the team whichever step it races with.
    for round in 0..40u64 {
        let dir = tempfile::tempdir().unwrap();
        let troupe_dir = dir.path().join(".troupe");
        let wait = tokio::spawn({
            let troupe_dir = troupe_dir.clone();
            async move { troupe_store::file::wait_for_team(&troupe_dir, "later").await }
        });
        let maker = std::thread::spawn({
            let troupe_dir = troupe_dir.clone();
            move || {
                let pause = std::time::Duration::from_micros(50 * (round % 8));
                for step in [troupe_dir.clone(), troupe_dir.join("teams")] {
                    std::thread::sleep(pause);
                    std::fs::create_dir(&step).unwrap();
                }
                std::thread::sleep(pause);
                troupe_store::file::open(&troupe_dir, "later").unwrap();
            }
        });
        tokio::time::timeout(LIMIT, wait)
            .await
            .unwrap_or_else(|_| panic!("round {round}: the wait missed the team"))
            .unwrap()
            .unwrap();
        maker.join().unwrap();
    }
}
