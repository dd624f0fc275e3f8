//! The roster log: records, weights, catch-up across instances, compaction, migration.

use super::*;
use crate::Durability;
use troupe_protocol::AgentStatus;

fn open(dir: &std::path::Path) -> FileStore {
    FileStore::open_with(dir, "team", Durability::OsBuffered).unwrap_or_else(|e| panic!("{e}"))
}

fn ok<T>(r: Result<T, StoreError>) -> T {
    r.unwrap_or_else(|e| panic!("{e}"))
}

fn log_lines(s: &FileStore) -> Vec<String> {
    fs::read_to_string(s.dir().join(LOG))
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect()
}

fn add(s: &FileStore, name: &str) -> Roster {
    ok(s.update_roster(&mut |r| r.members.push(Member::new(name, "helper", 1, 5))))
}

#[test]
fn one_member_change_appends_only_that_member_and_other_instances_catch_up() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let a = open(dir.path());
    let b = open(dir.path());
    ok(a.update_roster(&mut |r| r.lead = "lead".into()));
    for name in ["alice", "bob", "carol"] {
        add(&a, name);
    }
    assert_eq!(ok(b.roster()).members.len(), 3);
    ok(a.update_roster(&mut |r| {
        if let Some(m) = r.get_mut("bob") {
            m.status = AgentStatus::Idle;
        }
    }));
    let lines = log_lines(&a);
    let last = lines.last().cloned().unwrap_or_default();
    assert!(
        last.starts_with("{\"members\":[{\"name\":\"bob\""),
        "{last}"
    );
    assert!(!last.contains("alice"), "{last}");
    // The other instance reads only what was appended, and sees the same roster.
    assert_eq!(ok(b.roster()), ok(a.roster()));
    assert_eq!(
        ok(b.roster()).get("bob").map(|m| m.status),
        Some(AgentStatus::Idle)
    );
    // An update that changes nothing writes nothing.
    ok(b.update_roster(&mut |_| {}));
    assert_eq!(log_lines(&a).len(), lines.len());
    // A fresh instance reads the whole log to the same roster.
    assert_eq!(ok(open(dir.path()).roster()), ok(a.roster()));
}

#[test]
fn only_usage_last_seen_and_activity_are_volatile() {
    let mut before = Roster::new("team", "lead");
    before.members.push(Member::new("alice", "r", 1, 5));
    let mut after = before.clone();
    after.members[0].usage.input_tokens = 10;
    let usage = after.members[0].usage;
    after.members[0].usage_by_model.add("claude-x", &usage);
    after.members[0].last_seen = 9;
    after.members[0].activity = Some("reading".into());
    assert!(matches!(
        record_for(&before, &after),
        Some((RecordRef::Members(_), Weight::Volatile))
    ));
    after.members[0].status = AgentStatus::Idle;
    assert!(matches!(
        record_for(&before, &after),
        Some((RecordRef::Members(_), Weight::Durable))
    ));
    // A new member, a removal, a new order or a new lead: durable, and the last three whole.
    let mut added = before.clone();
    added.members.push(Member::new("bob", "r", 1, 5));
    assert!(matches!(
        record_for(&before, &added),
        Some((RecordRef::Members(_), Weight::Durable))
    ));
    let mut reordered = added.clone();
    reordered.members.reverse();
    assert!(matches!(
        record_for(&added, &reordered),
        Some((RecordRef::Roster(_), Weight::Durable))
    ));
    assert!(matches!(
        record_for(&added, &before),
        Some((RecordRef::Roster(_), Weight::Durable))
    ));
    let mut twice = before.clone();
    twice.members.push(Member::new("bob", "r", 1, 5));
    twice.members.push(Member::new("bob", "r", 2, 5));
    assert!(matches!(
        record_for(&before, &twice),
        Some((RecordRef::Roster(_), _))
    ));
    assert!(record_for(&before, &before).is_none());
}

#[test]
fn removals_and_reorders_read_back_exactly() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let a = open(dir.path());
    let b = open(dir.path());
    for name in ["alice", "bob", "carol"] {
        add(&a, name);
    }
    ok(b.roster());
    // A respawn moves the member to the end (as `Team::spawn` does).
    let want = ok(a.update_roster(&mut |r| {
        r.members.retain(|m| m.name != "alice");
        r.members.push(Member::new("alice", "again", 2, 6));
    }));
    let names: Vec<_> = want.members.iter().map(|m| m.name.as_str()).collect();
    assert_eq!(names, ["bob", "carol", "alice"]);
    assert_eq!(ok(b.roster()), want);
}

#[test]
fn the_log_is_compacted_and_readers_of_the_old_one_notice() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let a = open(dir.path());
    let b = open(dir.path());
    add(&a, "alice");
    ok(b.roster());
    for i in 0..(COMPACT_MIN as u64 + 10) {
        ok(a.update_roster(&mut |r| {
            if let Some(m) = r.get_mut("alice") {
                m.epoch = i + 2;
            }
        }));
    }
    let lines = log_lines(&a);
    assert!(lines.len() < 20, "compacted: {} lines", lines.len());
    assert!(lines[0].starts_with("{\"roster\":"), "{}", lines[0]);
    let want = ok(a.roster());
    assert_eq!(
        want.get("alice").map(|m| m.epoch),
        Some(COMPACT_MIN as u64 + 11)
    );
    // `b` cached the first log: it sees the new inode and reads it all again.
    assert_eq!(ok(b.roster()), want);
}

#[test]
fn a_legacy_roster_json_is_read_then_migrated_on_the_first_update() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let a = open(dir.path());
    let mut old = Roster::new("team", "lead");
    old.members.push(Member::new("alice", "old hand", 3, 5));
    let legacy = a.dir().join(LEGACY);
    fs::write(
        &legacy,
        serde_json::to_vec_pretty(&old).unwrap_or_else(|e| panic!("{e}")),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(ok(a.roster()), old);
    assert!(!a.dir().join(LOG).exists(), "reading migrates nothing");
    add(&a, "bob");
    assert!(
        !legacy.exists(),
        "roster.json is gone once the log holds it"
    );
    let roster = ok(open(dir.path()).roster());
    assert_eq!(roster.lead, "lead");
    assert_eq!(roster.get("alice").map(|m| m.epoch), Some(3));
    assert!(roster.get("bob").is_some());
}

#[test]
fn a_torn_last_record_is_ignored_then_cut_off_and_a_corrupt_line_is_skipped() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let a = open(dir.path());
    add(&a, "alice");
    let path = a.dir().join(LOG);
    let append = |bytes: &[u8]| {
        OpenOptions::new()
            .append(true)
            .open(&path)
            .and_then(|mut f| f.write_all(bytes))
            .unwrap_or_else(|e| panic!("{e}"));
    };
    append(b"{\"members\":[{\"name\":\"ghost\"");
    let fresh = open(dir.path());
    assert_eq!(ok(fresh.roster()).members.len(), 1);
    add(&fresh, "bob");
    let lines = log_lines(&a);
    assert!(lines.iter().all(|l| !l.contains("ghost")), "{lines:?}");
    append(b"not a record\n");
    add(&a, "carol");
    let names: Vec<_> = ok(open(dir.path()).roster())
        .members
        .into_iter()
        .map(|m| m.name)
        .collect();
    assert_eq!(names, ["alice", "bob", "carol"]);
}

#[test]
fn concurrent_writers_in_separate_instances_lose_no_update() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let root = dir.path().to_path_buf();
    add(&open(&root), "counter");
    let threads: Vec<_> = (0..4)
        .map(|t| {
            let root = root.clone();
            std::thread::spawn(move || {
                let s = open(&root);
                for i in 0..150 {
                    add(&s, &format!("m{t}-{i}"));
                    ok(s.update_roster(&mut |r| {
                        if let Some(m) = r.get_mut("counter") {
                            m.epoch += 1;
                        }
                    }));
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap_or_else(|_| panic!("writer panicked"));
    }
    let roster = ok(open(&root).roster());
    assert_eq!(roster.members.len(), 1 + 4 * 150);
    assert_eq!(roster.get("counter").map(|m| m.epoch), Some(1 + 4 * 150));
}

#[test]
fn update_member_appends_one_member_weighs_it_and_others_catch_up() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let a = open(dir.path());
    let b = open(dir.path());
    for name in ["alice", "bob", "carol"] {
        add(&a, name);
    }
    ok(b.roster());
    let written = ok(a.update_member("bob", &mut |m| {
        m.status = AgentStatus::Idle;
        m.name = "renamed".into(); // a rename is ignored
    }));
    assert_eq!(
        written.map(|m| (m.name, m.status)),
        Some(("bob".into(), AgentStatus::Idle))
    );
    let last = log_lines(&a).last().cloned().unwrap_or_default();
    assert!(
        last.starts_with("{\"members\":[{\"name\":\"bob\""),
        "{last}"
    );
    assert!(!last.contains("alice") && !last.contains("carol"), "{last}");
    // The other instance and a fresh one read the same roster; `member` agrees with it.
    assert_eq!(ok(b.roster()), ok(a.roster()));
    assert_eq!(ok(open(dir.path()).roster()), ok(a.roster()));
    assert_eq!(
        ok(b.member("bob")).map(|m| m.status),
        Some(AgentStatus::Idle)
    );
    // No change writes nothing; an unknown member writes nothing and says so.
    let lines = log_lines(&a).len();
    ok(b.update_member("bob", &mut |_| {}));
    assert_eq!(ok(b.update_member("nobody", &mut |m| m.epoch = 9)), None);
    assert_eq!(ok(b.member("nobody")), None);
    assert_eq!(log_lines(&a).len(), lines);
}

#[test]
fn update_member_compacts_like_any_update_and_loses_nothing_under_concurrency() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let root = dir.path().to_path_buf();
    add(&open(&root), "counter");
    add(&open(&root), "other");
    let threads: Vec<_> = (0..4)
        .map(|_| {
            let root = root.clone();
            std::thread::spawn(move || {
                let s = open(&root);
                for _ in 0..150 {
                    ok(s.update_member("counter", &mut |m| m.epoch += 1));
                    ok(s.update_member("other", &mut |m| m.usage.input_tokens += 1));
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap_or_else(|_| panic!("writer panicked"));
    }
    let s = open(&root);
    assert_eq!(ok(s.member("counter")).map(|m| m.epoch), Some(1 + 4 * 150));
    assert_eq!(
        ok(s.member("other")).map(|m| m.usage.input_tokens),
        Some(4 * 150)
    );
    // 1,200 updates against a bound of 256 records: compacted at least once.
    assert!(
        log_lines(&s).len() <= COMPACT_MIN,
        "{}",
        log_lines(&s).len()
    );
}

#[test]
fn a_member_update_reads_its_own_record_by_the_index_and_never_an_older_one() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let a = open(dir.path());
    for name in ["alice", "bob", "carol"] {
        add(&a, name);
    }
    // A fresh instance updates bob by the index: it reads nothing else of the log.
    let fresh = open(dir.path());
    ok(fresh.update_member("bob", &mut |m| m.epoch = 7));
    assert_eq!(fresh.roster_cache().offset, 0, "caught up on nothing");
    assert_eq!(ok(a.member("bob")).map(|m| m.epoch), Some(7));
    // A whole-roster record (a reorder) moves the barrier: bob's place is older than it, so
    // the next update catches up and keeps the reorder's change.
    ok(a.update_roster(&mut |r| {
        r.members.reverse();
        if let Some(m) = r.get_mut("bob") {
            m.role = "reviewer".into();
        }
    }));
    let other = open(dir.path());
    ok(other.update_member("bob", &mut |m| m.epoch += 1));
    let bob = ok(open(dir.path()).member("bob")).unwrap_or_else(|| panic!("bob is gone"));
    assert_eq!((bob.role.as_str(), bob.epoch), ("reviewer", 8));
    // A place naming a record never appended (its writer died in between) is refused.
    let lock = ok(OpenOptions::new()
        .read(true)
        .open(a.roster_path(LOCK))
        .map_err(|e| StoreError::io("open", a.roster_path(LOCK))(e)));
    let info = super::super::roster_index::LogInfo::read(&lock);
    assert!(info.is_some(), "the lock file holds the index");
    let table = ok(a.member_table(false)).unwrap_or_else(|| panic!("a member table"));
    let base = ok(table.slot("carol", false)).unwrap_or_else(|| panic!("carol has a slot"));
    let Some(mut place) = super::super::roster_index::Place::read(&table, base) else {
        panic!("carol has a place");
    };
    place.offset = fs::metadata(a.dir().join(LOG)).map_or(0, |m| m.len());
    ok(place.write(&table, base));
    ok(open(dir.path()).update_member("carol", &mut |m| m.epoch = 40));
    let roster = ok(open(dir.path()).roster());
    assert_eq!(roster.get("carol").map(|m| m.epoch), Some(40));
    assert_eq!(roster.get("alice").map(|m| m.epoch), Some(1));
    assert_eq!(roster.members.len(), 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_name_joins_as_one_appended_record_and_a_known_one_moves_last() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let a = open(dir.path());
    ok(a.update_roster(&mut |r| r.lead = "lead".into()));
    for name in ["alice", "bob"] {
        add(&a, name);
    }
    let before = log_lines(&a).len();
    let joined = ok(crate::RosterStore::join_member(&a, "carol", &mut |seen| {
        assert!(seen.is_none());
        Some(Member::new("ignored", "helper", 1, 5))
    })
    .await);
    assert_eq!(joined.map(|m| m.name), Some("carol".to_string()));
    let lines = log_lines(&a);
    assert_eq!(lines.len(), before + 1);
    assert!(
        lines[before].starts_with("{\"members\":[{\"name\":\"carol\""),
        "{}",
        lines[before]
    );
    // Another instance (and a fresh one) reads it as the whole-roster update would have left it.
    let names = |r: Roster| r.members.into_iter().map(|m| m.name).collect::<Vec<_>>();
    assert_eq!(
        names(ok(open(dir.path()).roster())),
        ["alice", "bob", "carol"]
    );
    // A closure that declines writes nothing.
    let none = ok(crate::RosterStore::join_member(&a, "dave", &mut |_| None).await);
    assert!(none.is_none());
    assert_eq!(log_lines(&a).len(), before + 1);
    // A known name: the closure sees it, and the member goes last (the whole roster's record).
    let again = ok(crate::RosterStore::join_member(&a, "alice", &mut |seen| {
        seen.map(|m| Member::new("alice", "helper", m.epoch + 1, 6))
    })
    .await);
    assert_eq!(again.map(|m| m.epoch), Some(2));
    let roster = ok(open(dir.path()).roster());
    assert_eq!(roster.get("alice").map(|m| m.epoch), Some(2));
    assert_eq!(names(roster), ["bob", "carol", "alice"]);
}
