//! Directories added to the workspace (`--add-dir`, `permissions.additionalDirectories`) through
//! the binary: their files can be read, searched and edited by absolute path; paths outside
//! every root, and symlinks leading out of an added directory, are refused; `Read` deny rules
//! still hide files in them from every reading tool; commands allowed to write may write there.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code may panic on a broken fixture

mod common;

use common::{headless_go, result_json, run, script_bash_calls, stderr, subcommand, troupe};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use troupe_testkit::{FakeServer, Recorded, Step, TempWorkspace, Wire};

/// A directory outside the workspace, by its canonical path.
fn outside_dir() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let real = dir.path().canonicalize().unwrap();
    (dir, real)
}

fn p(path: &Path) -> String {
    path.display().to_string()
}

/// The tool result each of the lead's calls got, in order (text, is_error).
fn results(server: &FakeServer) -> Vec<(String, bool)> {
    server.requests_for("lead")[1..]
        .iter()
        .map(|r: &Recorded| r.last_tool_result().expect("a tool result"))
        .collect()
}

fn script(server: &FakeServer, calls: Vec<(&str, Value)>) {
    let steps = calls
        .into_iter()
        .map(|(tool, input)| Step::tool(tool, input))
        .chain([Step::text("done")]);
    server.script("lead", steps);
}

#[test]
fn an_added_directory_can_be_read_searched_and_edited_and_nothing_else_outside() {
    let ws = TempWorkspace::new();
    let (_extra_dir, extra) = outside_dir();
    let (_other_dir, other) = outside_dir();
    std::fs::write(extra.join("notes.txt"), "hello from extra\n").unwrap();
    std::fs::create_dir(extra.join("sub")).unwrap();
    std::fs::write(extra.join("sub/deep.txt"), "deep hello\n").unwrap();
    std::fs::write(other.join("secret.txt"), "TOP SECRET\n").unwrap();
    std::os::unix::fs::symlink(&other, extra.join("link")).unwrap();
    let server = FakeServer::start();
    script(
        &server,
        vec![
            ("read_file", json!({"path": p(&extra.join("notes.txt"))})),
            (
                "edit_file",
                json!({"path": p(&extra.join("notes.txt")), "old_string": "hello", "new_string": "goodbye"}),
            ),
            (
                "write_file",
                json!({"path": p(&extra.join("sub/new.txt")), "content": "made here\n"}),
            ),
            (
                "grep",
                json!({"pattern": "hello", "path": p(&extra), "output_mode": "content"}),
            ),
            ("glob", json!({"pattern": "**/*.txt", "path": p(&extra)})),
            ("read_file", json!({"path": p(&other.join("secret.txt"))})),
            (
                "read_file",
                json!({"path": p(&extra.join("link/secret.txt"))}),
            ),
            (
                "write_file",
                json!({"path": p(&extra.join("link/planted.txt")), "content": "x"}),
            ),
        ],
    );
    let out = headless_go(
        ws.path(),
        &server,
        &[
            "--permission-mode",
            "acceptEdits",
            &format!("--add-dir={}", p(&extra)),
        ],
        &[] as &[(&str, &str)],
    );
    assert!(
        !stderr(&out).contains("--add-dir is accepted"),
        "{}",
        stderr(&out)
    );
    let r = results(&server);
    assert!(!r[0].1 && r[0].0.contains("hello from extra"), "{:?}", r[0]);
    assert!(!r[1].1, "{:?}", r[1]);
    assert_eq!(
        std::fs::read_to_string(extra.join("notes.txt")).unwrap(),
        "goodbye from extra\n"
    );
    assert!(!r[2].1, "{:?}", r[2]);
    assert_eq!(
        std::fs::read_to_string(extra.join("sub/new.txt")).unwrap(),
        "made here\n"
    );
    assert!(
        !r[3].1 && r[3].0.contains("deep hello") && r[3].0.contains(&p(&extra)),
        "{:?}",
        r[3]
    );
    assert!(
        !r[4].1 && r[4].0.contains("new.txt") && r[4].0.contains("notes.txt"),
        "{:?}",
        r[4]
    );
    let (text, is_error) = &r[5];
    assert!(
        *is_error && text.contains("outside the workspace"),
        "{text}"
    );
    let (text, is_error) = &r[6];
    assert!(*is_error && text.contains("symlink"), "{text}");
    assert!(r.iter().all(|(text, _)| !text.contains("TOP SECRET")));
    assert!(r[7].1, "{:?}", r[7]);
    assert!(!other.join("planted.txt").exists());
    assert_eq!(result_json(&out)["result"], "done");
}

#[test]
fn a_read_deny_rule_hides_files_of_an_added_directory_from_every_reading_tool() {
    let ws = TempWorkspace::new();
    let (_extra_dir, extra) = outside_dir();
    std::fs::write(extra.join("secret.env"), "TOKEN=hunter2\n").unwrap();
    std::fs::write(extra.join("app.txt"), "TOKEN comes from the environment\n").unwrap();
    ws.write(".env", "TOKEN=swordfish\n");
    ws.write(
        ".claude/settings.json",
        json!({"permissions": {
            "deny": [format!("Read(/{})", p(&extra.join("secret.env"))), "Read(./.env)"],
            "additionalDirectories": [p(&extra)],
        }})
        .to_string(),
    );
    let server = FakeServer::start();
    script(
        &server,
        vec![
            ("read_file", json!({"path": p(&extra.join("secret.env"))})),
            (
                "grep",
                json!({"pattern": "TOKEN", "path": p(&extra), "output_mode": "content"}),
            ),
            ("glob", json!({"pattern": "*", "path": p(&extra)})),
            // The workspace's own: a search over the whole root names neither the file nor
            // what is in it.
            (
                "grep",
                json!({"pattern": "TOKEN", "output_mode": "content"}),
            ),
            ("glob", json!({"pattern": "**/*"})),
        ],
    );
    // Deny rules hold even in bypassPermissions.
    headless_go(
        ws.path(),
        &server,
        &["--permission-mode", "bypassPermissions"],
        &[] as &[(&str, &str)],
    );
    let r = results(&server);
    for (i, (text, _)) in r.iter().enumerate() {
        for secret in ["hunter2", "swordfish"] {
            assert!(!text.contains(secret), "call {i} revealed {secret}: {text}");
        }
        // The refusal of the read names the file; no search lists it.
        assert!(i == 0 || !text.contains("secret.env"), "call {i}: {text}");
    }
    assert!(r[0].1 && r[0].0.contains("secret.env"), "{:?}", r[0]);
    assert!(r[1].0.contains("app.txt"), "{:?}", r[1]);
    assert!(r[2].0.contains("app.txt"), "{:?}", r[2]);
    assert!(!r[4].0.lines().any(|l| l == ".env"), "{:?}", r[4]);
}

#[test]
fn a_command_allowed_to_write_the_workspace_may_write_an_added_directory_only() {
    let check = subcommand(Path::new("/"), &["sandbox", "check", "--json"]);
    let report: Value = serde_json::from_slice(&check.stdout).unwrap_or(Value::Null);
    let landlock = report["landlock"]["available"] == true;
    if !troupe_testkit::requirement(&format!("a usable Landlock ({report})"), landlock) {
        return;
    }
    let ws = TempWorkspace::new();
    let (_extra_dir, extra) = outside_dir();
    let (_other_dir, other) = outside_dir();
    let (added, escape) = (extra.join("from-bash"), other.join("escape"));
    let server = FakeServer::start();
    script_bash_calls(
        &server,
        &[
            &format!("touch {}", p(&added)),
            &format!("touch {}", p(&escape)),
        ],
    );
    let out = headless_go(
        ws.path(),
        &server,
        &[
            "--allowedTools",
            "Bash(touch:*)",
            &format!("--add-dir={}", p(&extra)),
        ],
        &[] as &[(&str, &str)],
    );
    assert_eq!(result_json(&out)["result"], "done");
    let r = results(&server);
    assert!(!r[0].1, "{:?}", r[0]);
    assert!(added.exists());
    assert!(r[1].1 && r[1].0.contains("Permission denied"), "{:?}", r[1]);
    assert!(!escape.exists());
}

#[test]
fn an_added_directory_that_does_not_exist_is_a_clear_error() {
    let ws = TempWorkspace::new();
    let server = FakeServer::start();
    let missing = ws.path().join("no-such-dir");
    let out = run(troupe(ws.path(), &server, Wire::Anthropic).args([
        "-p",
        "go",
        &format!("--add-dir={}", p(&missing)),
    ]));
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(
        err.contains("--add-dir") && err.contains("no-such-dir"),
        "{err}"
    );
    assert!(server.requests_for("lead").is_empty());
}
