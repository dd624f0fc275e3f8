//! Whole-file updates are atomic: concurrent readers only ever see a complete version.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code may panic on a broken fixture

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use troupe_durable::atomic::write_atomic;

#[test]
fn readers_never_see_a_half_written_file() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let path = dir.path().join("roster.json");
    // Two large, different versions: a torn or truncated write would match neither.
    let a = vec![b'a'; 512 * 1024];
    let b = vec![b'b'; 700 * 1024];
    write_atomic(&path, &a).unwrap_or_else(|e| panic!("{e}"));
    let done = Arc::new(AtomicBool::new(false));
    let readers: Vec<_> = (0..2)
        .map(|_| {
            let (path, done, a, b) = (path.clone(), done.clone(), a.clone(), b.clone());
            std::thread::spawn(move || {
                let mut reads = 0u64;
                let mut bad = 0u64;
                while !done.load(Ordering::Relaxed) {
                    let got = std::fs::read(&path).unwrap_or_default();
                    if got != a && got != b {
                        bad += 1;
                    }
                    reads += 1;
                }
                (reads, bad)
            })
        })
        .collect();
    for i in 0..60 {
        let next = if i % 2 == 0 { &b } else { &a };
        write_atomic(&path, next).unwrap_or_else(|e| panic!("{e}"));
    }
    done.store(true, Ordering::Relaxed);
    for r in readers {
        let (reads, bad) = r.join().unwrap_or((0, u64::MAX));
        assert!(reads > 0);
        assert_eq!(bad, 0, "a reader saw a partial file");
    }
    // No temp files are left behind.
    let leftovers: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap_or_else(|e| panic!("{e}"))
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n != "roster.json")
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}
