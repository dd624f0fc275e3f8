//! The file backend makes a team's `inbox/`, `requests/` and `transcripts/` on first use: a
//! store opened and read makes none of them, the first write into each makes it, and what was
//! written reads back.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code may panic on a broken fixture

use serde_json::json;
use troupe_protocol::{Envelope, MailKind, Request, RequestKind};
use troupe_store::{Durability, RequestFilter, SharedStore};

fn store(dir: &std::path::Path) -> SharedStore {
    troupe_store::file::open_with(dir, "team", Durability::Fsync).unwrap()
}

#[tokio::test]
async fn a_folder_is_made_by_its_first_write_and_reads_before_it_find_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(dir.path());
    let team = dir.path().join("teams/team");
    let made = |sub: &str| team.join(sub).is_dir();
    // Reads and a lease make none of them.
    assert!(s
        .list_requests(&RequestFilter::default())
        .await
        .unwrap()
        .is_empty());
    assert!(s.fetch("alice").await.unwrap().messages.is_empty());
    assert_eq!(s.read_transcript("alice").await.unwrap().entries.len(), 0);
    let lease = s.acquire_lease("alice").await.unwrap();
    assert!(team.is_dir());
    assert!(!made("inbox") && !made("requests") && !made("transcripts"));

    let mail = Envelope::new(MailKind::Message, "lead", "alice", "hello", 1);
    s.append(&mail).await.unwrap();
    assert!(made("inbox") && !made("requests"));
    let r = Request::open(RequestKind::Plan, "alice", "lead", 0, json!({}), 1, None);
    s.create_request(&r).await.unwrap();
    assert!(made("requests"));
    s.append_transcript_lines("alice", b"{\"a\":1}\n")
        .await
        .unwrap();
    assert!(made("transcripts"));

    // Another handle (another process) reads what the first wrote.
    let other = store(dir.path());
    assert_eq!(other.fetch("alice").await.unwrap().messages, [mail]);
    assert_eq!(
        other
            .list_requests(&RequestFilter::default())
            .await
            .unwrap(),
        [r]
    );
    assert_eq!(
        other.read_transcript("alice").await.unwrap().entries.len(),
        1
    );
    drop(lease);
}
