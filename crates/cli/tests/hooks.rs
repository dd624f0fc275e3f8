//! Claude Code's command hooks through the binary: a repository laid out as a Claude Code
//! project (`.claude/settings.json` and shell scripts under `.claude/hooks/`), driven by the
//! fake model. A PreToolUse hook blocks `rm -rf` (exit 2, stderr to the model) and rewrites a
//! call (`updatedInput`, `allow`); a PostToolUse hook sees the result; a Stop hook keeps the
//! agent going once; a hook past its timeout is killed with its process group and reported;
//! prompt hooks add context or refuse; a teammate runs the same hooks.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code may panic on a broken fixture

mod common;

use common::{alive, headless_in_mode, result_json, run, stderr, troupe};
use serde_json::{json, Value};
use std::os::unix::fs::PermissionsExt;
use troupe_testkit::{FakeServer, Reply, Step, TempWorkspace, Wire};

/// Writes an executable hook script under `.claude/hooks/`.
fn script(ws: &TempWorkspace, name: &str, body: &str) {
    let path = ws.write(
        format!(".claude/hooks/{name}"),
        format!("#!/bin/sh\n{body}"),
    );
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

fn settings(ws: &TempWorkspace, hooks: Value) {
    ws.write(
        ".claude/settings.json",
        serde_json::to_string_pretty(&json!({ "hooks": hooks })).unwrap(),
    );
}

/// Every line of a JSON-lines file the hooks wrote.
fn lines(ws: &TempWorkspace, rel: &str) -> Vec<Value> {
    ws.read(rel)
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{rel}: {e}: {l}")))
        .collect()
}

/// The `hook_ran` events of the default team's log.
fn hook_events(ws: &TempWorkspace) -> Vec<Value> {
    lines(ws, ".troupe/teams/default/events.jsonl")
        .into_iter()
        .filter(|e| e["kind"] == "hook_ran")
        .collect()
}

/// The project of the first test: a guard on Bash, a redirect on Write, a log after Bash, and a
/// naive before-stop check that always asks for more.
fn claude_code_project(ws: &TempWorkspace) {
    settings(
        ws,
        json!({
            "PreToolUse": [
                {"matcher": "Bash", "hooks": [{"type": "command", "command": "\"$CLAUDE_PROJECT_DIR\"/.claude/hooks/guard.sh"}]},
                {"matcher": "Write", "hooks": [{"type": "command", "command": ".claude/hooks/redirect.sh", "timeout": 10}]}
            ],
            "PostToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": ".claude/hooks/log-post.sh"}]}],
            "Stop": [{"hooks": [{"type": "command", "command": ".claude/hooks/before-stop.sh"}]}]
        }),
    );
    script(
        ws,
        "guard.sh",
        r#"input=$(cat)
mkdir -p "$CLAUDE_PROJECT_DIR/.hook-log"
printf '%s\n' "$input" >> "$CLAUDE_PROJECT_DIR/.hook-log/pre.jsonl"
case "$input" in
  *'rm -rf'*) echo "rm -rf is not allowed in this repository; remove files one by one" >&2; exit 2 ;;
  *'echo original'*) printf '%s' '{"hookSpecificOutput": {"hookEventName": "PreToolUse", "updatedInput": {"command": "echo rewritten by the hook"}}}' ;;
esac
exit 0
"#,
    );
    script(
        ws,
        "redirect.sh",
        r#"cat > /dev/null
printf '{"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow", "permissionDecisionReason": "notes go to notes/", "updatedInput": {"file_path": "%s/notes/redirected.txt", "content": "written where the hook said"}}}' "$CLAUDE_PROJECT_DIR"
"#,
    );
    script(
        ws,
        "log-post.sh",
        r#"cat >> "$CLAUDE_PROJECT_DIR/.hook-log/post.jsonl"
echo >> "$CLAUDE_PROJECT_DIR/.hook-log/post.jsonl"
"#,
    );
    script(
        ws,
        "before-stop.sh",
        r#"input=$(cat)
printf '%s\n' "$input" >> "$CLAUDE_PROJECT_DIR/.hook-log/stop.jsonl"
echo "run the test suite before you stop" >&2
exit 2
"#,
    );
}

#[test]
fn a_claude_code_projects_hooks_block_rewrite_observe_and_keep_the_agent_going_once() {
    let ws = TempWorkspace::new();
    claude_code_project(&ws);
    let server = common::lead_server([
        Step::tool("bash", json!({"command": "rm -rf build"})),
        Step::tool("bash", json!({"command": "echo original"})),
        Step::tool(
            "write_file",
            json!({"path": "notes/original.txt", "content": "from the model"}),
        ),
        Step::text("done"),
        Step::text("tests pass, done"),
    ]);
    // Default mode: without the Write hook's allow, a headless run would refuse the write.
    let out = headless_in_mode(ws.path(), &server, "tidy up", "default", &[]);
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    let result = result_json(&out);
    assert_eq!(result["result"], "tests pass, done");
    let journal = server.requests_for("lead");
    assert_eq!(
        journal.len(),
        5,
        "the Stop hook keeps the agent going exactly once"
    );

    // PreToolUse, exit 2: the call is refused and the hook's stderr reaches the model.
    let (blocked, is_error) = journal[1].last_tool_result().unwrap();
    assert!(is_error);
    common::assert_contains(
        &blocked,
        "rm -rf is not allowed in this repository; remove files one by one",
    );
    // PreToolUse, updatedInput: the changed command is the one that ran.
    let (rewritten, is_error) = journal[2].last_tool_result().unwrap();
    assert!(!is_error, "{rewritten}");
    assert!(rewritten.contains("rewritten by the hook"), "{rewritten}");
    // PreToolUse on Write: allow (in default mode) and a new file_path.
    let (written, is_error) = journal[3].last_tool_result().unwrap();
    assert!(!is_error, "{written}");
    assert_eq!(
        ws.read("notes/redirected.txt"),
        "written where the hook said"
    );
    assert!(!ws.exists("notes/original.txt"));
    // Stop, exit 2: its stderr is the model's next prompt.
    assert!(journal[4]
        .all_text()
        .contains("Stop hook feedback: run the test suite before you stop"));

    let workspace = ws.path().canonicalize().unwrap();
    let session = result["session_id"].as_str().unwrap();
    let pre = lines(&ws, ".hook-log/pre.jsonl");
    assert_eq!(pre.len(), 2, "the guard saw both bash calls");
    assert_eq!(pre[0]["hook_event_name"], "PreToolUse");
    assert_eq!(pre[0]["tool_name"], "Bash");
    assert_eq!(pre[0]["tool_input"]["command"], "rm -rf build");
    assert_eq!(pre[0]["session_id"], session);
    assert_eq!(pre[0]["cwd"], workspace.display().to_string());
    assert_eq!(pre[0]["permission_mode"], "default");
    assert!(pre[0]["transcript_path"]
        .as_str()
        .unwrap()
        .ends_with(&format!(".troupe/sessions/{session}.jsonl")));
    assert!(!pre[0]["tool_use_id"].as_str().unwrap().is_empty());

    // PostToolUse sees the call as it ran and its result; a refused call never ran.
    let post = lines(&ws, ".hook-log/post.jsonl");
    assert_eq!(post.len(), 1, "{post:?}");
    assert_eq!(post[0]["hook_event_name"], "PostToolUse");
    assert_eq!(
        post[0]["tool_input"]["command"],
        "echo rewritten by the hook"
    );
    assert_eq!(post[0]["tool_use_id"], pre[1]["tool_use_id"]);
    assert!(post[0]["tool_response"]["content"]
        .as_str()
        .unwrap()
        .contains("rewritten by the hook"));
    assert_eq!(post[0]["tool_response"]["is_error"], false);

    // The naive stop hook refused twice; the second time troupe ended the turn anyway.
    let stops = lines(&ws, ".hook-log/stop.jsonl");
    let active: Vec<&Value> = stops.iter().map(|s| &s["stop_hook_active"]).collect();
    assert_eq!(active, [&json!(false), &json!(true)]);
    assert_eq!(stops[0]["last_assistant_message"], "done");

    // Every run is an event.
    let events = hook_events(&ws);
    let seen: Vec<(&str, &str)> = events
        .iter()
        .map(|e| {
            (
                e["data"]["event"].as_str().unwrap(),
                e["data"]["outcome"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        seen,
        [
            ("PreToolUse", "exited"),
            ("PreToolUse", "exited"),
            ("PostToolUse", "exited"),
            ("PreToolUse", "exited"),
            ("Stop", "exited"),
            ("Stop", "exited"),
        ]
    );
    assert_eq!(events[0]["data"]["exit_code"], 2);
    assert_eq!(events[0]["agent"], "lead");
}

#[test]
fn a_hook_past_its_timeout_is_killed_with_its_process_group_and_decides_nothing() {
    let ws = TempWorkspace::new();
    settings(
        &ws,
        json!({"PreToolUse": [{"matcher": "Bash", "hooks": [
            {"type": "command", "command": ".claude/hooks/slow.sh", "timeout": 1}
        ]}]}),
    );
    // The hook and a child it started each write their pid, then sleep far past the timeout.
    script(
        &ws,
        "slow.sh",
        r#"mkdir -p "$CLAUDE_PROJECT_DIR/.hook-log"
sleep 300 &
echo $! >> "$CLAUDE_PROJECT_DIR/.hook-log/pids"
echo $$ >> "$CLAUDE_PROJECT_DIR/.hook-log/pids"
printf '%s' '{"hookSpecificOutput": {"permissionDecision": "deny"}}'
sleep 300
"#,
    );
    // The bash call runs after the hook: it reports which of the hook's processes still live.
    let check = r#"for p in $(cat .hook-log/pids); do if [ -e /proc/$p ] && ! grep -q '^State:[[:space:]]*Z' /proc/$p/status; then echo "alive $p"; fi; done; echo checked"#;
    let server = common::lead_server([
        Step::tool("bash", json!({"command": check})),
        Step::text("ok"),
    ]);
    let out = headless_in_mode(ws.path(), &server, "check", "bypassPermissions", &[]);
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    let (output, is_error) = server.requests_for("lead")[1].last_tool_result().unwrap();
    // The timed-out hook decided nothing (its deny never counted): the call ran.
    assert!(!is_error, "{output}");
    assert!(output.contains("checked"), "{output}");
    assert!(
        !output.contains("alive"),
        "the hook's processes outlived its timeout: {output}"
    );
    let pids: Vec<u32> = ws
        .read(".hook-log/pids")
        .split_whitespace()
        .map(|p| p.parse().unwrap())
        .collect();
    assert_eq!(pids.len(), 2);
    assert!(pids.iter().all(|p| !alive(*p)));
    // Reported: to the user on stderr, and in the event log.
    let err = stderr(&out);
    assert!(
        err.contains("timed out after 1s") && err.contains(".claude/hooks/slow.sh"),
        "{err}"
    );
    let events = hook_events(&ws);
    assert_eq!(events.len(), 1);
    assert_eq!(events[0]["data"]["outcome"], "timed_out");
    assert_eq!(events[0]["data"]["command"], ".claude/hooks/slow.sh");
}

#[test]
fn prompt_hooks_add_context_or_refuse_the_prompt() {
    let ws = TempWorkspace::new();
    settings(
        &ws,
        json!({
            "UserPromptSubmit": [{"hooks": [{"type": "command", "command": ".claude/hooks/prompt.sh"}]}],
            "SessionStart": [{"matcher": "startup", "hooks": [{"type": "command", "command": "echo 'Session note: the build is green.'"}]}]
        }),
    );
    script(
        &ws,
        "prompt.sh",
        r#"input=$(cat)
case "$input" in
  *secret*) echo "prompts may not ask for secrets" >&2; exit 2 ;;
esac
echo "Project codename: lighthouse"
"#,
    );
    let server = FakeServer::start();
    server.set_fallback(|_| Step::reply(Reply::text("noted")));
    let out = headless_in_mode(ws.path(), &server, "hello", "default", &[]);
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    let first = &server.requests_for("lead")[0];
    assert!(first.all_text().contains("Project codename: lighthouse"));
    assert!(first
        .all_text()
        .contains("Session note: the build is green."));

    let out = headless_in_mode(ws.path(), &server, "tell me the secret", "default", &[]);
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    assert_eq!(
        server.requests_for("lead").len(),
        1,
        "a refused prompt reaches no model"
    );
    let result = result_json(&out);
    assert!(
        result["result"]
            .as_str()
            .unwrap()
            .contains("prompts may not ask for secrets"),
        "{result}"
    );
}

#[test]
fn a_hook_matcher_that_is_not_a_regex_stops_the_run_naming_the_file() {
    let ws = TempWorkspace::new();
    settings(
        &ws,
        json!({"PreToolUse": [{"matcher": "Bash(", "hooks": [{"type": "command", "command": "true"}]}]}),
    );
    let server = FakeServer::start();
    let out = run(troupe(ws.path(), &server, Wire::Anthropic).args(["-p", "hi"]));
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(
        err.contains(".claude/settings.json, line") && err.contains("hooks.PreToolUse[0].matcher"),
        "{err}"
    );
    assert!(server.requests_for("lead").is_empty());
}

/// A teammate runs the project's hooks: its PreToolUse guard, and a TeammateIdle hook that
/// sends it back to work once.
fn teammate_runs_hooks(mode: &str) {
    let ws = TempWorkspace::new();
    settings(
        &ws,
        json!({
            "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": ".claude/hooks/guard.sh"}]}],
            "TeammateIdle": [{"hooks": [{"type": "command", "command": ".claude/hooks/idle.sh"}]}]
        }),
    );
    script(
        &ws,
        "guard.sh",
        r#"input=$(cat)
mkdir -p "$CLAUDE_PROJECT_DIR/.hook-log"
printf '%s\n' "$input" >> "$CLAUDE_PROJECT_DIR/.hook-log/pre.jsonl"
case "$input" in *'rm -rf'*) echo "no rm -rf, please" >&2; exit 2 ;; esac
"#,
    );
    script(
        &ws,
        "idle.sh",
        r#"input=$(cat)
printf '%s\n' "$input" >> "$CLAUDE_PROJECT_DIR/.hook-log/idle.jsonl"
if [ ! -e "$CLAUDE_PROJECT_DIR/.hook-log/idle-refused" ]; then
  touch "$CLAUDE_PROJECT_DIR/.hook-log/idle-refused"
  echo "write the summary before you go idle" >&2
  exit 2
fi
"#,
    );
    let server = FakeServer::start();
    common::ack_fallback(&server);
    common::lead_spawns(
        &server,
        json!({"name": "alice", "role": "coder", "prompt": "clean the build"}),
    );
    server.script(
        "alice",
        [
            Step::tool("bash", json!({"command": "rm -rf build"})),
            Step::text("alice: blocked, left the build alone"),
            Step::text("alice: summary written"),
        ],
    );
    let out = headless_in_mode(
        ws.path(),
        &server,
        "get alice going",
        "bypassPermissions",
        &["--teammate-mode", mode],
    );
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    let alice = server.requests_for("alice");
    assert_eq!(
        alice.len(),
        3,
        "alice worked one more phase for the idle hook"
    );
    let (blocked, is_error) = alice[1].last_tool_result().unwrap();
    assert!(
        is_error && blocked.contains("no rm -rf, please"),
        "{blocked}"
    );
    assert!(alice[2]
        .all_text()
        .contains("TeammateIdle hook feedback: write the summary before you go idle"));
    let pre = lines(&ws, ".hook-log/pre.jsonl");
    assert_eq!(pre[0]["teammate_name"], "alice");
    assert_eq!(pre[0]["team_name"], "default");
    let idle = lines(&ws, ".hook-log/idle.jsonl");
    assert_eq!(idle.len(), 2, "asked after each of alice's work phases");
    assert_eq!(idle[0]["hook_event_name"], "TeammateIdle");
    assert_eq!(idle[0]["teammate_name"], "alice");
    let events = hook_events(&ws);
    assert!(
        events.iter().filter(|e| e["agent"] == "alice").count() >= 3,
        "{events:?}"
    );
}

#[test]
fn an_in_process_teammate_runs_hooks() {
    teammate_runs_hooks("in-process");
}

#[test]
fn a_teammate_process_runs_hooks() {
    teammate_runs_hooks("process");
}

#[test]
fn a_subagent_fires_subagent_start_and_stop_and_the_session_starts_before_the_prompt() {
    let ws = TempWorkspace::new();
    ws.write("notes.txt", "the answer is 42");
    settings(
        &ws,
        json!({
            "PreToolUse": [{"matcher": "Read", "hooks": [{"type": "command", "command": "cat >> .hook-log/pre.jsonl; echo >> .hook-log/pre.jsonl"}]}],
            "SubagentStart": [
                {"matcher": "general-purpose", "hooks": [{"type": "command", "command": "cat >> .hook-log/substart.jsonl; echo >> .hook-log/substart.jsonl"}]},
                {"matcher": "reviewer", "hooks": [{"type": "command", "command": "echo wrong >> .hook-log/wrong.txt"}]}
            ],
            "SubagentStop": [{"hooks": [{"type": "command", "command": "cat >> .hook-log/substop.jsonl; echo >> .hook-log/substop.jsonl"}]}],
            "SessionStart": [{"hooks": [{"type": "command", "command": "cat >> .hook-log/order.jsonl; echo >> .hook-log/order.jsonl"}]}],
            "UserPromptSubmit": [{"hooks": [{"type": "command", "command": "tee -a .hook-log/order.jsonl >> .hook-log/prompt.jsonl; echo >> .hook-log/prompt.jsonl; echo >> .hook-log/order.jsonl"}]}]
        }),
    );
    ws.write(".hook-log/.keep", "");
    let server = common::lead_server([
        Step::tool(
            "task",
            json!({"description": "find", "prompt": "What number is in notes.txt?"}),
        ),
        Step::text("it is 42"),
    ]);
    server.script(
        "subagent",
        [
            Step::tool("read_file", json!({"path": "notes.txt"})),
            Step::text("The number is 42."),
        ],
    );
    let out = headless_in_mode(ws.path(), &server, "delegate", "bypassPermissions", &[]);
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    let pre = lines(&ws, ".hook-log/pre.jsonl");
    assert_eq!(pre.len(), 1);
    assert_eq!(pre[0]["tool_name"], "Read");
    assert!(pre[0]["tool_input"]["file_path"]
        .as_str()
        .unwrap()
        .ends_with("/notes.txt"));
    let stops = lines(&ws, ".hook-log/substop.jsonl");
    assert_eq!(stops.len(), 1, "SubagentStop fires for the subagent only");
    assert_eq!(stops[0]["hook_event_name"], "SubagentStop");
    assert_eq!(stops[0]["last_assistant_message"], "The number is 42.");
    assert_eq!(stops[0]["agent_type"], "general-purpose");
    let starts = lines(&ws, ".hook-log/substart.jsonl");
    assert_eq!(
        starts.len(),
        1,
        "SubagentStart fires, matched on the agent type"
    );
    assert_eq!(starts[0]["hook_event_name"], "SubagentStart");
    assert_eq!(starts[0]["agent_id"], stops[0]["agent_id"]);
    assert!(!ws.exists(".hook-log/wrong.txt"));
    // The user's prompt fires UserPromptSubmit; the subagent's task does not.
    assert_eq!(lines(&ws, ".hook-log/prompt.jsonl").len(), 1);
    // Claude Code's order: the session starts, then its first prompt is submitted.
    let order: Vec<Value> = lines(&ws, ".hook-log/order.jsonl")
        .iter()
        .map(|e| e["hook_event_name"].clone())
        .collect();
    assert_eq!(order, ["SessionStart", "UserPromptSubmit"]);
}

#[test]
fn task_hooks_judge_what_goes_on_the_board_and_what_is_completed() {
    let ws = TempWorkspace::new();
    settings(
        &ws,
        json!({
            "TaskCreated": [{"hooks": [{"type": "command", "command": ".claude/hooks/task.sh"}]}],
            "TaskCompleted": [{"hooks": [{"type": "command", "command": ".claude/hooks/task.sh"}]}]
        }),
    );
    script(
        &ws,
        "task.sh",
        r#"input=$(cat)
case "$input" in
  *'"hook_event_name":"TaskCreated"'*WIP*) echo "no WIP tasks: say what done means" >&2; exit 2 ;;
  *'"hook_event_name":"TaskCompleted"'*) echo "run the tests before completing" >&2; exit 2 ;;
esac
exit 0
"#,
    );
    let server = common::lead_server([
        Step::tool("create_task", json!({"subject": "WIP parser"})),
        Step::tool("create_task", json!({"subject": "write the parser"})),
        Step::tool("claim_task", json!({"id": 1})),
        Step::tool("complete_task", json!({"id": 1, "result": "done"})),
        Step::text("ok"),
    ]);
    let out = headless_in_mode(ws.path(), &server, "plan", "default", &[]);
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    let requests = server.requests_for("lead");
    let (refused, is_error) = requests[1].last_tool_result().unwrap();
    assert!(is_error && refused.contains("no WIP tasks"), "{refused}");
    let (created, is_error) = requests[2].last_tool_result().unwrap();
    assert!(!is_error && created.contains("Created task 1"), "{created}");
    let (completed, is_error) = requests[4].last_tool_result().unwrap();
    assert!(
        is_error && completed.contains("run the tests before completing"),
        "{completed}"
    );
    let task: Value = serde_json::from_str(&ws.read(".troupe/teams/default/tasks/1.json")).unwrap();
    assert_eq!(
        task["status"], "in_progress",
        "the refused completion changed nothing"
    );
}

#[test]
fn a_pre_tool_use_answer_troupe_cannot_read_refuses_the_call_even_in_bypass() {
    for answer in [
        r#"{"decision": "maybe"}"#,
        r#"{"hookSpecificOutput": {"permissionDecision": "perhaps"}}"#,
        r#"{"decision": 7}"#,
    ] {
        let ws = TempWorkspace::new();
        settings(
            &ws,
            json!({"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": ".claude/hooks/odd.sh"}]}]}),
        );
        script(
            &ws,
            "odd.sh",
            &format!("cat > /dev/null\nprintf '%s' '{answer}'\n"),
        );
        let server = FakeServer::start();
        server.script(
            "lead",
            [
                Step::tool("bash", json!({"command": "touch ran"})),
                Step::text("done"),
            ],
        );
        let out = run(troupe(ws.path(), &server, Wire::Anthropic).args([
            "-p",
            "go",
            "--permission-mode",
            "bypassPermissions",
        ]));
        assert!(out.status.success(), "{answer}: {}", stderr(&out));
        assert!(!ws.exists("ran"), "{answer}: the guarded call ran");
        let (text, is_error) = server.requests_for("lead")[1].last_tool_result().unwrap();
        assert!(is_error, "{answer}: {text}");
        assert!(
            text.contains("is not one troupe understands"),
            "{answer}: {text}"
        );
    }
}
