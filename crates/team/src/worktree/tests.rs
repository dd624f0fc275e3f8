//! The manager against real git in temporary repositories.

use super::exclude::{ensure_troupe_excluded, exclude_line};
use super::*;
use troupe_protocol::TaskStatus;
use troupe_store::{NewTask, SharedStore};
use troupe_testkit::TempWorkspace;

fn repo() -> TempWorkspace {
    let ws = TempWorkspace::new();
    ws.git_init();
    ws.write("README.md", "main\n");
    ws.git_commit_all("first");
    ws
}

fn open_store(ws: &TempWorkspace) -> SharedStore {
    troupe_store::file::open(&ws.join(".troupe"), "t").unwrap_or_else(|e| panic!("{e}"))
}

async fn task(store: &SharedStore, subject: &str) -> troupe_protocol::TaskId {
    store
        .create_task(&NewTask {
            subject: subject.into(),
            created_by: "lead".into(),
            ..NewTask::default()
        })
        .await
        .unwrap_or_else(|e| panic!("{e}"))
        .id
}

fn new<'a>(name: &'a str) -> NewWorktree<'a> {
    NewWorktree {
        name,
        task: None,
        base: None,
        member: None,
        by: "lead",
    }
}

#[test]
fn the_exclude_line_is_added_once_and_anchored_where_the_workspace_is() {
    let ws = repo();
    assert!(ensure_troupe_excluded(ws.path()).unwrap_or_else(|e| panic!("{e}")));
    assert!(!ensure_troupe_excluded(ws.path()).unwrap_or_else(|e| panic!("{e}")));
    let text = ws.read(".git/info/exclude");
    assert_eq!(
        text.lines().filter(|l| *l == "/.troupe/").count(),
        1,
        "{text}"
    );

    // A workspace below the top of the repository ignores its own .troupe only.
    ws.write("sub/dir/keep.txt", "x");
    assert!(ensure_troupe_excluded(&ws.join("sub/dir")).unwrap_or_else(|e| panic!("{e}")));
    assert!(ws.read(".git/info/exclude").contains("/sub/dir/.troupe/\n"));
    ws.write("sub/dir/.troupe/state.json", "{}");
    ws.write(".troupe/x", "{}");
    let status = ws.git(&["status", "--porcelain", "--untracked-files=all"]);
    assert_eq!(status, "?? sub/dir/keep.txt\n");
    assert_eq!(exclude_line("a*b/"), "/a\\*b/.troupe/");

    // Outside git there is nothing to do, and nothing is written.
    let plain = TempWorkspace::new();
    assert!(!ensure_troupe_excluded(plain.path()).unwrap_or_else(|e| panic!("{e}")));
    assert!(!plain.exists(".git"));
}

#[tokio::test]
async fn a_base_is_recorded_and_a_bad_or_missing_one_is_a_clear_error() {
    let ws = repo();
    ws.git(&["branch", "dev"]);
    let store = open_store(&ws);
    let troupe_dir = ws.path().join(".troupe");
    let m = Worktrees::new(ws.path(), &troupe_dir, store.as_ref());
    let r = m
        .create(&NewWorktree {
            base: Some("dev"),
            ..new("d")
        })
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(r.base.as_deref(), Some("dev"));
    assert_eq!(r.branch, "wt/d");
    assert_eq!(r.base_commit, ws.git(&["rev-parse", "dev"]).trim());
    let r = m.create(&new("h")).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(r.base.as_deref(), Some("main"), "HEAD's branch is the base");

    let err = m
        .create(&NewWorktree {
            base: Some("nope"),
            ..new("n")
        })
        .await;
    assert!(matches!(err, Err(WorktreeError::BadBase { .. })), "{err:?}");
    let err = m
        .create(&NewWorktree {
            base: Some("--orphan"),
            ..new("o")
        })
        .await;
    assert!(matches!(err, Err(WorktreeError::BadBase { .. })), "{err:?}");
    let err = m.create(&new("d")).await;
    assert!(matches!(err, Err(WorktreeError::Exists { .. })), "{err:?}");

    let empty = TempWorkspace::new();
    empty.git_init();
    let store = open_store(&empty);
    let troupe_dir = empty.path().join(".troupe");
    let m = Worktrees::new(empty.path(), &troupe_dir, store.as_ref());
    let err = m
        .create(&new("first"))
        .await
        .map(|_| ())
        .unwrap_err()
        .to_string();
    assert!(err.contains("first commit"), "{err}");
}

#[tokio::test]
async fn without_a_base_branch_commits_count_as_merged_once_another_branch_has_them() {
    let ws = repo();
    ws.git(&["checkout", "-q", "--detach"]);
    let store = open_store(&ws);
    let troupe_dir = ws.path().join(".troupe");
    let m = Worktrees::new(ws.path(), &troupe_dir, store.as_ref());
    let r = m
        .create(&new("loose"))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(r.base, None);
    ws.write(".troupe/worktrees/loose/f.txt", "f");
    let dir = ws.join(".troupe/worktrees/loose");
    for args in [&["add", "f.txt"][..], &["commit", "-q", "-m", "f"][..]] {
        let ok = std::process::Command::new("git")
            .args(args)
            .current_dir(&dir)
            .status()
            .is_ok_and(|s| s.success());
        assert!(ok);
    }
    let err = m.remove("loose", Removal::KeepWork, "lead").await;
    assert!(
        matches!(&err, Err(WorktreeError::Unmerged(u)) if u.count == 1),
        "{err:?}"
    );
    ws.git(&["branch", "saved", "wt/loose"]);
    m.remove("loose", Removal::KeepWork, "lead")
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(ws.git(&["log", "--format=%s", "saved"]).contains('f'));
}

#[tokio::test]
async fn tasks_are_bound_and_unbound_and_a_worked_on_one_keeps_its_worktree() {
    let ws = repo();
    let store = open_store(&ws);
    let troupe_dir = ws.path().join(".troupe");
    let m = Worktrees::new(ws.path(), &troupe_dir, store.as_ref());
    let id = task(&store, "one").await;
    m.create(&NewWorktree {
        task: Some(id),
        ..new("one")
    })
    .await
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        store
            .get_task(id)
            .await
            .map(|t| t.worktree)
            .ok()
            .flatten()
            .as_deref(),
        Some("one")
    );
    let err = m
        .create(&NewWorktree {
            task: Some(id),
            ..new("two")
        })
        .await;
    assert!(
        matches!(err, Err(WorktreeError::TaskUnbindable { .. })),
        "{err:?}"
    );
    assert!(!ws.exists(".troupe/worktrees/two"));

    store
        .claim_task(id, "alice", 1)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    // An idle teammate holding the task (as one that auto-claimed it) is named as idle.
    store
        .update_roster(&mut |r| {
            let mut alice = troupe_protocol::Member::new("alice", "coder", 1, 1);
            alice.status = troupe_protocol::AgentStatus::Idle;
            r.members.push(alice);
        })
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let err = m.remove("one", Removal::Discard, "lead").await;
    assert!(
        matches!(&err, Err(WorktreeError::TaskInProgress { owner, task, .. }) if owner == "alice" && *task == id),
        "{err:?}"
    );
    let message = err.map(|_| ()).unwrap_err().to_string();
    assert!(
        message.contains("(alice is idle)") && !message.contains("working"),
        "{message}"
    );
    store
        .update_task(id, &mut |t, _| t.release("alice", "done for now", 2))
        .await
        .unwrap_or_else(|e| panic!(".await{e}"));
    m.remove("one", Removal::KeepWork, "lead")
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let t = store.get_task(id).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!((t.status, t.worktree), (TaskStatus::Pending, None));

    let done = task(&store, "done").await;
    store
        .claim_task(done, "bob", 1)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    store
        .update_task(done, &mut |t, _| t.complete("bob", "ok", 2))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let err = m
        .create(&NewWorktree {
            task: Some(done),
            ..new("late")
        })
        .await;
    assert!(
        matches!(err, Err(WorktreeError::TaskUnbindable { .. })),
        "{err:?}"
    );
}

#[tokio::test]
async fn a_members_own_worktree_is_reused_and_never_taken_from_another() {
    let ws = repo();
    let store = open_store(&ws);
    let troupe_dir = ws.path().join(".troupe");
    let m = Worktrees::new(ws.path(), &troupe_dir, store.as_ref());
    let first = m
        .ensure_member("alice", "lead")
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let again = m
        .ensure_member("alice", "lead")
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(first, again);
    assert_eq!(first.member.as_deref(), Some("alice"));
    m.create(&new("bob"))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let err = m.ensure_member("bob", "lead").await;
    assert!(matches!(err, Err(WorktreeError::Exists { .. })), "{err:?}");
    let listed = m.list().unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(listed.len(), 2);
    assert!(listed.iter().all(|l| l.state
        == WorkState {
            tip: l.state.tip.clone(),
            ..WorkState::default()
        }));
}

#[tokio::test]
async fn the_roster_shows_own_worktrees_and_those_of_tasks_in_progress() {
    let ws = repo();
    let store = open_store(&ws);
    let id = task(&store, "one").await;
    store
        .update_task(id, &mut |t, _| t.set_worktree(Some("wt-one".into()), 1))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    store
        .claim_task(id, "bob", 2)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let mut roster = troupe_protocol::Roster::new("t", "lead");
    let mut alice = troupe_protocol::Member::new("alice", "coder", 1, 0);
    alice.worktree = Some("alice".into());
    roster.members.push(alice);
    roster
        .members
        .push(troupe_protocol::Member::new("bob", "coder", 1, 0));
    roster
        .members
        .push(troupe_protocol::Member::new("carol", "coder", 1, 0));
    let tasks = store
        .list_tasks(&troupe_store::TaskFilter::default())
        .await
        .unwrap_or_else(|e| panic!("{e}"))
        .tasks;
    let shown: Vec<String> = roster
        .members
        .iter()
        .map(|m| table::member_worktree_cell(m, &tasks))
        .collect();
    assert_eq!(shown, vec!["alice", "wt-one (task 1)", "-"]);
}
