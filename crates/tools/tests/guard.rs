//! The workspace path guard: nothing outside the root, symlinks followed before the check.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code may panic on a broken fixture

mod common;

use common::{err, ok, Fixture};
use serde_json::json;
use std::os::unix::fs::symlink;
use std::path::Path;
use troupe_tools::{GuardError, Workspace};

#[test]
fn relative_and_absolute_paths_inside_resolve() {
    let f = Fixture::new();
    f.write("src/a.rs", "x");
    let ws = &f.ctx.workspace;
    let expected = f.root().join("src/a.rs");
    assert_eq!(ws.resolve("src/a.rs").unwrap(), expected);
    assert_eq!(ws.resolve("./src/../src/a.rs").unwrap(), expected);
    assert_eq!(ws.resolve(expected.to_str().unwrap()).unwrap(), expected);
    assert_eq!(ws.resolve(".").unwrap(), f.root());
    assert_eq!(ws.display(&expected), "src/a.rs");
    assert_eq!(ws.display(f.root()), ".");
}

#[test]
fn root_given_through_a_symlink_is_canonical() {
    let f = Fixture::new();
    let real = f.root().join("real");
    std::fs::create_dir(&real).unwrap();
    symlink(&real, f.root().join("alias")).unwrap();
    let ws = Workspace::new(f.root().join("alias")).unwrap();
    assert_eq!(ws.root(), real);
    // A path spelled through the alias is still inside.
    let spelled = f.root().join("alias/new.txt");
    assert_eq!(
        ws.resolve_for_write(spelled.to_str().unwrap()).unwrap(),
        real.join("new.txt")
    );
}

#[test]
fn workspace_root_must_exist() {
    let f = Fixture::new();
    assert!(matches!(
        Workspace::new(f.root().join("missing")),
        Err(GuardError::Root { .. })
    ));
    f.write("file", "x");
    assert!(matches!(
        Workspace::new(f.root().join("file")),
        Err(GuardError::RootNotDir(_))
    ));
}

#[test]
fn parent_escapes_are_refused_and_name_path_and_workspace() {
    let f = Fixture::new();
    std::fs::create_dir(f.root().join("a")).unwrap();
    let ws = &f.ctx.workspace;
    for path in ["../x", "a/../../x", "missing/../../x", "/etc/passwd", ".."] {
        let read = ws.resolve(path).unwrap_err();
        assert!(
            matches!(read, GuardError::Escapes { .. }),
            "{path}: {read:?}"
        );
        let message = read.to_string();
        assert!(message.contains(path), "{message}");
        assert!(
            message.contains(&f.root().display().to_string()),
            "{message}"
        );
        let write = ws.resolve_for_write(path).unwrap_err();
        assert!(
            matches!(write, GuardError::Escapes { .. }),
            "{path}: {write:?}"
        );
    }
}

#[test]
fn missing_files_are_not_found_for_reads_but_fine_for_writes() {
    let f = Fixture::new();
    let ws = &f.ctx.workspace;
    assert!(matches!(
        ws.resolve("nope.txt"),
        Err(GuardError::NotFound { .. })
    ));
    assert_eq!(
        ws.resolve_for_write("new/dir/file.txt").unwrap(),
        f.root().join("new/dir/file.txt")
    );
    assert!(matches!(ws.resolve(""), Err(GuardError::Empty { .. })));
    // `..` after a missing directory cannot be checked against symlinks: refused.
    assert!(matches!(
        ws.resolve_for_write("new/../file.txt"),
        Err(GuardError::ParentOfMissing { .. })
    ));
}

#[test]
fn symlinks_pointing_outside_are_refused() {
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret"), "s").unwrap();
    let f = Fixture::new();
    symlink(outside.path(), f.root().join("out")).unwrap();
    symlink(outside.path().join("secret"), f.root().join("secret_link")).unwrap();
    symlink(outside.path().join("nothing"), f.root().join("dangling")).unwrap();
    let ws = &f.ctx.workspace;
    for path in ["out/secret", "secret_link", "out"] {
        let read = ws.resolve(path).unwrap_err();
        assert!(
            matches!(read, GuardError::SymlinkEscapes { .. }),
            "{path}: {read:?}"
        );
    }
    for path in ["out/secret", "secret_link", "out/new.txt", "dangling"] {
        let write = ws.resolve_for_write(path).unwrap_err();
        assert!(
            matches!(write, GuardError::SymlinkEscapes { .. }),
            "{path}: {write:?}"
        );
    }
}

#[test]
fn symlinks_within_the_workspace_are_followed() {
    let f = Fixture::new();
    f.write("real/file.txt", "hi");
    symlink(f.root().join("real"), f.root().join("link")).unwrap();
    assert_eq!(
        f.ctx.workspace.resolve("link/file.txt").unwrap(),
        f.root().join("real/file.txt")
    );
}

#[tokio::test]
async fn tools_refuse_paths_outside_the_workspace() {
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret"), "top secret").unwrap();
    let f = Fixture::new();
    symlink(outside.path(), f.root().join("out")).unwrap();

    let message = err(f.call("read_file", json!({"path": "/etc/passwd"})).await);
    assert!(message.contains("outside the workspace"), "{message}");
    let message = err(f.call("read_file", json!({"path": "out/secret"})).await);
    assert!(message.contains("symlink"), "{message}");
    assert!(!message.contains("top secret"));

    err(f
        .call("write_file", json!({"path": "out/new", "content": "x"}))
        .await);
    err(f
        .call("write_file", json!({"path": "../escaped", "content": "x"}))
        .await);
    assert!(!outside.path().join("new").exists());
    assert!(!f.root().parent().unwrap().join("escaped").exists());

    err(f
        .call(
            "edit_file",
            json!({"path": "out/secret", "old_string": "top", "new_string": "no"}),
        )
        .await);
    assert_eq!(
        std::fs::read_to_string(outside.path().join("secret")).unwrap(),
        "top secret"
    );
    err(f.call("glob", json!({"pattern": "*", "path": ".."})).await);
    err(f
        .call("grep", json!({"pattern": "secret", "path": "out"}))
        .await);

    // An absolute path inside the workspace is fine.
    f.write("inside.txt", "hello");
    let inside = f.root().join("inside.txt");
    let text = ok(f
        .call("read_file", json!({"path": inside.to_str().unwrap()}))
        .await);
    assert!(text.contains("hello"));
}

#[test]
fn commands_start_where_troupe_was_started_inside_the_root() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    std::fs::create_dir_all(root.join("crates/app")).unwrap();
    let ws = Workspace::new(&root).unwrap();
    assert_eq!(ws.start_dir(), root);
    let below = ws.clone().with_start(&root.join("crates/app"));
    assert_eq!(below.start_dir(), root.join("crates/app"));
    // Outside the root, or the root itself: the root.
    assert_eq!(ws.clone().with_start(Path::new("/")).start_dir(), root);
    assert_eq!(ws.clone().with_start(&root).start_dir(), root);
    // A worktree standing in for the workspace starts in the same relative folder, while it
    // has one; else at its root.
    let tree = tempfile::tempdir().unwrap();
    let tree_root = tree.path().canonicalize().unwrap();
    let bound = Workspace::new(&tree_root)
        .unwrap()
        .with_added_dirs_of(&below);
    assert_eq!(bound.start_dir(), tree_root);
    std::fs::create_dir_all(tree_root.join("crates/app")).unwrap();
    assert_eq!(bound.start_dir(), tree_root.join("crates/app"));
}

#[test]
fn the_working_folder_is_shared_by_clones_and_each_opened_workspace_has_its_own() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    std::fs::create_dir_all(root.join("a/b")).unwrap();
    let ws = Workspace::new(&root).unwrap();
    let clone = ws.clone();
    assert_eq!(ws.set_cwd(&root.join("a/b")), troupe_tools::CwdChange::Kept);
    assert_eq!(clone.cwd(), root.join("a/b"), "a subagent's clone follows");
    // Another agent opened at the same root (a teammate) starts where it started.
    assert_eq!(Workspace::new(&root).unwrap().cwd(), root);
    assert_eq!(ws.clone().with_start(&root.join("a")).cwd(), root.join("a"));
    // Gone, or outside: back at the start.
    std::fs::remove_dir(root.join("a/b")).unwrap();
    assert_eq!(ws.cwd(), root);
    assert_eq!(
        ws.set_cwd(Path::new("/")),
        troupe_tools::CwdChange::Reset(root.clone())
    );
    assert_eq!(clone.cwd(), root);
}
