//! Presence records: in the member's slot, rewritten in place; an older version's files are
//! read, and its presence folder then removed.

use super::*;

fn inode(p: &Path) -> u64 {
    use std::os::unix::fs::MetadataExt;
    fs::metadata(p)
        .map(|m| m.ino())
        .unwrap_or_else(|e| panic!("{e}"))
}

fn ok<T>(r: Result<T, StoreError>) -> T {
    r.unwrap_or_else(|e| panic!("{e}"))
}

/// A store of the team `team` under `dir`, writing without syncs.
fn store_in(dir: &Path) -> FileStore {
    ok(FileStore::open_with(
        dir,
        "team",
        crate::Durability::OsBuffered,
    ))
}

/// Writes `bytes` to `dir/name`, making `dir`.
fn put(dir: &Path, name: &str, bytes: &[u8]) {
    ok(fs::create_dir_all(dir)
        .and_then(|()| fs::write(dir.join(name), bytes))
        .map_err(|e| StoreError::io("write", dir)(e)));
}

#[test]
fn presence_is_rewritten_in_place_in_the_members_slot_and_cleared_without_removing_it() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let store = store_in(dir.path());
    // Clearing what was never set makes nothing.
    ok(store.set_doing("bob", None));
    let path = crate::live::members_path(store.dir());
    assert!(!path.exists());
    ok(store.set_doing("bob", Some("a much longer description of the work")));
    let first = inode(&path);
    ok(store.set_doing("bob", Some("short")));
    let usage = AgentUsage::default();
    ok(store.set_usage("bob", &usage));
    ok(store.set_doing("amy", Some("reading")));
    let doing = ok(store.doing());
    assert_eq!(doing.get("bob").map(String::as_str), Some("short"));
    assert_eq!(doing.get("amy").map(String::as_str), Some("reading"));
    assert_eq!(inode(&path), first, "rewritten in place, not replaced");
    ok(store.set_doing("bob", None));
    assert_eq!(ok(store.doing()).keys().collect::<Vec<_>>(), ["amy"]);
    assert_eq!(inode(&path), first);
    assert_eq!(ok(store.usages()).keys().collect::<Vec<_>>(), ["bob"]);
    // One file for the team: nothing else was made for its members' presence.
    assert!(path.is_file());
    assert!(!store.dir().join(LEGACY_LIVE).exists());
    assert!(!store.dir().join(LEGACY).exists());
    // Work described at length is cut to fit its place, at a character's boundary.
    let long = "é".repeat(3000);
    ok(store.set_doing("amy", Some(&long)));
    let cut = ok(store.doing()).remove("amy").unwrap_or_default();
    assert!(
        cut.len() < long.len() && long.starts_with(&cut),
        "{}",
        cut.len()
    );
    // A file troupe did not write is skipped, not an error.
    put(&store.dir().join(LEGACY_LIVE), "eve.lock", b"{}");
    assert_eq!(ok(store.usages()).keys().collect::<Vec<_>>(), ["bob"]);
}

#[test]
fn an_older_versions_member_files_are_read_and_a_slot_wins() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let store = store_in(dir.path());
    let live = store.dir().join(LEGACY_LIVE);
    let file = |name: &str, usage: &[u8], doing: &[u8]| {
        let (at, end) = (LEGACY_USAGE.start as usize, LEGACY_DOING.start as usize);
        let mut bytes = vec![0u8; end];
        let record = records::encode(usage);
        bytes[at..at + record.len()].copy_from_slice(&record);
        bytes.extend_from_slice(&records::encode(doing));
        put(&live, &format!("{name}.lock"), &bytes);
    };
    let usage = serde_json::to_vec(&AgentUsage::default()).unwrap_or_default();
    file("amy", &usage, b"reading the old layout");
    file("bob", &usage, b"stale");
    ok(store.set_doing("bob", Some("fresh")));
    let doing = ok(store.doing());
    assert_eq!(
        doing.get("amy").map(String::as_str),
        Some("reading the old layout")
    );
    assert_eq!(doing.get("bob").map(String::as_str), Some("fresh"));
    assert_eq!(ok(store.usages()).len(), 2);
}

#[test]
fn an_older_versions_presence_is_read_until_the_first_write_removes_it() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let store = store_in(dir.path());
    let legacy = store.dir().join(LEGACY);
    let write = |name: &str, value: &[u8]| put(&legacy, name, &records::encode(value));
    write("amy.doing", b"reading the old layout");
    write("amy.usage", b"{}");
    write("bob.doing", b"stale");
    let reader = store_in(dir.path());
    // Read by an instance that has not written yet; a member's own file wins.
    ok(store.set_doing("bob", Some("fresh")));
    assert!(!legacy.exists(), "the first write removed the old folder");
    write("amy.doing", b"reading the old layout");
    write("bob.doing", b"stale");
    let doing = ok(reader.doing());
    assert_eq!(
        doing.get("amy").map(String::as_str),
        Some("reading the old layout")
    );
    assert_eq!(doing.get("bob").map(String::as_str), Some("fresh"));
}
