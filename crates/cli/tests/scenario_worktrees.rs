//! The s20 "Try it" scenario 3, scripted with the fake model through the binary: "Create two
//! tasks, create worktrees for them, then spawn alice and bob. Ask them to submit plans before
//! claiming tasks." Each teammate submits a plan, is approved, claims its task, writes its file
//! inside the task's worktree and commits there under the sandbox; the main tree is untouched
//! and both branches hold the work. Every script is reactive (it decides from the conversation
//! it is sent), so the test does not depend on how the agents' turns interleave.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code may panic on a broken fixture

mod common;
mod protocol_support;

use protocol_support::{calls, has_mail, headless, member, requests, store, unanswered};
use serde_json::{json, Value};
use troupe_protocol::{RequestKind, RequestStatus, TaskStatus};
use troupe_testkit::{FakeServer, Recorded, Reply, Step, TempWorkspace};

/// Who does which task, and the file that is its work.
const WORK: [(&str, u64, &str); 2] = [("alice", 1, "alice.txt"), ("bob", 2, "bob.txt")];

fn spawn(name: &str, id: u64) -> Value {
    json!({"name": name, "role": "coder", "require_plan": true, "auto_claim": false,
           "prompt": format!("Submit a plan first. Once it is approved, claim task {id} and do it.")})
}

fn lead(rec: &Recorded) -> Reply {
    if calls(rec, "create_task").is_empty() {
        return Reply::tool("create_task", json!({"subject": "write alice.txt"}))
            .with_tool("create_task", json!({"subject": "write bob.txt"}));
    }
    if calls(rec, "create_worktree").is_empty() {
        return Reply::tool("create_worktree", json!({"name": "task-1", "task_id": 1}))
            .with_tool("create_worktree", json!({"name": "task-2", "task_id": 2}));
    }
    if calls(rec, "spawn_teammate").is_empty() {
        return Reply::tool("spawn_teammate", spawn("alice", 1))
            .with_tool("spawn_teammate", spawn("bob", 2));
    }
    match unanswered(rec, "plan_approval_request", "review_plan") {
        Some(id) => Reply::tool("review_plan", json!({"request_id": id, "approve": true})),
        None => Reply::text("the team is at work"),
    }
}

fn teammate(rec: &Recorded, name: &str, id: u64, file: &str) -> Reply {
    if calls(rec, "submit_plan").is_empty() {
        let plan = format!("Claim task {id}, write {file} in its worktree, commit it there.");
        return Reply::tool("submit_plan", json!({ "plan": plan }));
    }
    if !has_mail(rec, "plan_approval_response", "lead") {
        return Reply::text("waiting for the lead to review my plan");
    }
    if calls(rec, "claim_task").is_empty() {
        return Reply::tool("claim_task", json!({ "id": id }));
    }
    if calls(rec, "write_file").is_empty() {
        let content = format!("{name}'s work\n");
        return Reply::tool("write_file", json!({"path": file, "content": content}));
    }
    let command = match calls(rec, "bash").len() {
        0 => format!("git add {file}"),
        1 => format!("git commit -q -m '{name}: {file}'"),
        _ if calls(rec, "complete_task").is_empty() => {
            let result = format!("{file} committed on wt/task-{id}");
            return Reply::tool("complete_task", json!({"id": id, "result": result}));
        }
        _ => return Reply::text(format!("{name}: task {id} done")),
    };
    Reply::tool("bash", json!({ "command": command }))
}

#[tokio::test]
async fn s20_scenario_3_two_tasks_two_worktrees_alice_and_bob_plan_then_work_in_their_own() {
    let ws = TempWorkspace::new();
    ws.git_init();
    ws.write("README.md", "the main tree\n");
    ws.git_commit_all("first");
    let server = FakeServer::start();
    server.set_fallback(|rec| {
        let reply = match rec.agent.as_str() {
            "lead" => lead(rec),
            agent => match WORK.iter().find(|(n, ..)| *n == agent) {
                Some((name, id, file)) => teammate(rec, name, *id, file),
                None => Reply::text("ok"),
            },
        };
        Step::reply(reply)
    });
    headless(
        &ws,
        &server,
        "acceptEdits",
        &[
            "--allowedTools",
            "Bash(git add:*)",
            "--allowedTools",
            "Bash(git commit:*)",
        ],
    );

    // Both plans were submitted and approved before any work.
    let plans = requests(ws.path(), RequestKind::Plan).await;
    assert_eq!(plans.len(), 2);
    assert!(
        plans.iter().all(|p| p.status == RequestStatus::Approved),
        "{plans:?}"
    );
    let store = store(ws.path());
    for (name, id, file) in WORK {
        assert!(member(ws.path(), name).await.plan_approved, "{name}");
        let task = store.get_task(id).await.unwrap();
        assert_eq!(task.status, TaskStatus::Completed, "{name}: {task:?}");
        assert_eq!(task.owner.as_deref(), Some(name));
        // Each commit is on its own task's branch, in its own worktree, and nowhere else.
        let branch = format!("wt/task-{id}");
        assert_eq!(
            ws.git(&["show", &format!("{branch}:{file}")]),
            format!("{name}'s work\n")
        );
        assert!(ws
            .git(&["log", "--format=%s", &branch])
            .contains(&format!("{name}: {file}")));
        assert_eq!(
            ws.read(format!(".troupe/worktrees/task-{id}/{file}")),
            format!("{name}'s work\n")
        );
        assert!(!ws.exists(file), "{file} leaked into the main tree");
        let last = server.requests_for(name).pop().unwrap();
        let told = last.all_text();
        assert!(
            told.contains(&format!("bound to git worktree 'task-{id}'")),
            "{name}: {told}"
        );
        for (tool, results) in [("write_file", 1), ("bash", 2), ("complete_task", 1)] {
            let got = protocol_support::results_of(&last, tool);
            assert_eq!(got.len(), results, "{name} {tool}");
            assert!(
                got.iter().all(|(_, is_error)| !is_error),
                "{name} {tool}: {got:?}"
            );
        }
    }
    let other = ws.git(&["ls-tree", "--name-only", "wt/task-1"]);
    assert!(
        !other.contains("bob.txt"),
        "the branches hold separate work: {other}"
    );
    // The main tree is untouched: main has only its first commit, and git status is clean.
    assert_eq!(ws.git(&["log", "--format=%s", "main"]).trim(), "first");
    assert_eq!(
        ws.git(&["status", "--porcelain", "--untracked-files=all"]),
        ""
    );
}
