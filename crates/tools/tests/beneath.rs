//! File tools open paths beneath a handle of the workspace root: a path checked inside and then
//! swapped to lead outside is refused by the kernel, while symlinks that stay inside still work.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code may panic on a broken fixture

mod common;

use common::{err, listing, ok, Fixture};
use serde_json::json;
use std::os::unix::fs::{symlink, PermissionsExt};
use std::path::Path;
use troupe_tools::{GuardError, Parents, Previous};

/// An outside directory holding one file, and a fixture whose `sub` is a real directory.
fn fixture_with_outside() -> (Fixture, tempfile::TempDir) {
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret.txt"), "OUTSIDE").unwrap();
    let f = Fixture::new();
    f.write("sub/secret.txt", "INSIDE");
    (f, outside)
}

/// Replaces the workspace's `sub` directory with a symlink to `outside` (keeping the real one
/// as `sub.real`), as a racing process would after the guard checked a path.
fn swap_in_symlink(f: &Fixture, outside: &Path) {
    std::fs::rename(f.root().join("sub"), f.root().join("sub.real")).unwrap();
    symlink(outside, f.root().join("sub")).unwrap();
}

fn assert_changed(err: &std::io::Error) {
    let inner = err.get_ref().and_then(|e| e.downcast_ref::<GuardError>());
    assert!(
        matches!(inner, Some(GuardError::Changed { .. })),
        "expected a Changed refusal, got {err:?}"
    );
    let message = err.to_string();
    assert!(message.contains("led outside the workspace"), "{message}");
    assert!(message.contains("refused"), "{message}");
}

#[test]
fn a_write_checked_inside_is_refused_once_its_directory_is_swapped_for_a_symlink() {
    let (f, outside) = fixture_with_outside();
    let ws = &f.ctx.workspace;
    let new_file = ws.resolve_for_write("sub/new.txt").unwrap();
    let existing = ws.resolve_for_write("sub/secret.txt").unwrap();
    swap_in_symlink(&f, outside.path());

    for target in [&new_file, &existing] {
        let refused = ws
            .write_atomic(target, b"PWNED", Parents::Create)
            .unwrap_err();
        assert_changed(&refused);
        let refused = ws
            .write_atomic(target, b"PWNED", Parents::MustExist)
            .unwrap_err();
        assert_changed(&refused);
    }
    assert_eq!(listing(outside.path()), ["secret.txt"]);
    assert_eq!(
        std::fs::read_to_string(outside.path().join("secret.txt")).unwrap(),
        "OUTSIDE"
    );
}

#[test]
fn a_read_checked_inside_is_refused_once_its_directory_is_swapped_for_a_symlink() {
    let (f, outside) = fixture_with_outside();
    let ws = &f.ctx.workspace;
    let path = ws.resolve("sub/secret.txt").unwrap();
    swap_in_symlink(&f, outside.path());
    assert_changed(&ws.open_read(&path).unwrap_err());
    assert_changed(&ws.metadata(&path).unwrap_err());
}

#[test]
fn missing_parents_are_made_beneath_the_root_and_not_through_a_swapped_symlink() {
    let (f, outside) = fixture_with_outside();
    let ws = &f.ctx.workspace;
    let deep = ws.resolve_for_write("sub/a/b/c.txt").unwrap();
    swap_in_symlink(&f, outside.path());
    assert_changed(&ws.write_atomic(&deep, b"x", Parents::Create).unwrap_err());
    assert_eq!(listing(outside.path()), ["secret.txt"]);

    let fresh = ws.resolve_for_write("new/a/b/c.txt").unwrap();
    assert_eq!(
        ws.write_atomic(&fresh, b"made", Parents::Create).unwrap(),
        Previous::Nothing
    );
    assert_eq!(f.read("new/a/b/c.txt"), "made");
    let elsewhere = ws.resolve_for_write("other/c.txt").unwrap();
    let refused = ws
        .write_atomic(&elsewhere, b"x", Parents::MustExist)
        .unwrap_err();
    assert_eq!(refused.kind(), std::io::ErrorKind::NotFound, "{refused}");
}

#[tokio::test]
async fn escapes_are_refused_by_every_file_tool_and_nothing_lands_outside() {
    let (f, outside) = fixture_with_outside();
    symlink(outside.path(), f.root().join("out")).unwrap();
    let abs_outside = outside.path().join("made.txt");
    let abs_outside = abs_outside.to_str().unwrap();
    for path in ["../x.txt", "sub/../../x.txt", abs_outside, "out/made.txt"] {
        let message = err(f
            .call("write_file", json!({"path": path, "content": "PWNED"}))
            .await);
        assert!(
            message.contains("outside the workspace"),
            "{path}: {message}"
        );
    }
    for path in ["out/secret.txt", "../secret.txt"] {
        let message = err(f.call("read_file", json!({"path": path})).await);
        assert!(
            message.contains("outside the workspace"),
            "{path}: {message}"
        );
        assert!(!message.contains("OUTSIDE"), "{message}");
        let message = err(f
            .call(
                "edit_file",
                json!({"path": path, "old_string": "OUTSIDE", "new_string": "PWNED"}),
            )
            .await);
        assert!(
            message.contains("outside the workspace"),
            "{path}: {message}"
        );
    }
    let found = ok(f.call("grep", json!({"pattern": "OUTSIDE"})).await);
    assert!(found.starts_with("No matches"), "{found}");
    assert_eq!(listing(outside.path()), ["secret.txt"]);
    assert_eq!(
        std::fs::read_to_string(outside.path().join("secret.txt")).unwrap(),
        "OUTSIDE"
    );
    assert!(!f.root().parent().unwrap().join("x.txt").exists());
}

#[tokio::test]
async fn symlinks_that_stay_inside_keep_working() {
    let f = Fixture::new();
    f.write("real/file.txt", "one\n");
    // A relative directory link, an absolute one, and a link to a file.
    symlink("real", f.root().join("rel_link")).unwrap();
    symlink(f.root().join("real"), f.root().join("abs_link")).unwrap();
    symlink("real/file.txt", f.root().join("file_link")).unwrap();

    ok(f.call(
        "write_file",
        json!({"path": "rel_link/a.txt", "content": "a"}),
    )
    .await);
    ok(f.call(
        "write_file",
        json!({"path": "abs_link/deeper/b.txt", "content": "b"}),
    )
    .await);
    assert_eq!(f.read("real/a.txt"), "a");
    assert_eq!(f.read("real/deeper/b.txt"), "b");

    // Writing through a link to a file changes the file and leaves the link a link.
    ok(f.call(
        "edit_file",
        json!({"path": "file_link", "old_string": "one", "new_string": "two"}),
    )
    .await);
    assert_eq!(f.read("real/file.txt"), "two\n");
    assert!(std::fs::symlink_metadata(f.root().join("file_link"))
        .unwrap()
        .file_type()
        .is_symlink());
    let text = ok(f
        .call("read_file", json!({"path": "abs_link/file.txt"}))
        .await);
    assert!(text.contains("two"), "{text}");
    // `..` that stays inside is fine too.
    let text = ok(f
        .call("read_file", json!({"path": "rel_link/../real/a.txt"}))
        .await);
    assert!(text.contains('a'), "{text}");
    let found = ok(f
        .call("grep", json!({"pattern": "two", "path": "abs_link"}))
        .await);
    assert_eq!(found, "real/file.txt");
}

#[tokio::test]
async fn atomic_writes_leave_no_temp_files_and_keep_permissions() {
    let f = Fixture::new();
    f.write("bin/run.sh", "#!/bin/sh\necho old\n");
    let script = f.root().join("bin/run.sh");
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o750)).unwrap();
    ok(f.call(
        "edit_file",
        json!({"path": "bin/run.sh", "old_string": "old", "new_string": "new"}),
    )
    .await);
    ok(f.call(
        "write_file",
        json!({"path": "bin/other.txt", "content": "x"}),
    )
    .await);
    assert_eq!(
        std::fs::metadata(&script).unwrap().permissions().mode() & 0o777,
        0o750
    );
    assert_eq!(listing(&f.root().join("bin")), ["other.txt", "run.sh"]);
}

#[tokio::test]
async fn a_fifo_is_refused_rather_than_blocking_a_read() {
    let f = Fixture::new();
    let fifo = f.root().join("pipe");
    rustix::fs::mknodat(
        rustix::fs::CWD,
        &fifo,
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_bits_truncate(0o600),
        0,
    )
    .unwrap();
    let message = err(f.call("read_file", json!({"path": "pipe"})).await);
    assert!(message.contains("not a regular file"), "{message}");
}

#[test]
fn a_path_in_an_added_directory_is_opened_beneath_that_directorys_handle() {
    let (f, outside) = fixture_with_outside();
    let extra = tempfile::tempdir().unwrap();
    let extra_root = extra.path().canonicalize().unwrap();
    std::fs::create_dir(extra_root.join("sub")).unwrap();
    std::fs::write(extra_root.join("sub/notes.txt"), "ADDED").unwrap();
    let ws = troupe_tools::Workspace::new(f.root())
        .unwrap()
        .with_added_dirs(std::slice::from_ref(&extra_root))
        .unwrap();
    let inside = extra_root.join("sub/notes.txt");
    let path = ws.resolve(&inside.display().to_string()).unwrap();
    let mut text = String::new();
    std::io::Read::read_to_string(&mut ws.open_read(&path).unwrap(), &mut text).unwrap();
    assert_eq!(text, "ADDED");
    let target = ws
        .resolve_for_write(&extra_root.join("sub/new.txt").display().to_string())
        .unwrap();
    // Checked inside the added directory, then its `sub` swapped for a symlink leading out: the
    // kernel refuses both the read and the write.
    std::fs::rename(extra_root.join("sub"), extra_root.join("sub.real")).unwrap();
    symlink(outside.path(), extra_root.join("sub")).unwrap();
    assert_changed(&ws.open_read(&path).unwrap_err());
    assert_changed(
        &ws.write_atomic(&target, b"PWNED", Parents::Create)
            .unwrap_err(),
    );
    assert_eq!(listing(outside.path()), ["secret.txt"]);
    // Outside every root, by name.
    let elsewhere = outside.path().join("secret.txt").display().to_string();
    assert!(matches!(
        ws.resolve(&elsewhere),
        Err(GuardError::Escapes { .. })
    ));
}
