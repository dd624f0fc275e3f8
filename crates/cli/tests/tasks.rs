//! The task board end to end through the binary: the six task tools, teammates that take
//! ready work by themselves (and one that opted out), a blocker completed from another
//! terminal waking an idle teammate process, and `troupe task` for people and scripts.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code may panic on a broken fixture

mod common;
mod protocol_support;

use common::{stderr, subcommand, troupe};
use protocol_support::{calls, headless, member, results_of, store};
use serde_json::{json, Value};
use std::path::Path;
use std::process::{Output, Stdio};
use std::time::Duration;
use troupe_protocol::{AgentStatus, TaskStatus};
use troupe_testkit::{FakeServer, Recorded, Reply, Step, TempWorkspace, Wire};

/// Generous bound for conditions a broken build might never reach; nothing asserts on time.
const BOUND: Duration = Duration::from_secs(90);

/// Waits (bounded) until `cond` holds.
#[track_caller]
fn until(what: &str, cond: impl FnMut() -> bool) {
    troupe_testkit::wait_until(what, BOUND, cond)
}

/// `troupe task ARGS…` in `ws`.
fn task(ws: &Path, args: &[&str]) -> Output {
    let mut all = vec!["task"];
    all.extend_from_slice(args);
    subcommand(ws, &all)
}

/// `troupe task ARGS… --json`, which must succeed, parsed.
#[track_caller]
fn task_json(ws: &Path, args: &[&str]) -> Value {
    let mut all = args.to_vec();
    all.push("--json");
    let out = task(ws, &all);
    assert!(out.status.success(), "task {args:?}: {}", stderr(&out));
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "task {args:?} printed no JSON ({e}): {}",
            String::from_utf8_lossy(&out.stdout)
        )
    })
}

/// The id in the latest `<task id="N">` block the agent was given.
fn given_task(req: &Recorded) -> u64 {
    let text = req.all_text();
    let at = text
        .rfind("<task id=\"")
        .expect("the agent was given a task")
        + 10;
    text[at..]
        .split('"')
        .next()
        .and_then(|n| n.parse().ok())
        .expect("a task id")
}

/// A step completing whatever task the agent was last given, with `result`.
fn complete_given(result: &'static str) -> Step {
    Step::dynamic(move |req| {
        Reply::tool(
            "complete_task",
            json!({"id": given_task(req), "result": result}),
        )
    })
}

#[tokio::test]
async fn task_tools_round_trip_and_idle_teammates_take_ready_work() {
    for mode in ["in-process", "process"] {
        let ws = TempWorkspace::new();
        let server = FakeServer::start();
        common::ack_fallback(&server);
        server.script(
            "lead",
            [
                Step::tool(
                    "create_task",
                    json!({"subject": "parser", "description": "write the parser"}),
                ),
                Step::tool("create_task", json!({"subject": "tests", "blocked_by": [1]})),
                Step::reply(
                    Reply::tool("list_tasks", json!({}))
                        .with_tool("get_task", json!({"id": 2}))
                        .with_tool("claim_task", json!({"id": 2}))
                        .with_tool("get_task", json!({"id": 99}))
                        .with_tool("update_task", json!({"id": 1, "blocked_by": [2]}))
                        .with_tool(
                            "update_task",
                            json!({"id": 2, "description": "test the parser"}),
                        )
                        .with_tool("update_task", json!({"id": 2, "result": "early"})),
                ),
                Step::reply(
                    Reply::tool(
                        "spawn_teammate",
                        json!({"name": "carol", "role": "reviewer", "prompt": "wait", "auto_claim": false}),
                    )
                    .with_tool(
                        "spawn_teammate",
                        json!({"name": "alice", "role": "coder", "prompt": "say hello"}),
                    ),
                ),
                Step::text("the board is set up"),
            ],
        );
        // Alice never calls claim_task: each task reaches her by itself when she is idle.
        server.script(
            "alice",
            [
                Step::text("hello"),
                complete_given("parser written"),
                Step::text("done with the parser"),
                complete_given("tests written"),
                Step::text("done with the tests"),
            ],
        );
        server.script("carol", [Step::text("carol waiting")]);
        headless(
            &ws,
            &server,
            "bypassPermissions",
            &["--teammate-mode", mode],
        );

        let lead = server.requests_for("lead").pop().expect("the lead ran");
        let ok = |tool: &str, n: usize| results_of(&lead, tool)[n].clone();
        let (list, is_error) = ok("list_tasks", 0);
        assert!(
            !is_error && list.contains("parser") && list.contains("pending (ready)"),
            "{mode}: {list}"
        );
        let (two, _) = ok("get_task", 0);
        assert!(
            two.contains("task 2: tests") && two.contains("waits on 1"),
            "{mode}: {two}"
        );
        let (claim, is_error) = ok("claim_task", 0);
        assert!(
            is_error && claim.contains("blocked by task(s) 1"),
            "{mode}: {claim}"
        );
        let (unknown, is_error) = ok("get_task", 1);
        assert!(
            is_error && unknown.contains("unknown task id 99"),
            "{mode}: {unknown}"
        );
        let (cycle, is_error) = ok("update_task", 0);
        assert!(
            is_error && cycle.contains("dependency cycle"),
            "{mode}: {cycle}"
        );
        let (edit, is_error) = ok("update_task", 1);
        assert!(
            !is_error && edit.contains("Task 2 (tests) is pending"),
            "{mode}: {edit}"
        );
        let (early, is_error) = ok("update_task", 2);
        assert!(
            is_error && early.contains("a result goes with status"),
            "{mode}: {early}"
        );

        // Both tasks were done by alice, in dependency order, without her claiming any.
        let board = store(ws.path());
        for (id, result) in [(1, "parser written"), (2, "tests written")] {
            let t = board.get_task(id).await.unwrap();
            assert_eq!(t.status, TaskStatus::Completed, "{mode}: task {id}");
            assert_eq!(t.owner.as_deref(), Some("alice"), "{mode}: task {id}");
            assert_eq!(t.result.as_deref(), Some(result), "{mode}: task {id}");
        }
        assert_eq!(
            board.get_task(2).await.unwrap().description,
            "test the parser"
        );
        let alice = server.requests_for("alice");
        assert!(
            calls(alice.last().unwrap(), "claim_task").is_empty(),
            "{mode}"
        );
        assert!(alice[1].all_text().contains("Subject: parser"), "{mode}");
        assert!(alice[3].all_text().contains("Subject: tests"), "{mode}");
        // Carol opted out: she took nothing, and the roster keeps her choice for a respawn.
        assert_eq!(server.requests_for("carol").len(), 1, "{mode}");
        assert!(!member(ws.path(), "carol").await.auto_claim, "{mode}");
        assert!(member(ws.path(), "alice").await.auto_claim, "{mode}");
        let prompt = server.requests_for("carol")[0].system();
        assert!(
            prompt.contains("not given tasks automatically"),
            "{mode}: {prompt}"
        );
    }
}

#[tokio::test]
async fn a_blocker_completed_from_another_terminal_wakes_an_idle_teammate_process() {
    let ws = TempWorkspace::new();
    let server = FakeServer::start();
    common::ack_fallback(&server);
    // A person takes task 1; task 2 waits on it, task 3 on task 2.
    assert_eq!(task_json(ws.path(), &["create", "one"])["id"], 1);
    let two = task_json(ws.path(), &["create", "two", "--blocked-by", "1"]);
    assert_eq!(two["blocked_by"], json!([1]));
    task_json(ws.path(), &["create", "three", "--blocked-by", "2"]);
    let one = task_json(ws.path(), &["claim", "1", "--owner", "user:sam"]);
    assert_eq!(
        (one["status"].as_str(), one["owner"].as_str()),
        (Some("in_progress"), Some("user:sam"))
    );

    server.script(
        "bob",
        [
            Step::text("standing by"),
            complete_given("two done"),
            Step::text("finished task 2"),
            // Bob ends this phase still holding task 3.
            Step::text("task 3 needs a closer look"),
        ],
    );
    let mut bob = troupe(ws.path(), &server, Wire::Anthropic)
        .args(["teammate", "--name", "bob", "--prompt", "stand by"])
        .args(["--permission-mode", "bypassPermissions"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let idle_with = |n: usize| {
        server.requests_for("bob").len() >= n
            && troupe_testkit::block_on(member(ws.path(), "bob")).status == AgentStatus::Idle
    };
    until("bob is idle after his first phase", || idle_with(1));
    // Idle, but nothing is his to take: task 1 is a person's, task 2 waits on it.
    assert_eq!(server.requests_for("bob").len(), 1);

    let done = task(
        ws.path(),
        &["complete", "1", "--result", "one done", "--as", "user:sam"],
    );
    assert!(done.status.success(), "{}", stderr(&done));
    until("bob took task 2, finished it, and was given task 3", || {
        idle_with(4)
            && troupe_testkit::block_on(store(ws.path()).get_task(3))
                .unwrap()
                .owner
                .as_deref()
                == Some("bob")
    });
    let two = task_json(ws.path(), &["show", "2"]);
    assert_eq!(two["status"], "completed");
    assert_eq!(
        (two["owner"].as_str(), two["result"].as_str()),
        (Some("bob"), Some("two done"))
    );
    let by: Vec<&str> = two["history"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["by"].as_str().unwrap())
        .collect();
    assert_eq!(
        by,
        ["bob", "bob"],
        "claimed (by the harness, for bob) and completed by bob"
    );
    let one = task_json(ws.path(), &["show", "1"]);
    assert_eq!(
        (one["owner"].as_str(), one["status"].as_str()),
        (Some("user:sam"), Some("completed"))
    );
    let reqs = server.requests_for("bob");
    assert_eq!(given_task(&reqs[1]), 2);
    assert!(reqs[1]
        .all_text()
        .contains("call complete_task{id: 2, result}"));
    assert!(
        calls(&reqs[3], "claim_task").is_empty(),
        "bob never claimed by hand"
    );

    // Bob holds task 3 while idle: `team status` shows it, and he is given nothing else.
    let status = subcommand(ws.path(), &["team", "status"]);
    let text = String::from_utf8_lossy(&status.stdout);
    assert!(text.contains("TASK") && text.contains("#3 three"), "{text}");
    let json: Value =
        serde_json::from_slice(&subcommand(ws.path(), &["team", "status", "--json"]).stdout)
            .unwrap();
    let bob_json = json["members"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == "bob")
        .cloned()
        .unwrap();
    assert_eq!(bob_json["tasks"], json!([{"id": 3, "subject": "three"}]));

    // Bob's task comes to wait on a new task 4 (he is given nothing while he holds task 3);
    // when a person completes task 4, bob is told by mail, which wakes him.
    task_json(ws.path(), &["create", "four"]);
    task_json(ws.path(), &["update", "3", "--blocked-by", "4"]);
    task_json(ws.path(), &["claim", "4", "--owner", "user:sam"]);
    let done = task(
        ws.path(),
        &["complete", "4", "--result", "four done", "--as", "user:sam"],
    );
    assert!(done.status.success(), "{}", stderr(&done));
    assert!(String::from_utf8_lossy(&done.stdout).contains("told bob"));
    until("bob was told task 4 is completed", || {
        server.requests_for("bob").iter().any(|r| {
            r.all_text()
                .contains("Task 4 (four), which your task 3 (three) waits on, is completed")
        })
    });
    assert_eq!(
        store(ws.path()).get_task(4).await.unwrap().owner.as_deref(),
        Some("user:sam")
    );
    bob.kill().unwrap();
    bob.wait().unwrap();
}

#[test]
fn troupe_task_commands_for_people_and_scripts() {
    let ws = TempWorkspace::new();
    let w = ws.path();
    // Reading a board no one has started is a mistake (a wrong --team or --cwd).
    let none = task(w, &["list"]);
    assert_eq!(none.status.code(), Some(1));
    common::assert_stderr_has(&none, "no team 'default'");

    let a = task_json(w, &["create", "parser", "--description", "write it"]);
    assert_eq!(
        (a["id"].as_u64(), a["status"].as_str()),
        (Some(1), Some("pending"))
    );
    assert_eq!(a["description"], "write it");
    let b = task_json(w, &["create", "tests", "--blocked-by", "1"]);
    assert_eq!(b["id"], 2);
    let list = task_json(w, &["list"]);
    assert_eq!(list.as_array().map(Vec::len), Some(2));
    let text = String::from_utf8_lossy(&task(w, &["list"]).stdout).to_string();
    assert!(
        text.contains("pending (waits on 1)") && text.contains("pending (ready)"),
        "{text}"
    );

    // Refusals exit 1 and say why.
    let blocked = task(w, &["claim", "2", "--owner", "user:sam"]);
    assert_eq!(blocked.status.code(), Some(1));
    common::assert_stderr_has(&blocked, "blocked by task(s) 1");
    let claimed = task_json(w, &["claim", "1", "--owner", "user:sam"]);
    assert_eq!(claimed["owner"], "user:sam");
    let owned = task(w, &["claim", "1", "--owner", "user:al"]);
    assert_eq!(owned.status.code(), Some(1));
    common::assert_stderr_has(&owned, "already owned by user:sam");
    let stranger = task(w, &["claim", "2", "--owner", "zed"]);
    assert_eq!(stranger.status.code(), Some(1));
    common::assert_stderr_has(&stranger, "no teammate named 'zed'");
    let unknown = task(w, &["show", "42"]);
    assert_eq!(unknown.status.code(), Some(1));
    common::assert_stderr_has(&unknown, "unknown task id 42");
    let cycle = task(w, &["update", "1", "--blocked-by", "2"]);
    assert_eq!(cycle.status.code(), Some(1));
    common::assert_stderr_has(&cycle, "dependency cycle");
    let not_owner = task(w, &["complete", "1", "--result", "x", "--as", "user:al"]);
    assert_eq!(not_owner.status.code(), Some(1));
    common::assert_stderr_has(&not_owner, "only user:sam or the lead");

    // Usage errors exit 2.
    for bad in [
        &["update", "1", "--status", "bogus"][..],
        &["update", "1"],
        &["update", "1", "--status", "completed"],
        &["complete", "1"],
        &["show", "one"],
    ] {
        assert_eq!(task(w, bad).status.code(), Some(2), "{bad:?}");
    }

    // Updates: description, then completion by the owner; task 2 becomes ready.
    let edited = task_json(w, &["update", "2", "--description", "cover the edge cases"]);
    assert_eq!(edited["description"], "cover the edge cases");
    let done = task_json(
        w,
        &[
            "update",
            "1",
            "--status",
            "completed",
            "--result",
            "parsed",
            "--as",
            "user:sam",
        ],
    );
    assert_eq!(
        (done["status"].as_str(), done["result"].as_str()),
        (Some("completed"), Some("parsed"))
    );
    let pending = task_json(w, &["list", "--status", "pending"]);
    assert_eq!(pending[0]["id"], 2);
    let shown = String::from_utf8_lossy(&task(w, &["show", "2"]).stdout).to_string();
    assert!(
        shown.contains("pending (ready)") && shown.contains("cover the edge cases"),
        "{shown}"
    );

    // A corrupt record is reported; the rest of the board still works.
    std::fs::write(w.join(".troupe/teams/default/tasks/2.json"), "{ not json").unwrap();
    let listed = task(w, &["list", "--json"]);
    assert!(listed.status.success(), "{}", stderr(&listed));
    common::assert_stderr_has(&listed, "task 2 is unreadable");
    common::assert_stderr_has(&listed, "2.json");
    let tasks: Value = serde_json::from_slice(&listed.stdout).unwrap();
    assert_eq!(tasks.as_array().map(Vec::len), Some(1));
    assert_eq!(task_json(w, &["create", "docs"])["id"], 3);
    let corrupt = task(w, &["show", "2"]);
    assert_eq!(corrupt.status.code(), Some(1));
    assert!(stderr(&corrupt).contains("corrupt"), "{}", stderr(&corrupt));
}

#[tokio::test]
async fn a_teammate_cannot_rewrite_a_task_it_neither_owns_nor_created_and_every_edit_is_in_history()
{
    let ws = TempWorkspace::new();
    let server = FakeServer::start();
    server.set_fallback(|rec| {
        let reply = match rec.agent.as_str() {
            "lead" if calls(rec, "create_task").is_empty() => {
                Reply::tool("create_task", json!({"subject": "the lead's task"}))
            }
            "lead" if calls(rec, "spawn_teammate").is_empty() => Reply::tool(
                "spawn_teammate",
                json!({"name": "bob", "role": "coder", "prompt": "Tidy the board.", "require_plan": true}),
            ),
            "bob" if calls(rec, "update_task").is_empty() => Reply::tool(
                "update_task",
                json!({"id": 1, "description": "rewritten by bob"}),
            ),
            "bob" if calls(rec, "create_task").is_empty() => {
                Reply::tool("create_task", json!({"subject": "bob's own"}))
            }
            "bob" if calls(rec, "update_task").len() == 1 => Reply::tool(
                "update_task",
                json!({"id": 2, "description": "bob's details", "blocked_by": [1]}),
            ),
            _ => Reply::text("ok"),
        };
        Step::reply(reply)
    });
    headless(&ws, &server, "default", &[]);
    let bob = server.requests_for("bob").pop().unwrap();
    let updates = results_of(&bob, "update_task");
    assert_eq!(updates.len(), 2, "{updates:?}");
    let (refusal, is_error) = &updates[0];
    assert!(*is_error, "{refusal}");
    assert!(
        refusal.contains("created by lead") && refusal.contains("bob cannot change it"),
        "{refusal}"
    );
    let (own, is_error) = &updates[1];
    assert!(!is_error, "{own}");

    let store = store(ws.path());
    let lead_task = store.get_task(1).await.unwrap();
    assert_eq!(lead_task.description, "", "the lead's task is untouched");
    assert!(lead_task.history.iter().all(|h| h.by != "bob"));
    let bobs = store.get_task(2).await.unwrap();
    assert_eq!(bobs.description, "bob's details");
    let edits: Vec<String> = bobs
        .history
        .iter()
        .filter(|h| h.by == "bob" && h.from == h.to)
        .filter_map(|h| h.note.clone())
        .collect();
    assert_eq!(
        edits,
        ["description changed", "blocked by 1"],
        "{:?}",
        bobs.history
    );
    // `troupe task show` tells the story too.
    let shown = task(ws.path(), &["show", "2"]);
    let shown = String::from_utf8_lossy(&shown.stdout);
    assert!(shown.contains("edited by bob"), "{shown}");
}
