//! The `task` subagent through the real binary: only the final text comes back, definitions
//! shape the subagent, several calls run at once, usage is the lead's.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code may panic on a broken fixture

mod common;

use common::{headless_bypass, result_json, stderr};
use serde_json::json;
use troupe_testkit::{Reply, Step, TempWorkspace};

fn define(ws: &std::path::Path, name: &str, extra: &str) {
    let dir = ws.join(".claude/agents");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join(format!("{name}.md")),
        format!("---\nname: {name}\ndescription: the {name} agent\n{extra}---\nYou are the {name} specialist.\n"),
    )
    .unwrap();
}

#[test]
fn only_the_final_text_comes_back_and_usage_is_the_leads() {
    let ws = TempWorkspace::new();
    std::fs::write(ws.path().join("notes.txt"), "the answer is 42").unwrap();
    define(ws.path(), "reader", "tools: Read, Grep\n");
    let server = common::lead_server([
            Step::reply(
                Reply::tool(
                    "task",
                    json!({"description": "find answer", "prompt": "What number is in notes.txt?", "subagent_type": "reader"}),
                )
                .usage(100, 10),
            ),
            Step::reply(Reply::text("it is 42").usage(200, 5)),
        ]);
    server.script(
        "reader",
        [
            Step::reply(Reply::tool("read_file", json!({"path": "notes.txt"})).usage(50, 7)),
            Step::reply(Reply::text("The number is 42.").usage(60, 3)),
        ],
    );
    let out = headless_bypass(ws.path(), &server, "delegate", &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    let result = result_json(&out);
    assert_eq!(result["result"], "it is 42");
    let (report, is_error) = server.requests_for("lead")[1].last_tool_result().unwrap();
    assert!(!is_error);
    assert_eq!(
        report, "The number is 42.",
        "only the final text, not the file read"
    );
    let sub = server.requests_for("reader");
    assert!(sub[0].system().contains("You are the reader specialist."));
    let mut tools = sub[0].tool_names();
    tools.sort();
    assert_eq!(
        tools,
        ["compact", "grep", "read_file", "todo_write"],
        "the definition's tools only, with the todo list and compaction every agent has"
    );
    assert!(
        !sub[0].all_text().contains("delegate"),
        "a fresh conversation"
    );
    assert_eq!(
        result["usage"]["input_tokens"],
        100 + 200 + 50 + 60,
        "{result}"
    );
    let lead_tools = server.requests_for("lead")[0].tool_names();
    assert!(lead_tools.contains(&"task".to_string()));
}

#[test]
fn several_task_calls_in_one_response_run_at_once() {
    let ws = TempWorkspace::new();
    define(ws.path(), "waiter", "");
    define(ws.path(), "signaller", "");
    let server = common::lead_server([
            Step::reply(
                Reply::tool("task", json!({"description": "wait", "prompt": "wait for the flag", "subagent_type": "waiter"}))
                    .with_tool("task", json!({"description": "signal", "prompt": "raise the flag", "subagent_type": "signaller"})),
            ),
            Step::text("both done"),
        ]);
    // The waiter finishes only if the signaller runs while it waits: run one after the other,
    // the waiter would give up after 20 s and say so.
    server.script(
        "waiter",
        [
            Step::tool(
                "bash",
                json!({"command": "for i in $(seq 400); do [ -e flag ] && echo seen && exit 0; sleep 0.05; done; echo gave up; exit 1"}),
            ),
            Step::dynamic(|r| Reply::text(format!("waiter: {}", r.last_tool_result().unwrap().0.trim()))),
        ],
    );
    server.script(
        "signaller",
        [
            Step::tool("bash", json!({"command": "touch flag"})),
            Step::text("signaller: raised"),
        ],
    );
    let out = headless_bypass(ws.path(), &server, "go", &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    let request = &server.requests_for("lead")[1];
    let text = request.all_text();
    assert!(text.contains("waiter: seen"), "{text}");
    assert!(text.contains("signaller: raised"), "{text}");
}

#[test]
fn an_unknown_type_is_an_error_naming_the_known_ones() {
    let ws = TempWorkspace::new();
    define(ws.path(), "reader", "");
    let server = common::lead_server([
        Step::tool(
            "task",
            json!({"description": "x", "prompt": "y", "subagent_type": "writer"}),
        ),
        Step::text("ok"),
    ]);
    let out = headless_bypass(ws.path(), &server, "go", &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    let (text, is_error) = server.requests_for("lead")[1].last_tool_result().unwrap();
    assert!(
        is_error && text.contains("no agent type 'writer'") && text.contains("reader"),
        "{text}"
    );
}

/// At the REPL a subagent call reads `task(reader: "…")`, and while it runs the subagent's own
/// calls show beneath it, as a running command's output does.
#[test]
fn a_running_subagent_shows_its_calls_beneath_its_task_line() {
    if !common::tmux::available() {
        return;
    }
    let ws = TempWorkspace::new();
    std::fs::write(ws.path().join("notes.txt"), "the answer is 42").unwrap();
    define(ws.path(), "reader", "tools: Read, Grep\n");
    let server = common::lead_server([
        Step::tool(
            "task",
            json!({"description": "find answer", "prompt": "What number is in notes.txt?", "subagent_type": "reader"}),
        ),
        Step::text("it is 42"),
    ]);
    // The subagent's second call waits until the test has seen the screen.
    let (release, gate) = std::sync::mpsc::channel::<()>();
    let gate = std::sync::Mutex::new(gate);
    server.script(
        "reader",
        [
            Step::tool("read_file", json!({"path": "notes.txt"})),
            Step::dynamic(move |_| {
                let _ = gate
                    .lock()
                    .unwrap()
                    .recv_timeout(std::time::Duration::from_secs(60));
                Reply::text("The number is 42.")
            }),
        ],
    );
    let tmux = common::tmux::Tmux::start(
        ws.path(),
        &server,
        &["--permission-mode", "bypassPermissions"],
    );
    tmux.wait_for("/help for commands");
    tmux.type_line("delegate");
    tmux.wait_for("⏺ task(reader: \"find answer\")");
    tmux.wait_for("│ ⏺ read_file(notes.txt)");
    release.send(()).unwrap();
    tmux.wait_for("it is 42");
    tmux.type_line("/exit");
    assert!(
        troupe_testkit::eventually(std::time::Duration::from_secs(20), || tmux.gone()),
        "{}",
        tmux.screen()
    );
}
