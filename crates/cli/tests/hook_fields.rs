//! Claude Code's hook fields and kinds beyond a plain command, through the binary: `if` (a
//! permission rule the call must match), `once`, `async`, `http` hooks posting to a local
//! server, PostToolUseFailure after a failed call, `CLAUDE_ENV_FILE` from SessionStart, and a
//! kind troupe does not know loading with a warning instead of stopping the run.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code may panic on a broken fixture

mod common;

use common::{headless_bypass, result_json, stderr};
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use troupe_testkit::{FakeServer, TempWorkspace};

fn settings(ws: &TempWorkspace, hooks: Value) {
    ws.write(
        ".claude/settings.json",
        serde_json::to_string_pretty(&json!({ "hooks": hooks })).unwrap(),
    );
}

/// Runs the lead on bash calls of `commands` in bypass mode; returns each call's result.
fn bash_results(ws: &TempWorkspace, commands: &[&str]) -> (Vec<(String, bool)>, String) {
    let server = FakeServer::start();
    common::script_bash_calls(&server, commands);
    let out = headless_bypass(ws.path(), &server, "go", &[]);
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    assert_eq!(result_json(&out)["result"], "done");
    let results = server.requests_for("lead")[1..]
        .iter()
        .map(|r| r.last_tool_result().expect("a tool result"))
        .collect();
    (results, stderr(&out))
}

#[test]
fn an_if_rule_picks_the_calls_a_hook_runs_on_and_once_runs_it_once() {
    let ws = TempWorkspace::new();
    settings(
        &ws,
        json!({"PreToolUse": [{"matcher": "Bash", "hooks": [
            {"type": "command", "if": "Bash(touch:*)",
             "command": "echo 'no touching here' >&2; exit 2"},
            {"type": "command", "once": true,
             "command": "echo seen >> \"$CLAUDE_PROJECT_DIR\"/once.log"}
        ]}]}),
    );
    let (results, _) = bash_results(&ws, &["echo listed", "touch planted", "echo again"]);
    assert!(
        !results[0].1 && results[0].0.contains("listed"),
        "{:?}",
        results[0]
    );
    assert!(results[1].1, "{:?}", results[1]);
    assert!(
        results[1].0.contains("no touching here"),
        "{:?}",
        results[1]
    );
    assert!(!ws.join("planted").exists());
    assert!(!results[2].1, "{:?}", results[2]);
    assert_eq!(ws.read("once.log"), "seen\n");
}

#[test]
fn a_failed_call_fires_post_tool_use_failure_and_not_post_tool_use() {
    let ws = TempWorkspace::new();
    let log = |event: &str| {
        json!([{"matcher": "Bash", "hooks": [{"type": "command",
            "command": format!("cat >> \"$CLAUDE_PROJECT_DIR\"/{event}.jsonl; echo >> \"$CLAUDE_PROJECT_DIR\"/{event}.jsonl")}]}])
    };
    settings(
        &ws,
        json!({"PostToolUse": log("post"), "PostToolUseFailure": log("failure")}),
    );
    bash_results(&ws, &["echo fine", "echo broken >&2; exit 3"]);
    let read = |name: &str| -> Vec<Value> {
        ws.read(name)
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    };
    let post = read("post.jsonl");
    let failure = read("failure.jsonl");
    assert_eq!(post.len(), 1, "{post:?}");
    assert_eq!(post[0]["tool_input"]["command"], "echo fine");
    assert_eq!(failure.len(), 1, "{failure:?}");
    assert_eq!(failure[0]["hook_event_name"], "PostToolUseFailure");
    assert!(
        failure[0]["error"].as_str().unwrap().contains("broken"),
        "{failure:?}"
    );
}

#[test]
fn a_session_start_hook_sets_variables_for_later_commands_through_claude_env_file() {
    let ws = TempWorkspace::new();
    settings(
        &ws,
        json!({"SessionStart": [{"hooks": [{"type": "command",
            "command": "echo 'export TROUPE_FROM_ENV_FILE=\"set by the hook\"' >> \"$CLAUDE_ENV_FILE\""}]}]}),
    );
    let (results, _) = bash_results(&ws, &["echo \"value: $TROUPE_FROM_ENV_FILE\""]);
    assert!(
        results[0].0.contains("value: set by the hook"),
        "{:?}",
        results[0]
    );
}

#[test]
fn an_http_hook_posts_the_event_and_its_answer_decides() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    // One request: the event's JSON in, a block decision out.
    let server_thread = std::thread::spawn(move || {
        let (stream, _) = listener.accept().unwrap();
        let mut reader = BufReader::new(stream.try_clone().unwrap());
        let mut length = 0;
        let mut authorization = String::new();
        loop {
            let mut line = String::new();
            reader.read_line(&mut line).unwrap();
            let line = line.trim_end();
            if line.is_empty() {
                break;
            }
            let lower = line.to_ascii_lowercase();
            if let Some(value) = lower.strip_prefix("content-length:") {
                length = value.trim().parse().unwrap();
            }
            if lower.starts_with("authorization:") {
                authorization = line["authorization:".len()..].trim().to_string();
            }
        }
        let mut body = vec![0; length];
        reader.read_exact(&mut body).unwrap();
        let answer = r#"{"decision": "block", "reason": "the HTTP hook says no"}"#;
        let mut stream = stream;
        write!(
            stream,
            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{answer}",
            answer.len()
        )
        .unwrap();
        (String::from_utf8(body).unwrap(), authorization)
    });
    let ws = TempWorkspace::new();
    settings(
        &ws,
        json!({"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "http", "url": url,
            "headers": {"Authorization": "Bearer $HOME"}, "timeout": 30}]}]}),
    );
    let (results, _) = bash_results(&ws, &["touch blocked.txt"]);
    assert!(results[0].1, "{:?}", results[0]);
    assert!(
        results[0].0.contains("the HTTP hook says no"),
        "{:?}",
        results[0]
    );
    assert!(!ws.join("blocked.txt").exists());
    let (body, authorization) = server_thread.join().unwrap();
    let event: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(event["hook_event_name"], "PreToolUse");
    assert_eq!(event["tool_input"]["command"], "touch blocked.txt");
    // $HOME was not in allowedEnvVars: it is not sent.
    assert_eq!(authorization, "Bearer");
}

#[test]
fn async_hooks_decide_nothing_and_unknown_kinds_load_with_a_warning() {
    let ws = TempWorkspace::new();
    settings(
        &ws,
        json!({"PreToolUse": [{"matcher": "Bash", "hooks": [
            {"type": "command", "async": true, "command": "echo from-async >&2; exit 2"},
            {"type": "carrier-pigeon", "prompt": "Is this command safe? $ARGUMENTS"}
        ]}]}),
    );
    let (results, stderr) = bash_results(&ws, &["echo ran"]);
    assert!(
        !results[0].1 && results[0].0.contains("ran"),
        "{:?}",
        results[0]
    );
    assert!(stderr.contains("`carrier-pigeon` hooks"), "{stderr}");
}

#[test]
fn disable_all_hooks_and_the_http_url_allow_list_hold() {
    let ws = TempWorkspace::new();
    ws.write(
        ".claude/settings.json",
        serde_json::to_string(&json!({
            "allowedHttpHookUrls": ["https://hooks.example.invalid/*"],
            "hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [
                {"type": "http", "url": "http://127.0.0.1:9/not-allowed"},
                {"type": "command", "command": "echo ran >> \"$CLAUDE_PROJECT_DIR\"/hook.log"}
            ]}]}
        }))
        .unwrap(),
    );
    let (results, stderr) = bash_results(&ws, &["echo one"]);
    assert!(!results[0].1, "{:?}", results[0]);
    assert!(
        stderr.contains("no allowedHttpHookUrls pattern"),
        "{stderr}"
    );
    assert_eq!(ws.read("hook.log"), "ran\n");
    ws.write(
        ".claude/settings.local.json",
        r#"{"disableAllHooks": true}"#,
    );
    bash_results(&ws, &["echo two"]);
    assert_eq!(
        ws.read("hook.log"),
        "ran\n",
        "no hook ran with disableAllHooks"
    );
}

#[test]
fn a_hooks_cwd_is_where_bash_is_after_a_cd() {
    let ws = TempWorkspace::new();
    std::fs::create_dir(ws.join("sub")).unwrap();
    settings(
        &ws,
        json!({"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command",
            "command": "cat >> \"$CLAUDE_PROJECT_DIR\"/pre.jsonl; echo >> \"$CLAUDE_PROJECT_DIR\"/pre.jsonl"}]}]}),
    );
    bash_results(&ws, &["cd sub", "pwd"]);
    let cwds: Vec<String> = ws
        .read("pre.jsonl")
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["cwd"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    let root = ws.path().canonicalize().unwrap();
    assert_eq!(
        cwds,
        [
            root.display().to_string(),
            root.join("sub").display().to_string()
        ]
    );
}
