//! Headless runs through the real binary, the real HTTP client and the fake model server.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code may panic on a broken fixture

mod common;

use common::{json_lines, result_json, run, stderr, troupe};
use serde_json::json;
use troupe_testkit::{FakeServer, Reply, Step, TempWorkspace, Wire};

fn two_turn_tool_loop(wire: Wire) {
    let ws = TempWorkspace::new();
    ws.write("hello.txt", "hi");
    ws.write("src/main.rs", "fn main() {}");
    let server = common::lead_server([
        Step::tool("bash", json!({"command": "ls"})),
        Step::dynamic(|req| {
            let (output, is_error) = req
                .last_tool_result()
                .expect("the second call carries the tool result");
            assert!(!is_error, "ls failed: {output}");
            let listing: Vec<&str> = output
                .lines()
                .take_while(|l| !l.trim().is_empty() && !l.starts_with("exit code"))
                .collect();
            Reply::text(format!("files: {}", listing.join(",")))
        }),
    ]);
    let out = run(troupe(ws.path(), &server, wire).args([
        "-p",
        "list files",
        "--output-format",
        "json",
        "--permission-mode",
        "bypassPermissions",
    ]));
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    let result = result_json(&out);
    assert_eq!(result["type"], "result");
    assert_eq!(result["subtype"], "success");
    assert_eq!(result["is_error"], false);
    assert_eq!(result["result"], "files: hello.txt,src");
    assert_eq!(result["num_turns"], 2);
    assert!(result["usage"]["output_tokens"].as_u64().unwrap() > 0);
    assert!(result["session_id"].as_str().unwrap().len() > 10);
    let journal = server.requests_for("lead");
    assert_eq!(journal.len(), 2);
    assert!(journal[0].tool_names().contains(&"bash".to_string()));
    assert!(journal[0]
        .system()
        .contains(ws.path().canonicalize().unwrap().to_str().unwrap()));
    // The session transcript holds the whole exchange.
    let session = ws
        .path()
        .join(".troupe/sessions")
        .join(format!("{}.jsonl", result["session_id"].as_str().unwrap()));
    let transcript = std::fs::read_to_string(session).unwrap();
    assert_eq!(transcript.lines().count(), 4, "{transcript}");
}

/// The model's connection is opened while the lead is built (a `HEAD` of the base URL, as
/// Claude Code does), and the run's requests use it.
#[test]
fn the_model_connection_is_opened_ahead_of_the_first_request() {
    let ws = TempWorkspace::new();
    let server = common::lead_server([
        Step::tool("bash", json!({"command": "true"})),
        Step::reply(Reply::text("done")),
    ]);
    let out = common::headless_bypass(ws.path(), &server, "go", &[]);
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    assert_eq!(result_json(&out)["result"], "done");
    // One HEAD of the base URL; the two model requests as usual.
    assert_eq!(server.head_requests(), ["/"]);
    assert_eq!(server.requests_for("lead").len(), 2);
    // The head's connection stays open for the requests: one connection, or a second when
    // the first request was ready before the head's answer (a loaded machine).
    assert!(
        (1..=2).contains(&server.connections()),
        "{}",
        server.connections()
    );
}

#[test]
fn two_turn_tool_loop_anthropic() {
    two_turn_tool_loop(Wire::Anthropic);
}

#[test]
fn two_turn_tool_loop_openai() {
    two_turn_tool_loop(Wire::OpenAi);
}

#[test]
fn openai_assistant_tool_call_is_sent_with_empty_string_content() {
    let ws = TempWorkspace::new();
    let server = common::lead_server([
        Step::tool("glob", json!({"pattern": "*"})),
        Step::text("ok"),
    ]);
    let out = run(troupe(ws.path(), &server, Wire::OpenAi).args([
        "-p",
        "x",
        "--permission-mode",
        "bypassPermissions",
    ]));
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    let second = &server.requests_for("lead")[1];
    let assistant = second.body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "assistant")
        .unwrap();
    assert_eq!(assistant["content"], "");
    assert_eq!(assistant["tool_calls"][0]["function"]["name"], "glob");
    assert_eq!(second.body["stream_options"]["include_usage"], true);
}

#[test]
fn stream_json_emits_init_messages_and_result_in_order() {
    let ws = TempWorkspace::new();
    ws.write("a.txt", "alpha");
    let server = common::lead_server([
        Step::tool("read_file", json!({"path": "a.txt"})),
        Step::text("read it"),
    ]);
    let out = run(troupe(ws.path(), &server, Wire::Anthropic).args([
        "-p",
        "read a",
        "--output-format",
        "stream-json",
    ]));
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    let lines = json_lines(&out);
    let kinds: Vec<String> = lines
        .iter()
        .map(|l| l["type"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(
        kinds,
        ["system", "assistant", "user", "assistant", "result"]
    );
    assert_eq!(lines[0]["subtype"], "init");
    assert!(lines[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .any(|t| t == "Edit"));
    assert_eq!(lines[1]["message"]["content"][0]["type"], "tool_use");
    let tool_result = &lines[2]["message"]["content"][0];
    assert_eq!(tool_result["type"], "tool_result");
    assert!(tool_result["content"].as_str().unwrap().contains("alpha"));
    assert_eq!(lines[4]["result"], "read it");
    assert_eq!(lines[0]["session_id"], lines[4]["session_id"]);
}

#[test]
fn prompt_is_read_from_stdin() {
    use std::io::Write;
    let ws = TempWorkspace::new();
    let server = common::lead_server([Step::dynamic(|req| {
        Reply::text(format!("echo:{}", req.messages()[0].text().trim()))
    })]);
    let mut child = troupe(ws.path(), &server, Wire::Anthropic)
        .arg("-p")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"from stdin\n")
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "echo:from stdin"
    );
}

#[test]
fn default_mode_refuses_bash_headless_and_says_how_to_allow_it() {
    let ws = TempWorkspace::new();
    let server = FakeServer::start();
    server.script(
        "lead",
        [
            Step::tool("bash", json!({"command": "touch made-by-bash"})),
            Step::dynamic(|req| {
                let (text, is_error) = req.last_tool_result().unwrap();
                assert!(is_error);
                Reply::text(text)
            }),
        ],
    );
    let out = run(troupe(ws.path(), &server, Wire::Anthropic).args([
        "-p",
        "touch",
        "--output-format",
        "json",
    ]));
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    let result = result_json(&out);
    let text = result["result"].as_str().unwrap();
    assert!(text.contains("--allowedTools"), "{text}");
    assert!(!ws.path().join("made-by-bash").exists());
}

#[test]
fn allowed_tools_rule_lets_a_matching_bash_command_run() {
    let ws = TempWorkspace::new();
    let server = common::lead_server([
        Step::tool("bash", json!({"command": "touch allowed"})),
        Step::text("done"),
    ]);
    // The prompt may follow the rule list, as in the README's examples.
    let out = run(troupe(ws.path(), &server, Wire::Anthropic).args([
        "-p",
        "--allowedTools",
        "Bash(touch:*) Edit",
        "--allowedTools",
        "Glob",
        "make a file",
    ]));
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    assert!(ws.path().join("allowed").exists());
}

#[test]
fn plan_mode_refuses_writes() {
    let ws = TempWorkspace::new();
    let server = common::lead_server([
        Step::tool("write_file", json!({"path": "x.txt", "content": "no"})),
        Step::text("done"),
    ]);
    let out = run(troupe(ws.path(), &server, Wire::Anthropic).args([
        "-p",
        "x",
        "--permission-mode",
        "plan",
    ]));
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    assert!(!ws.path().join("x.txt").exists());
    let (text, is_error) = server.requests_for("lead")[1].last_tool_result().unwrap();
    assert!(is_error && text.contains("plan"), "{text}");
}

#[test]
fn max_turns_stops_the_loop_with_an_error_subtype() {
    let ws = TempWorkspace::new();
    let server = common::lead_server([
        Step::tool("glob", json!({"pattern": "*"})),
        Step::tool("glob", json!({"pattern": "*"})),
    ]);
    let out = run(troupe(ws.path(), &server, Wire::Anthropic).args([
        "-p",
        "x",
        "--max-turns",
        "1",
        "--output-format",
        "json",
    ]));
    assert_eq!(out.status.code(), Some(1));
    let result = result_json(&out);
    assert_eq!(result["subtype"], "error_max_turns");
    assert_eq!(result["is_error"], true);
    assert_eq!(server.requests_for("lead").len(), 1);
}

#[test]
fn max_tokens_stop_is_continued_automatically() {
    let ws = TempWorkspace::new();
    let server = common::lead_server([
        Step::reply(Reply::text("first half, ").stop_max_tokens()),
        Step::text("second half"),
    ]);
    let out = run(troupe(ws.path(), &server, Wire::Anthropic).args([
        "-p",
        "x",
        "--output-format",
        "json",
    ]));
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    assert_eq!(result_json(&out)["result"], "first half, second half");
    let second = &server.requests_for("lead")[1];
    assert!(second.messages().last().unwrap().text().contains("cut off"));
}

#[test]
fn unknown_tool_and_malformed_input_become_error_results() {
    let ws = TempWorkspace::new();
    let server = common::lead_server([
        Step::reply(
            Reply::tool("no_such_tool", json!({})).with_tool("read_file", json!({"path": 42})),
        ),
        Step::dynamic(|req| {
            let results: Vec<_> = req
                .messages()
                .last()
                .unwrap()
                .content
                .iter()
                .filter_map(|b| match b {
                    troupe_protocol::ContentBlock::ToolResult {
                        content, is_error, ..
                    } => Some((content.clone(), *is_error)),
                    _ => None,
                })
                .collect();
            assert_eq!(results.len(), 2, "one result per tool_use");
            assert!(results.iter().all(|(_, e)| *e));
            assert!(results[0].0.contains("unknown tool"), "{}", results[0].0);
            Reply::text("handled")
        }),
    ]);
    let out = run(troupe(ws.path(), &server, Wire::Anthropic).args([
        "-p",
        "x",
        "--output-format",
        "json",
    ]));
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    assert_eq!(result_json(&out)["result"], "handled");
}

#[test]
fn continue_and_resume_reuse_the_session() {
    let ws = TempWorkspace::new();
    let server = FakeServer::start();
    server.script(
        "lead",
        [Step::text("one"), Step::text("two"), Step::text("three")],
    );
    let first = result_json(&run(troupe(ws.path(), &server, Wire::Anthropic).args([
        "-p",
        "first",
        "--output-format",
        "json",
    ])));
    let id = first["session_id"].as_str().unwrap().to_string();
    let second = result_json(&run(troupe(ws.path(), &server, Wire::Anthropic).args([
        "-p",
        "second",
        "--continue",
        "--output-format",
        "json",
    ])));
    assert_eq!(second["session_id"], id.as_str());
    let third = result_json(&run(troupe(ws.path(), &server, Wire::Anthropic).args([
        "-p",
        "third",
        "--resume",
        &id,
        "--output-format",
        "json",
    ])));
    assert_eq!(third["result"], "three");
    let last = server.requests_for("lead").pop().unwrap();
    let texts: Vec<String> = last.messages().iter().map(|m| m.text()).collect();
    assert_eq!(texts, ["first", "one", "second", "two", "third"]);
}

#[test]
fn resume_of_an_unknown_session_is_a_clear_error() {
    let ws = TempWorkspace::new();
    let server = FakeServer::start();
    let out =
        run(troupe(ws.path(), &server, Wire::Anthropic).args(["-p", "x", "--resume", "nope"]));
    assert_eq!(out.status.code(), Some(1));
    common::assert_stderr_has(&out, "no session 'nope'");
}

#[test]
fn missing_provider_configuration_names_the_variables() {
    let ws = TempWorkspace::new();
    let server = FakeServer::start();
    let out = run(troupe(ws.path(), &server, Wire::Anthropic)
        .env_remove("ANTHROPIC_BASE_URL")
        .env_remove("ANTHROPIC_API_KEY")
        .args(["-p", "x"]));
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(
        err.contains("ANTHROPIC_API_KEY") && err.contains("OPENAI_BASE_URL"),
        "{err}"
    );
}

/// In a pid namespace whose session leader lives outside it (how a container often runs its test
/// runner), the kernel reports troupe's session and group as 0. Ending a bash call, which sweeps
/// what the call left behind, must still work there: a command that leaves a process in its own
/// session behind runs, the run succeeds, and nothing panics.
#[test]
fn a_bash_call_works_in_a_pid_namespace_whose_session_leader_is_outside() {
    let probe = std::process::Command::new("unshare")
        .args(["-p", "-f", "--mount-proc", "cat", "/proc/self/stat"])
        .output();
    let Some(stat) = probe
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
    else {
        eprintln!(
            "skipped: this machine cannot create a pid namespace (unshare -p needs CAP_SYS_ADMIN)"
        );
        return;
    };
    // `pid (comm) state ppid pgrp session`: the case under test is a session of 0.
    let session: Vec<&str> = stat
        .rsplit_once(')')
        .unwrap()
        .1
        .split_whitespace()
        .collect();
    assert_eq!(
        session[3], "0",
        "the namespace should hide the session leader: {stat}"
    );

    let ws = TempWorkspace::new();
    let server = common::lead_server([
        Step::tool("bash", json!({"command": "echo inside"})),
        Step::tool(
            "bash",
            json!({"command": "setsid sh -c 'sleep 0.2' </dev/null >/dev/null 2>&1 & echo left"}),
        ),
        Step::text("done"),
    ]);
    let inner = troupe(ws.path(), &server, Wire::Anthropic);
    let mut cmd = std::process::Command::new("unshare");
    cmd.args(["-p", "-f", "--mount-proc"])
        .arg(inner.get_program())
        .args(["-p", "go", "--output-format", "json"])
        .args(["--permission-mode", "bypassPermissions"])
        .current_dir(ws.path());
    for (key, value) in inner.get_envs() {
        match value {
            Some(value) => cmd.env(key, value),
            None => cmd.env_remove(key),
        };
    }
    let out = run(&mut cmd);
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    assert!(
        !stderr(&out).contains("panicked"),
        "stderr: {}",
        stderr(&out)
    );
    assert_eq!(result_json(&out)["result"], "done");
    let results: Vec<String> = server.requests_for("lead")[1..]
        .iter()
        .map(|r| r.last_tool_result().expect("a tool result").0)
        .collect();
    assert!(results[0].contains("inside"), "{results:?}");
    assert!(results[1].contains("left"), "{results:?}");
}
