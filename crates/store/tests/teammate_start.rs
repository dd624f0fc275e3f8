//! What a teammate start costs the file store, counted: the lead adds it to the roster, it takes
//! its lease, publishes what it is doing and its usage, and is marked working — for many
//! teammates at once, each with a store handle of its own (as processes have). A start makes no
//! file of its own (its lease, presence and roster index are a slot of the team's one member
//! table, `members`) and syncs at most twice, the group commit sharing the roster's syncs between teammates. Counts, not time; the
//! whole process's syncs are counted, so this binary holds this one test.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code may panic on a broken fixture

use std::path::Path;

use troupe_protocol::{AgentStatus, AgentUsage, Member};
use troupe_store::{Durability, SharedStore};

const TEAMMATES: usize = 40;
/// Syncs a start may cost at most: its roster entry and its status, durable.
const SYNCS_PER_START: u64 = 2;

fn files_under(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        if entry.file_type().unwrap().is_dir() {
            out.extend(files_under(&entry.path()));
        } else {
            out.push(entry.path().display().to_string());
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_teammate_start_makes_no_file_of_its_own_and_syncs_at_most_twice() {
    let dir = tempfile::tempdir().unwrap();
    let open = || troupe_store::file::open_with(dir.path(), "blue", Durability::Fsync).unwrap();
    let lead = open();
    lead.update_roster(&mut |r| r.lead = "lead".into())
        .await
        .unwrap();
    let team_dir = troupe_store::file::team_dir(dir.path(), "blue");
    let files_before = files_under(&team_dir).len();
    let syncs_before = troupe_durable::commit::global().syncs();
    let starts: Vec<_> = (0..TEAMMATES)
        .map(|i| {
            let (lead, mine): (SharedStore, SharedStore) = (lead.clone(), open());
            tokio::spawn(async move {
                let name = format!("mate-{i:02}");
                lead.update_roster(&mut |r| r.members.push(Member::new(name.clone(), "w", 1, 5)))
                    .await
                    .unwrap();
                let lease = mine.acquire_lease(&name).await.unwrap();
                mine.set_usage(&name, &AgentUsage::default()).await.unwrap();
                mine.set_doing(&name, Some("starting")).await.unwrap();
                mine.update_member(&name, &mut |m| m.status = AgentStatus::Working)
                    .await
                    .unwrap();
                lease
            })
        })
        .collect();
    let mut leases = Vec::new();
    for start in starts {
        leases.push(start.await.unwrap());
    }
    let syncs = troupe_durable::commit::global().syncs() - syncs_before;
    let files = files_under(&team_dir);
    eprintln!(
        "{TEAMMATES} starts: {syncs} syncs, {} new files",
        files.len() - files_before
    );
    assert!(
        syncs <= SYNCS_PER_START * TEAMMATES as u64,
        "{TEAMMATES} teammate starts synced {syncs} times, more than {SYNCS_PER_START} each"
    );
    assert_eq!(
        files.len() - files_before,
        1,
        "one member table for them all, no file per teammate: {files:#?}"
    );
    let roster = lead.roster().await.unwrap();
    assert_eq!(roster.members.len(), TEAMMATES);
    assert!(roster
        .members
        .iter()
        .all(|m| m.status == AgentStatus::Working));
    assert_eq!(lead.doing().await.unwrap().len(), TEAMMATES);
    assert_eq!(lead.usages().await.unwrap().len(), TEAMMATES);
    drop(leases);
}
