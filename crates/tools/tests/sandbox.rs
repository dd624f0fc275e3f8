//! The bash tool under the OS sandbox: what each level lets a command (and everything it starts)
//! write, with real processes on this machine's Landlock.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code may panic on a broken fixture

mod common;

use common::{err, ok, Fixture};
use serde_json::json;
use std::path::Path;
use std::sync::Arc;
use troupe_tools::{Sandbox, SandboxConfig, SandboxMode};

/// Skips (loudly) where the kernel has no usable Landlock; fails under CI, which must have it.
fn landlock() -> bool {
    let support = troupe_tools::sandbox::support();
    troupe_testkit::requirement(
        &format!("a usable Landlock ({support:?})"),
        support.is_available(),
    )
}

async fn bash(f: &Fixture, command: &str) -> troupe_tools::ToolOutput {
    f.call("bash", json!({ "command": command })).await
}

fn quoted(path: &Path) -> String {
    format!("'{}'", path.display())
}

#[tokio::test]
async fn read_only_refuses_writes_in_the_workspace_and_outside() {
    if !landlock() {
        return;
    }
    let f = Fixture::new().sandboxed(Sandbox::ReadOnly);
    let outside = tempfile::tempdir().unwrap();
    let text = err(bash(&f, "touch x").await);
    assert!(text.contains("Permission denied"), "{text}");
    assert!(text.contains("read-only sandbox"), "{text}");
    assert!(!f.root().join("x").exists());
    let target = outside.path().join("y");
    err(bash(&f, &format!("echo hi > {}", quoted(&target))).await);
    assert!(!target.exists());
}

#[tokio::test]
async fn an_ordinary_failure_is_not_blamed_on_the_sandbox() {
    if !landlock() {
        return;
    }
    let f = Fixture::new().sandboxed(Sandbox::ReadOnly);
    f.write("a.txt", "alpha");
    let text = err(bash(&f, "grep -r nothing-like-this .").await);
    assert_eq!(text, "(no output)\nexit code: 1");
}

#[tokio::test]
async fn read_only_refuses_truncating_an_existing_file() {
    if !landlock() {
        return;
    }
    let f = Fixture::new().sandboxed(Sandbox::ReadOnly);
    f.write("keep.txt", "precious");
    let keep = f.root().join("keep.txt");
    err(bash(&f, &format!(": > {}", quoted(&keep))).await);
    err(bash(&f, &format!("truncate -s 0 {}", quoted(&keep))).await);
    err(bash(&f, "rm keep.txt").await);
    assert_eq!(f.read("keep.txt"), "precious");
}

#[tokio::test]
async fn read_only_holds_for_grandchildren_and_programs_they_start() {
    if !landlock() {
        return;
    }
    let f = Fixture::new().sandboxed(Sandbox::ReadOnly);
    let outside = tempfile::tempdir().unwrap();
    let nested = outside.path().join("nested");
    let repo = outside.path().join("repo");
    let command = format!(
        "sh -c \"sh -c 'touch {}'\"; git init -q {}; echo done",
        nested.display(),
        quoted(&repo)
    );
    let text = ok(bash(&f, &command).await);
    assert!(text.contains("done"), "{text}");
    assert!(!nested.exists(), "a grandchild wrote outside: {text}");
    assert!(!repo.join(".git").exists(), "git wrote outside: {text}");
}

#[tokio::test]
async fn read_only_allows_its_private_tmpdir_and_dev_null_which_vanish_after() {
    if !landlock() {
        return;
    }
    let f = Fixture::new().sandboxed(Sandbox::ReadOnly);
    let text = ok(bash(
        &f,
        "echo kept > \"$TMPDIR/f\" && cat \"$TMPDIR/f\" && echo gone > /dev/null && \
         echo err >&2 && echo \"tmp=$TMPDIR\" && [ \"$TMP\" = \"$TMPDIR\" ] && ls -d .",
    )
    .await);
    assert!(text.starts_with("kept\nerr\ntmp=/"), "{text}");
    let tmp = text
        .lines()
        .find_map(|l| l.strip_prefix("tmp="))
        .unwrap()
        .to_string();
    assert!(tmp.contains("troupe-call-"), "{tmp}");
    // Removed right after the call, off the call's critical path.
    let mut gone = false;
    for _ in 0..400 {
        gone = !Path::new(&tmp).exists();
        if gone {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(25)).await;
    }
    assert!(gone, "{tmp} outlived the call");
}

#[tokio::test]
async fn each_call_gets_its_own_temporary_directory() {
    if !landlock() {
        return;
    }
    let f = Fixture::new().sandboxed(Sandbox::ReadOnly);
    let first = ok(bash(&f, "echo $TMPDIR").await);
    let second = ok(bash(&f, "echo $TMPDIR").await);
    assert_ne!(first, second);
}

#[tokio::test]
async fn workspace_write_allows_the_workspace_and_tmpdir_but_not_a_sibling() {
    if !landlock() {
        return;
    }
    let f = Fixture::new().sandboxed(Sandbox::WorkspaceWrite);
    let outside = tempfile::tempdir().unwrap();
    let text = ok(bash(
        &f,
        "mkdir -p sub && echo in > sub/file && echo t > \"$TMPDIR/t\" && cat sub/file",
    )
    .await);
    assert!(text.starts_with("in\n"), "{text}");
    assert_eq!(f.read("sub/file"), "in\n");
    let target = outside.path().join("escape");
    let text = err(bash(&f, &format!("touch {}", quoted(&target))).await);
    assert!(text.contains("workspace-write sandbox"), "{text}");
    assert!(!target.exists());
    err(bash(
        &f,
        &format!("ln -s /etc {}", quoted(&outside.path().join("l"))),
    )
    .await);
    assert!(!outside.path().join("l").exists());
}

#[tokio::test]
async fn workspace_write_cannot_move_a_workspace_file_out() {
    if !landlock() {
        return;
    }
    let f = Fixture::new().sandboxed(Sandbox::WorkspaceWrite);
    let outside = tempfile::tempdir().unwrap();
    f.write("a.txt", "a");
    err(bash(&f, &format!("mv a.txt {}", quoted(outside.path()))).await);
    assert_eq!(f.read("a.txt"), "a");
    assert!(!outside.path().join("a.txt").exists());
}

#[tokio::test]
async fn workspace_write_allows_roots_named_in_settings() {
    if !landlock() {
        return;
    }
    let extra = tempfile::tempdir().unwrap();
    let mut f = Fixture::new().sandboxed(Sandbox::WorkspaceWrite);
    f.ctx.sandbox_config = Arc::new(SandboxConfig {
        mode: SandboxMode::Auto,
        writable_roots: vec![extra.path().to_path_buf()],
        ..SandboxConfig::default()
    });
    let target = extra.path().join("ok");
    ok(bash(&f, &format!("touch {}", quoted(&target))).await);
    assert!(target.exists());
}

#[tokio::test]
async fn unsandboxed_writes_anywhere() {
    let f = Fixture::new().sandboxed(Sandbox::Unsandboxed);
    let outside = tempfile::tempdir().unwrap();
    let target = outside.path().join("free");
    ok(bash(&f, &format!("touch {}", quoted(&target))).await);
    assert!(target.exists());
}

#[tokio::test]
async fn sandbox_off_in_settings_runs_unconfined() {
    let mut f = Fixture::new().sandboxed(Sandbox::ReadOnly);
    f.ctx.sandbox_config = Arc::new(SandboxConfig {
        mode: SandboxMode::Off,
        ..SandboxConfig::default()
    });
    let outside = tempfile::tempdir().unwrap();
    let target = outside.path().join("free");
    ok(bash(&f, &format!("touch {}", quoted(&target))).await);
    assert!(target.exists());
}

#[tokio::test]
async fn read_only_cannot_connect_over_tcp_but_workspace_write_can() {
    if !landlock() {
        return;
    }
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let connect = format!("echo hi > /dev/tcp/127.0.0.1/{port} && echo connected");
    let read_only = Fixture::new().sandboxed(Sandbox::ReadOnly);
    let text = err(bash(&read_only, &connect).await);
    assert!(!text.contains("connected"), "{text}");
    let write = Fixture::new().sandboxed(Sandbox::WorkspaceWrite);
    let text = ok(bash(&write, &connect).await);
    assert!(text.contains("connected"), "{text}");
}

#[tokio::test]
async fn read_only_cannot_signal_a_process_outside_its_sandbox() {
    if !landlock() {
        return;
    }
    let mut outsider = std::process::Command::new("sleep")
        .arg("300")
        .spawn()
        .unwrap();
    let f = Fixture::new().sandboxed(Sandbox::ReadOnly);
    let text = err(bash(&f, &format!("kill -9 {}", outsider.id())).await);
    // Refused, or (in the call's own PID namespace) not even there.
    assert!(
        text.contains("Operation not permitted") || text.contains("No such process"),
        "{text}"
    );
    assert!(outsider.try_wait().unwrap().is_none(), "the outsider died");
    outsider.kill().unwrap();
    outsider.wait().unwrap();
}
