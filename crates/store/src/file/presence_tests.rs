//! Presence records: in the member's one file, rewritten in place; an older version's files
//! are read, then removed.

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

#[test]
fn presence_is_rewritten_in_place_in_the_members_file_and_cleared_without_removing_it() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let store = ok(FileStore::open_with(
        dir.path(),
        "team",
        crate::Durability::OsBuffered,
    ));
    // Clearing what was never set makes no file.
    ok(store.set_doing("bob", None));
    let path = store.member_file_path("bob");
    assert!(!path.exists());
    ok(store.set_doing("bob", Some("a much longer description of the work")));
    let first = inode(&path);
    ok(store.set_doing("bob", Some("short")));
    let usage = AgentUsage::default();
    ok(store.set_usage("bob", &usage));
    let doing = ok(store.doing());
    assert_eq!(doing.get("bob").map(String::as_str), Some("short"));
    assert_eq!(inode(&path), first, "rewritten in place, not replaced");
    ok(store.set_doing("bob", None));
    assert!(ok(store.doing()).is_empty());
    assert_eq!(inode(&path), first);
    assert_eq!(ok(store.usages()).keys().collect::<Vec<_>>(), ["bob"]);
    // The member's one file: nothing else was made for its presence.
    let entries = fs::read_dir(store.dir().join(LIVE)).map_or(0, Iterator::count);
    assert_eq!(entries, 1);
    assert!(!store.dir().join(LEGACY).exists());
    // A file troupe did not write is skipped, not an error.
    ok(fs::write(store.member_file_path("eve"), "{}")
        .map_err(|e| StoreError::io("write", &path)(e)));
    assert_eq!(ok(store.usages()).keys().collect::<Vec<_>>(), ["bob"]);
}

#[test]
fn an_older_versions_presence_is_read_until_the_first_write_removes_it() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let store = ok(FileStore::open_with(
        dir.path(),
        "team",
        crate::Durability::OsBuffered,
    ));
    let legacy = store.dir().join(LEGACY);
    let write = |name: &str, value: &[u8]| {
        ok(fs::create_dir_all(&legacy)
            .and_then(|()| fs::write(legacy.join(name), member_file::encode(value)))
            .map_err(|e| StoreError::io("write", &legacy)(e)));
    };
    write("amy.doing", b"reading the old layout");
    write("amy.usage", b"{}");
    write("bob.doing", b"stale");
    let reader = ok(FileStore::open_with(
        dir.path(),
        "team",
        crate::Durability::OsBuffered,
    ));
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
