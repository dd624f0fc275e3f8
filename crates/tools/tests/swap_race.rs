//! The symlink swap race, run many times: while another thread keeps exchanging a workspace
//! directory with a symlink to a directory outside, file tool calls aimed inside that directory
//! never create, change or read anything outside the workspace.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code may panic on a broken fixture

mod common;

use common::{listing, Fixture};
use rustix::fs::{renameat_with, RenameFlags, CWD};
use serde_json::json;
use std::os::unix::fs::symlink;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

const ITERATIONS: usize = 2_000;

/// Keeps atomically exchanging `a` and `b` (a directory and a symlink) until told to stop.
fn swapper(a: &Path, b: &Path, stop: &AtomicBool, swaps: &AtomicUsize) {
    while !stop.load(Ordering::Relaxed) {
        renameat_with(CWD, a, CWD, b, RenameFlags::EXCHANGE).unwrap();
        swaps.fetch_add(1, Ordering::Relaxed);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn swapping_a_directory_for_an_outside_symlink_never_leads_a_tool_outside() {
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(
        outside.path().join("victim.txt"),
        "OUTSIDE marker-a marker-b",
    )
    .unwrap();
    std::fs::write(outside.path().join("only-outside.txt"), "OUTSIDE").unwrap();
    let before = listing(outside.path());

    let f = Fixture::new();
    f.write("sub/victim.txt", "INSIDE marker-a");
    let (sub, parked) = (f.root().join("sub"), f.root().join("parked"));
    symlink(outside.path(), &parked).unwrap();

    let stop = Arc::new(AtomicBool::new(false));
    let swaps = Arc::new(AtomicUsize::new(0));
    let thread = {
        let (stop, swaps) = (Arc::clone(&stop), Arc::clone(&swaps));
        let (sub, parked) = (sub.clone(), parked.clone());
        std::thread::spawn(move || swapper(&sub, &parked, &stop, &swaps))
    };

    let (mut succeeded, mut refused) = (0usize, 0usize);
    let mut tally = |is_error: bool| match is_error {
        true => refused += 1,
        false => succeeded += 1,
    };
    for i in 0..ITERATIONS {
        let (from, to) = match i % 2 {
            0 => ("marker-a", "marker-b"),
            _ => ("marker-b", "marker-a"),
        };
        let write = f
            .call(
                "write_file",
                json!({"path": format!("sub/new-{i}.txt"), "content": "PWNED"}),
            )
            .await;
        tally(write.is_error);
        let edit = f
            .call(
                "edit_file",
                json!({"path": "sub/victim.txt", "old_string": from, "new_string": to}),
            )
            .await;
        tally(edit.is_error);
        let read = f.call("read_file", json!({"path": "sub/victim.txt"})).await;
        assert!(!read.content.contains("OUTSIDE"), "read: {}", read.content);
        tally(read.is_error);
        if i % 8 == 0 {
            let grep = f
                .call(
                    "grep",
                    json!({"pattern": "OUTSIDE", "output_mode": "content"}),
                )
                .await;
            assert!(
                grep.content.starts_with("No matches"),
                "grep: {}",
                grep.content
            );
            let glob = f.call("glob", json!({"pattern": "**/*.txt"})).await;
            assert!(
                !glob.content.contains("only-outside"),
                "glob: {}",
                glob.content
            );
        }
    }
    stop.store(true, Ordering::Relaxed);
    thread.join().unwrap();

    assert_eq!(listing(outside.path()), before, "a file appeared outside");
    assert_eq!(
        std::fs::read_to_string(outside.path().join("victim.txt")).unwrap(),
        "OUTSIDE marker-a marker-b",
        "the outside file was changed"
    );
    // The swap really raced the calls: some of them met the symlink, some the directory.
    assert!(swaps.load(Ordering::Relaxed) > 0);
    assert!(
        succeeded > 0 && refused > 0,
        "{succeeded} ok, {refused} refused"
    );
}
