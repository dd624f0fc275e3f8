//! Claude Code's hook events beyond a call and a prompt, through the binary: PostToolBatch once
//! a round's results are in (and `duration_ms` on PostToolUse), PermissionRequest answering a
//! question in place of the person, StopFailure when the model call fails, UserPromptExpansion
//! for a slash command, InstructionsLoaded and PostCompact around a compaction.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code may panic on a broken fixture

mod common;

use common::{headless_bypass, headless_in_mode, stderr};
use serde_json::{json, Value};
use troupe_testkit::{FakeServer, Fault, Step, TempWorkspace};

fn settings(ws: &TempWorkspace, hooks: Value) {
    ws.write(
        ".claude/settings.json",
        serde_json::to_string_pretty(&json!({ "hooks": hooks })).unwrap(),
    );
}

/// A hook entry for `matcher` that appends its stdin to `<file>.jsonl`, then runs `then`.
fn logging(matcher: &str, file: &str, then: &str) -> Value {
    json!([{"matcher": matcher, "hooks": [{"type": "command",
        "command": format!("cat >> \"$CLAUDE_PROJECT_DIR\"/{file}.jsonl; echo >> \"$CLAUDE_PROJECT_DIR\"/{file}.jsonl; {then}")}]}])
}

/// The inputs a [`logging`] hook wrote to `<file>.jsonl` (none when it never ran).
fn logged(ws: &TempWorkspace, file: &str) -> Vec<Value> {
    let name = format!("{file}.jsonl");
    if !ws.exists(&name) {
        return Vec::new();
    }
    ws.read(&name)
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn post_tool_batch_fires_once_a_round_and_its_context_reaches_the_model() {
    let ws = TempWorkspace::new();
    let note = r#"echo '{"hookSpecificOutput": {"hookEventName": "PostToolBatch", "additionalContext": "BATCH-NOTE"}}'"#;
    settings(
        &ws,
        json!({"PostToolBatch": logging("", "batch", note),
               "PostToolUse": logging("Bash", "post", "true")}),
    );
    let server = FakeServer::start();
    common::script_bash_calls(&server, &["echo one", "echo two"]);
    let out = headless_bypass(ws.path(), &server, "go", &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    let batches = logged(&ws, "batch");
    assert_eq!(batches.len(), 2, "{batches:?}");
    assert_eq!(batches[0]["hook_event_name"], "PostToolBatch");
    let calls = batches[1]["tool_calls"].as_array().unwrap();
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0]["tool_name"], "Bash");
    assert_eq!(calls[0]["tool_input"]["command"], "echo two");
    assert!(calls[0]["tool_response"]["content"]
        .as_str()
        .unwrap()
        .contains("two"));
    let lead = server.requests_for("lead");
    assert!(
        lead[1].all_text().contains("BATCH-NOTE"),
        "the model sees it"
    );
    let post = logged(&ws, "post");
    assert_eq!(post.len(), 2);
    assert!(post[0]["duration_ms"].is_u64(), "{:?}", post[0]);
}

#[test]
fn a_permission_request_hook_answers_the_question_in_place_of_the_person() {
    let ws = TempWorkspace::new();
    let answer = |behavior: &str| {
        format!(
            r#"echo '{{"hookSpecificOutput": {{"hookEventName": "PermissionRequest", "decision": {{"behavior": "{behavior}", "message": "not {behavior}ed here"}}}}}}'"#
        )
    };
    settings(
        &ws,
        json!({"PermissionRequest": [
            {"matcher": "Bash", "hooks": [{"type": "command", "if": "Bash(touch:*)", "command": answer("allow")}]},
            {"matcher": "Bash", "hooks": [{"type": "command", "if": "Bash(rm:*)", "command": answer("deny")}]},
            {"matcher": "Bash", "hooks": [{"type": "command",
              "command": "cat >> \"$CLAUDE_PROJECT_DIR\"/asked.jsonl; echo >> \"$CLAUDE_PROJECT_DIR\"/asked.jsonl"}]}
        ]}),
    );
    ws.write("keep.txt", "kept");
    let server = FakeServer::start();
    common::script_bash_calls(&server, &["touch made.txt", "rm keep.txt"]);
    let out = headless_in_mode(ws.path(), &server, "go", "default", &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        ws.exists("made.txt"),
        "the hook allowed it, nobody was asked"
    );
    assert!(ws.exists("keep.txt"));
    let refused = server.requests_for("lead")[2].last_tool_result().unwrap();
    assert!(
        refused.1 && refused.0.contains("not denyed here"),
        "{refused:?}"
    );
    let asked = logged(&ws, "asked");
    assert_eq!(asked.len(), 2, "{asked:?}");
    assert_eq!(asked[0]["hook_event_name"], "PermissionRequest");
    assert_eq!(asked[0]["tool_name"], "Bash");
    assert_eq!(asked[0]["tool_input"]["command"], "touch made.txt");
}

#[test]
fn a_failed_model_call_fires_stop_failure_matched_on_its_kind() {
    let ws = TempWorkspace::new();
    settings(
        &ws,
        json!({"StopFailure": [
            {"matcher": "invalid_request", "hooks": [{"type": "command",
              "command": "cat > \"$CLAUDE_PROJECT_DIR\"/failure.json"}]},
            {"matcher": "rate_limit", "hooks": [{"type": "command",
              "command": "touch \"$CLAUDE_PROJECT_DIR\"/rate_limited"}]}
        ]}),
    );
    let server = FakeServer::start();
    server.script(
        "lead",
        [Step::fault(Fault::Status {
            code: 400,
            retry_after: None,
            body: "bad request from the test".into(),
        })],
    );
    let out = headless_bypass(ws.path(), &server, "go", &[]);
    assert!(!out.status.success());
    let failure: Value = serde_json::from_str(&ws.read("failure.json")).unwrap();
    assert_eq!(failure["hook_event_name"], "StopFailure");
    assert_eq!(failure["error_type"], "invalid_request");
    assert_eq!(failure["error"], "400");
    assert!(
        failure["error_message"]
            .as_str()
            .unwrap()
            .contains("bad request from the test"),
        "{failure}"
    );
    assert!(!ws.exists("rate_limited"));
}

#[test]
fn user_prompt_expansion_sees_a_slash_command_and_may_refuse_or_add_to_it() {
    let ws = TempWorkspace::new();
    ws.write(
        ".claude/commands/review.md",
        "Review $ARGUMENTS carefully.\n",
    );
    ws.write(".claude/commands/greet.md", "Say hello.\n");
    settings(
        &ws,
        json!({"UserPromptExpansion": [
            {"matcher": "review", "hooks": [{"type": "command",
              "command": "cat > \"$CLAUDE_PROJECT_DIR\"/expansion.json; echo 'no reviews today' >&2; exit 2"}]},
            {"matcher": "greet", "hooks": [{"type": "command", "command": "echo GREETING-CONTEXT"}]}
        ]}),
    );
    let server = FakeServer::start();
    server.script("lead", [Step::text("hello")]);
    let refused = headless_bypass(ws.path(), &server, "/review the diff", &[]);
    assert!(!refused.status.success());
    assert!(
        stderr(&refused).contains("no reviews today"),
        "{}",
        stderr(&refused)
    );
    assert!(
        server.requests_for("lead").is_empty(),
        "the model never saw it"
    );
    let expansion: Value = serde_json::from_str(&ws.read("expansion.json")).unwrap();
    assert_eq!(expansion["hook_event_name"], "UserPromptExpansion");
    assert_eq!(expansion["command_name"], "review");
    assert_eq!(expansion["command_args"], "the diff");
    assert_eq!(expansion["command_source"], "project");
    assert_eq!(expansion["prompt"], "Review the diff carefully.");
    let greeted = headless_bypass(ws.path(), &server, "/greet", &[]);
    assert!(greeted.status.success(), "{}", stderr(&greeted));
    let text = server.requests_for("lead")[0].all_text();
    assert!(
        text.contains("Say hello.") && text.contains("GREETING-CONTEXT"),
        "{text}"
    );
}

#[test]
fn instructions_loaded_and_post_compact_frame_a_compaction() {
    let ws = TempWorkspace::new();
    ws.write("CLAUDE.md", "Be brief.\n");
    settings(
        &ws,
        json!({"InstructionsLoaded": logging("", "instructions", "true"),
               "PostCompact": logging("manual", "compacted", "true")}),
    );
    let server = FakeServer::start();
    server.script(
        "lead",
        [
            Step::tool("bash", json!({"command": "echo before"})),
            Step::tool("compact", json!({"focus": "the echo"})),
            Step::text("SUMMARY-OF-IT"),
            Step::text("done"),
        ],
    );
    let out = headless_bypass(ws.path(), &server, "go", &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    let loaded = logged(&ws, "instructions");
    let reasons: Vec<&str> = loaded
        .iter()
        .map(|l| l["load_reason"].as_str().unwrap())
        .collect();
    assert_eq!(reasons, ["session_start", "compact"], "{loaded:?}");
    assert!(loaded[0]["file_path"]
        .as_str()
        .unwrap()
        .ends_with("CLAUDE.md"));
    assert_eq!(loaded[0]["memory_type"], "Project");
    let compacted = logged(&ws, "compacted");
    assert_eq!(compacted.len(), 1, "{compacted:?}");
    assert_eq!(compacted[0]["trigger"], "manual");
    assert!(compacted[0]["compact_summary"]
        .as_str()
        .unwrap()
        .contains("SUMMARY-OF-IT"));
    assert!(compacted[0]["tokens_before"].is_u64());
}
