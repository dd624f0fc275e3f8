//! Presence records: torn and foreign ones are told apart; files are rewritten in place.

use super::*;

#[test]
fn a_record_reads_back_and_a_torn_or_foreign_one_does_not() {
    let record = encode(b"running cargo test");
    assert_eq!(decode(&record), Some(&b"running cargo test"[..]));
    assert_eq!(decode(&encode(b"")), Some(&b""[..]));
    // A longer old record's tail left behind by a write not yet cut to length.
    let mut with_tail = encode(b"short");
    with_tail.extend_from_slice(b"left over from before");
    assert_eq!(decode(&with_tail), Some(&b"short"[..]));
    // Half new, half old: the checksum tells.
    let old = encode(b"reading src/main.rs");
    let new = encode(b"editing src/lib.rs!");
    let mut torn = new[..new.len() - 6].to_vec();
    torn.extend_from_slice(&old[old.len() - 6..]);
    assert_eq!(decode(&torn), None);
    // Cut short, or written by something else.
    assert_eq!(decode(&record[..record.len() - 1]), None);
    assert_eq!(decode(b"running cargo test"), None);
    assert_eq!(decode(b""), None);
}

#[test]
fn presence_is_rewritten_in_place_and_cleared_without_removing_the_file() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let store = FileStore::open_with(dir.path(), "team", crate::Durability::OsBuffered)
        .unwrap_or_else(|e| panic!("{e}"));
    let ok = |r: Result<(), StoreError>| r.unwrap_or_else(|e| panic!("{e}"));
    // Clearing what was never set makes no file.
    ok(store.set_doing("bob", None));
    assert!(!store.presence_dir().join("bob.doing").exists());
    ok(store.set_doing("bob", Some("a much longer description of the work")));
    let path = store.presence_dir().join("bob.doing");
    let inode = |p: &Path| {
        use std::os::unix::fs::MetadataExt;
        fs::metadata(p)
            .map(|m| m.ino())
            .unwrap_or_else(|e| panic!("{e}"))
    };
    let first = inode(&path);
    ok(store.set_doing("bob", Some("short")));
    let doing = store.doing().unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(doing.get("bob").map(String::as_str), Some("short"));
    assert_eq!(inode(&path), first, "rewritten in place, not replaced");
    ok(store.set_doing("bob", None));
    assert!(store.doing().unwrap_or_else(|e| panic!("{e}")).is_empty());
    assert_eq!(inode(&path), first);
    // A file troupe did not write is skipped, not an error.
    ok(fs::write(store.presence_dir().join("eve.usage"), "{}")
        .map_err(|e| StoreError::io("write", &path)(e)));
    let usage = AgentUsage::default();
    ok(store.set_usage("bob", &usage));
    let usages = store.usages().unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(usages.keys().collect::<Vec<_>>(), ["bob"]);
}
