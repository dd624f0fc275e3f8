//! Git worktrees end to end, with real git in temporary repositories: `troupe worktree` from
//! another terminal (removal that never loses work, discard recorded, bad names, a workspace
//! outside git), and teammates whose tools work inside a worktree — bound through the task they
//! own, or their own for life (`isolation: "worktree"`, in process and as a process) — writing
//! and committing there under the sandbox while the main tree stays untouched.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code may panic on a broken fixture

mod common;
mod worktree_support;

use common::{run, stderr, subcommand, troupe};
use serde_json::{json, Value};
use troupe_store::NewTask;
use troupe_testkit::{FakeServer, Reply, Step, TempWorkspace, Wire};
use worktree_support::*;

#[test]
fn removal_refuses_uncommitted_and_unmerged_work_and_succeeds_after_a_merge() {
    let ws = repo();
    let created = ok(&wt(&ws, &["create", "feat"]));
    assert!(created.contains("wt/feat"), "{created}");
    let dir = ws.join(".troupe/worktrees/feat");
    assert_eq!(
        git_in(&dir, &["rev-parse", "--abbrev-ref", "HEAD"]).trim(),
        "wt/feat"
    );
    // No upstream anywhere: the comparison is against the base branch.
    assert!(ws.git(&["remote"]).trim().is_empty());

    // An untracked file is uncommitted work.
    std::fs::write(dir.join("new.txt"), "work in progress\n").unwrap();
    let why = refused(&wt(&ws, &["remove", "feat"]));
    assert!(
        why.contains("uncommitted changes") && why.contains("new.txt"),
        "{why}"
    );
    assert!(
        why.contains("keep_worktree") && why.contains("--discard"),
        "{why}"
    );
    assert!(dir.join("new.txt").is_file(), "nothing may be removed");

    // Committed on the branch but not on main: unmerged work.
    git_in(&dir, &["add", "new.txt"]);
    git_in(&dir, &["commit", "-q", "-m", "feat: the new file"]);
    let why = refused(&wt(&ws, &["remove", "feat"]));
    common::assert_contains(&why, "1 commit(s) on wt/feat that main does not have");
    assert!(why.contains("feat: the new file"), "{why}");
    let merge = format!(
        "git -C '{}' merge wt/feat",
        ws.path().canonicalize().unwrap().display()
    );
    assert!(
        why.contains(&merge),
        "the error gives the exact merge command: {why}"
    );
    assert!(dir.join("new.txt").is_file());
    assert!(branches(&ws).contains("wt/feat"));

    // The listing says what it holds.
    let listed: Value = serde_json::from_str(&ok(&wt(&ws, &["list", "--json"]))).unwrap();
    assert_eq!(listed[0]["name"], "feat");
    assert_eq!(listed[0]["holds"]["unmerged"].as_array().unwrap().len(), 1);

    // Merged: nothing would be lost, so it goes, branch and all.
    ws.git(&["merge", "-q", "wt/feat"]);
    let removed = ok(&wt(&ws, &["remove", "feat"]));
    assert!(removed.contains("removed worktree feat"), "{removed}");
    assert!(!dir.exists());
    assert!(!branches(&ws).contains("wt/feat"));
    assert_eq!(
        ws.read("new.txt"),
        "work in progress\n",
        "the work is on main"
    );
    let kinds: Vec<Value> = events(&ws).iter().map(|e| e["kind"].clone()).collect();
    assert!(
        kinds.contains(&json!("worktree_created")) && kinds.contains(&json!("worktree_removed"))
    );
    main_tree_clean(&ws);
}

#[test]
fn discard_throws_the_work_away_and_is_recorded() {
    let ws = repo();
    ok(&wt(&ws, &["create", "spike"]));
    let dir = ws.join(".troupe/worktrees/spike");
    std::fs::write(dir.join("a.txt"), "a\n").unwrap();
    git_in(&dir, &["add", "a.txt"]);
    git_in(&dir, &["commit", "-q", "-m", "spike: try a"]);
    std::fs::write(dir.join("b.txt"), "not committed\n").unwrap();

    let out = ok(&wt(&ws, &["remove", "spike", "--discard", "--json"]));
    let removed: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(removed["status"], "removed");
    assert_eq!(removed["discarded"]["uncommitted"], json!(["?? b.txt"]));
    assert!(!dir.exists());
    assert!(!branches(&ws).contains("wt/spike"));

    let discarded = events(&ws)
        .into_iter()
        .find(|e| e["kind"] == "worktree_discarded")
        .expect("the discard is in the event log");
    assert!(discarded["agent"].as_str().unwrap().starts_with("user:"));
    let commits = discarded["data"]["discarded_commits"].as_array().unwrap();
    assert!(
        commits[0].as_str().unwrap().contains("spike: try a"),
        "{discarded}"
    );
    assert_eq!(discarded["data"]["discarded_files"], json!(["?? b.txt"]));

    // Kept worktrees stay where they are.
    ok(&wt(&ws, &["create", "keeper"]));
    let kept = ok(&wt(&ws, &["keep", "keeper"]));
    assert!(kept.contains("kept worktree keeper"), "{kept}");
    let listed = ok(&wt(&ws, &["list"]));
    assert!(
        listed.contains("keeper") && listed.contains("kept"),
        "{listed}"
    );
    main_tree_clean(&ws);
}

#[test]
fn bad_names_are_refused_before_git_runs() {
    let ws = repo();
    for name in [
        "a/b",
        "..",
        "../escape",
        "x..y",
        "-rf",
        "",
        "wt name",
        "a~1",
    ] {
        let why = refused(&wt(&ws, &["create", "--", name]));
        assert!(why.contains("invalid worktree name"), "{name:?}: {why}");
    }
    assert!(!ws.exists("escape"));
    assert!(!ws.exists(".troupe/worktrees/a"));
    assert_eq!(
        ws.git(&["worktree", "list", "--porcelain"])
            .matches("worktree ")
            .count(),
        1
    );
    assert!(!branches(&ws).contains("wt/"));
    // Unknown names and tasks are clear too.
    let why = refused(&wt(&ws, &["remove", "ghost"]));
    assert!(why.contains("no worktree named 'ghost'"), "{why}");
    let why = refused(&wt(&ws, &["create", "t9", "--task", "9"]));
    assert!(
        why.contains("unknown task") || why.contains("task 9"),
        "{why}"
    );
    assert!(!ws.exists(".troupe/worktrees/t9"));
}

#[tokio::test]
async fn a_workspace_outside_git_gets_a_clear_error_and_the_board_still_works() {
    let ws = TempWorkspace::new(); // no git init
    let why = refused(&wt(&ws, &["list"]));
    assert!(why.contains("not inside a git repository"), "{why}");
    assert!(
        !ws.exists(".troupe"),
        "a refused command leaves nothing behind"
    );

    let server = common::lead_server([
        Step::tool("create_worktree", json!({"name": "a"})),
        Step::tool("list_worktrees", json!({})),
        Step::tool("create_task", json!({"subject": "write docs"})),
        Step::tool("list_tasks", json!({})),
        Step::text("no worktrees here, but a board"),
    ]);
    let out = run(troupe(ws.path(), &server, Wire::Anthropic).args([
        "-p",
        "make a worktree",
        "--output-format",
        "json",
    ]));
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    let lead = server.requests_for("lead");
    for req in &lead[1..3] {
        let (text, is_error) = req.last_tool_result().unwrap();
        assert!(
            is_error && text.contains("not inside a git repository"),
            "{text}"
        );
        assert!(text.contains("the task board works without"), "{text}");
    }
    // The board does not need git.
    for req in &lead[3..5] {
        let (text, is_error) = req.last_tool_result().unwrap();
        assert!(!is_error && text.contains("write docs"), "{text}");
    }
    let store = troupe_store::file::open(&ws.join(".troupe"), "default").unwrap();
    assert_eq!(store.get_task(1).await.unwrap().subject, "write docs");
    assert!(store.get_task(1).await.unwrap().worktree.is_none());
}

#[tokio::test]
async fn the_owner_of_a_task_with_a_worktree_writes_and_commits_inside_it() {
    let ws = repo();
    let store = troupe_store::file::open(&ws.join(".troupe"), "default").unwrap();
    let task = store
        .create_task(&NewTask {
            subject: "add the feature".into(),
            created_by: "lead".into(),
            ..NewTask::default()
        })
        .await
        .unwrap();
    ok(&wt(
        &ws,
        &["create", "feature", "--task", &task.id.to_string()],
    ));
    assert_eq!(
        store.get_task(task.id).await.unwrap().worktree.as_deref(),
        Some("feature")
    );
    let main_root = ws.path().canonicalize().unwrap();

    let server = FakeServer::start();
    ack_fallback(&server);
    server.script(
        "lead",
        [
            Step::tool(
                "spawn_teammate",
                json!({"name": "alice", "role": "coder", "prompt": "Do task 1."}),
            ),
            Step::text("alice is on it"),
        ],
    );
    let ws_path = ws.path().to_path_buf();
    let id = task.id;
    let readme = main_root.join("README.md").display().to_string();
    server.script(
        "alice",
        [
            // alice takes the task while she is live on the team (as claim_task does); from her
            // next round her tools are in its worktree.
            Step::dynamic(move |_| {
                let store = troupe_store::file::open(&ws_path.join(".troupe"), "default").unwrap();
                troupe_testkit::block_on(store.claim_task(id, "alice", 1)).unwrap();
                Reply::tool("list_worktrees", json!({}))
            }),
            Step::tool(
                "write_file",
                json!({"path": "feature.txt", "content": "from alice\n"}),
            ),
            Step::tool("bash", json!({"command": "git add feature.txt"})),
            Step::tool(
                "bash",
                json!({"command": "git commit -q -m 'alice: the feature'"}),
            ),
            Step::tool("read_file", json!({"path": readme})),
            Step::tool(
                "write_file",
                json!({"path": "../../../escape.txt", "content": "x"}),
            ),
            Step::text("alice: feature committed on wt/feature"),
        ],
    );
    let out = run(troupe(ws.path(), &server, Wire::Anthropic)
        .args(["-p", "go", "--output-format", "json"])
        .args(COMMIT_RULES));
    assert!(
        out.status.success(),
        "stderr: {}\nstdout: {}",
        stderr(&out),
        String::from_utf8_lossy(&out.stdout)
    );

    let alice = server.requests_for("alice");
    assert_eq!(alice.len(), 7, "every scripted step ran");
    // Told where her tools went, before the round that used them.
    let told = alice[1].all_text();
    assert!(told.contains("<workspace-change>"), "{told}");
    assert!(
        told.contains("bound to git worktree 'feature'") && told.contains("task 1"),
        "{told}"
    );
    for (i, what) in [(2, "write_file"), (3, "git add"), (4, "git commit")] {
        let (text, is_error) = alice[i].last_tool_result().unwrap();
        assert!(!is_error, "{what}: {text}");
    }
    // A path outside the worktree — the main tree itself — is refused, read or write.
    let (text, is_error) = alice[5].last_tool_result().unwrap();
    assert!(is_error && text.contains("outside the workspace"), "{text}");
    let (text, is_error) = alice[6].last_tool_result().unwrap();
    assert!(is_error && text.contains("outside the workspace"), "{text}");
    assert!(!ws.exists("escape.txt"));

    // The file is in the worktree and on its branch, not in the main tree or on main.
    assert_eq!(
        ws.read(".troupe/worktrees/feature/feature.txt"),
        "from alice\n"
    );
    assert!(!ws.exists("feature.txt"));
    assert_eq!(ws.git(&["show", "wt/feature:feature.txt"]), "from alice\n");
    assert!(ws
        .git(&["log", "--format=%s", "wt/feature"])
        .contains("alice: the feature"));
    assert!(!ws.git(&["log", "--format=%s", "main"]).contains("alice"));
    main_tree_clean(&ws);

    // The run is over, so alice is no longer alive: `team status` gives her task back to the
    // board — still bound to its worktree, where its next owner will work.
    let status = ok(&subcommand(ws.path(), &["team", "status"]));
    assert!(status.contains("WORKTREE"), "{status}");
    let task = store.get_task(task.id).await.unwrap();
    assert_eq!(
        task.status,
        troupe_protocol::TaskStatus::Pending,
        "{task:?}"
    );
    assert_eq!(task.worktree.as_deref(), Some("feature"));
}
