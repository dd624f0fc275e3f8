//! Context compaction through the binary: a long session whose
//! tool outputs add up to several windows stays under the window with every tool call paired
//! with its result, for the lead and for a teammate (who is reminded who it is); the provider's
//! prompt-too-long refusal compacts and retries once, then fails clearly; `--continue` resumes
//! the compacted conversation; `/compact`, `/context` and `/cost` in the REPL.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code may panic on a broken fixture

mod common;

use common::{json_lines, repl, result_json, run, stderr, subcommand, troupe};
use serde_json::json;
use std::collections::HashSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use troupe_protocol::{ChatMessage, ContentBlock, Role};
use troupe_testkit::{FakeServer, Fault, Recorded, Reply, Step, TempWorkspace, Wire};

/// How a summarizing request is told apart from the agent's own calls.
const SUMMARY_SYSTEM_START: &str = "You summarize the work of a coding agent";

fn is_summary(req: &Recorded) -> bool {
    req.system().starts_with(SUMMARY_SYSTEM_START)
}

/// Checks what every provider insists on: the conversation starts with a user message, roles
/// alternate, no message or text block is empty, and every tool_use is answered by a
/// tool_result in the very next message (and every result answers a call just before it).
#[track_caller]
fn assert_well_formed(req: &Recorded) {
    let messages = req.messages();
    assert_eq!(
        messages.first().map(|m| m.role),
        Some(Role::User),
        "starts with the user"
    );
    for pair in messages.windows(2) {
        assert_ne!(pair[0].role, pair[1].role, "roles alternate");
    }
    for (i, m) in messages.iter().enumerate() {
        assert!(!m.content.is_empty(), "message {i} is empty");
        for b in &m.content {
            if let ContentBlock::Text { text } = b {
                assert!(!text.is_empty(), "message {i} has an empty text block");
            }
        }
        let calls: HashSet<&str> = m.tool_uses().map(|(id, _, _)| id).collect();
        let answered: HashSet<&str> = messages.get(i + 1).map(results_of).unwrap_or_default();
        if !calls.is_empty() && i + 1 < messages.len() {
            assert_eq!(
                calls, answered,
                "message {i}'s calls are answered right after"
            );
        }
        if m.role == Role::User {
            let results = results_of(m);
            let asked: HashSet<&str> = match i.checked_sub(1) {
                Some(p) => messages[p].tool_uses().map(|(id, _, _)| id).collect(),
                None => HashSet::new(),
            };
            assert!(
                results.is_subset(&asked),
                "message {i} answers calls that are not right before it"
            );
        }
    }
}

fn results_of(m: &ChatMessage) -> HashSet<&str> {
    m.content
        .iter()
        .filter_map(|b| match b {
            ContentBlock::ToolResult { tool_use_id, .. } => Some(tool_use_id.as_str()),
            _ => None,
        })
        .collect()
}

/// `n` files `fNN.txt` of about 8 KB, every seventh about 30 KB (over the output budget).
fn write_files(ws: &TempWorkspace, n: usize) {
    for i in 0..n {
        let lines = if i % 7 == 3 { 500 } else { 130 };
        let text: String = (0..lines)
            .map(|l| format!("file {i:02} line {l:03}: the quick brown fox jumps over it\n"))
            .collect();
        ws.write(format!("f{i:02}.txt"), &text);
    }
}

/// An agent that reads `rounds` files, one per call, thinking out loud a little each time,
/// then answers `last`; any summarizing request is answered with a summary naming the agent.
fn reader_script(rounds: usize, last: &'static str) -> impl Fn(&Recorded) -> Step {
    let calls = Arc::new(AtomicUsize::new(0));
    move |req: &Recorded| {
        if is_summary(req) {
            return Step::text(&format!(
                "SUMMARY for {}: reading the files one by one; next is the following file.",
                req.agent
            ));
        }
        let n = calls.fetch_add(1, Ordering::SeqCst);
        if n < rounds {
            let note = format!(
                "Reading file {n:02} next. {}",
                "Notes on the work. ".repeat(50)
            );
            Step::reply(
                Reply::text(note).with_tool("read_file", json!({"path": format!("f{n:02}.txt")})),
            )
        } else {
            Step::text(last)
        }
    }
}

/// Every summary request, and every request after the first summary, of `agent`.
fn summaries(server: &FakeServer, agent: &str) -> usize {
    server
        .requests_for(agent)
        .iter()
        .filter(|r| is_summary(r))
        .count()
}

const WINDOW: u64 = 24_000;

#[test]
fn a_sixty_round_session_stays_under_the_window_with_every_call_answered() {
    let ws = TempWorkspace::new();
    write_files(&ws, 60);
    let server = FakeServer::start();
    server.set_context_limit(Some(WINDOW));
    server.set_fallback(reader_script(60, "all sixty files read"));
    let out = run(troupe(ws.path(), &server, Wire::Anthropic).args([
        "-p",
        "read every file",
        "--output-format",
        "stream-json",
        "--permission-mode",
        "bypassPermissions",
        "--context-window",
        &WINDOW.to_string(),
    ]));
    assert!(out.status.success(), "{}", stderr(&out));
    let lines = json_lines(&out);
    let result = lines.last().unwrap();
    assert_eq!(result["result"], "all sixty files read", "{result}");

    let journal = server.journal();
    let read: u64 = (0..60)
        .map(|i| ws.read(format!("f{i:02}.txt")).len() as u64 / 4)
        .sum();
    assert!(
        read > 5 * WINDOW,
        "the files hold {read} tokens: several windows"
    );
    for req in &journal {
        assert!(
            !req.rejected_too_long,
            "a request of {} tokens was refused",
            req.tokens()
        );
        assert!(req.tokens() <= WINDOW);
        assert_well_formed(req);
    }
    // Every step of the pipeline ran: budgeted outputs, stubs, summaries.
    let texts: Vec<String> = journal.iter().map(Recorded::all_text).collect();
    assert!(texts
        .iter()
        .any(|t| t.contains("[output budget: the whole result")));
    assert!(texts
        .iter()
        .any(|t| t.contains("[compacted] result of read_file(f0")));
    let summarized = summaries(&server, "lead");
    assert!(summarized >= 1, "no summary in {} requests", journal.len());
    let boundaries: Vec<_> = lines
        .iter()
        .filter(|l| l["subtype"] == "compact_boundary")
        .collect();
    assert_eq!(boundaries.len(), summarized, "one event per compaction");
    let meta = &boundaries[0]["compact_metadata"];
    assert_eq!(meta["trigger"], "auto");
    assert!(meta["pre_tokens"].as_u64().unwrap() > meta["post_tokens"].as_u64().unwrap());
    // After a summary the agent sees it first; a whole kept result is readable where it says.
    let after = journal
        .iter()
        .skip_while(|r| !is_summary(r))
        .find(|r| !is_summary(r))
        .unwrap();
    assert!(after.messages()[0]
        .text()
        .starts_with("<compacted-conversation>"));
    assert!(after.messages()[0].text().contains("SUMMARY for lead"));
    let kept = std::fs::read_dir(ws.path().join(".troupe/sessions"))
        .unwrap()
        .flatten()
        .find(|e| e.path().is_dir())
        .map(|e| e.path().join("tool-results"))
        .unwrap();
    assert!(
        std::fs::read_dir(&kept).unwrap().count() > 10,
        "whole results kept in {kept:?}"
    );
}

#[test]
fn a_teammate_is_compacted_too_and_reminded_who_it_is() {
    let ws = TempWorkspace::new();
    write_files(&ws, 40);
    let server = FakeServer::start();
    server.set_context_limit(Some(WINDOW));
    server.script(
        "lead",
        [
            Step::tool(
                "spawn_teammate",
                json!({"name": "alice", "role": "tester", "prompt": "read every file"}),
            ),
            Step::text("alice is reading"),
            Step::text("alice read them all"),
        ],
    );
    server.set_fallback(reader_script(40, "read all forty files"));
    let out = run(troupe(ws.path(), &server, Wire::Anthropic).args([
        "-p",
        "have alice read every file",
        "--output-format",
        "json",
        "--permission-mode",
        "bypassPermissions",
        "--context-window",
        &WINDOW.to_string(),
    ]));
    assert!(out.status.success(), "{}", stderr(&out));
    let result = result_json(&out);
    assert_eq!(result["result"], "alice read them all", "{result}");
    let alice = server.requests_for("alice");
    assert!(
        summaries(&server, "alice") >= 1,
        "alice was never compacted"
    );
    for req in &server.journal() {
        assert!(!req.rejected_too_long);
        assert_well_formed(req);
    }
    let after = alice
        .iter()
        .skip_while(|r| !is_summary(r))
        .find(|r| !is_summary(r))
        .unwrap();
    let head = after.messages()[0].text();
    assert!(head.contains("SUMMARY for alice"), "{head}");
    assert!(head.contains("<identity>"), "{head}");
    common::assert_contains(&head, "You are 'alice', a tester on team 'default'");
    assert!(head.contains("Your lead is 'lead'"), "{head}");
    // Each of alice's compactions is in the team's event log, with its tokens.
    let log = subcommand(ws.path(), &["team", "log"]);
    let log = String::from_utf8_lossy(&log.stdout);
    let line = log
        .lines()
        .find(|l| l.contains("alice compacted: threshold:"))
        .unwrap_or_else(|| panic!("no compaction event for alice in:\n{log}"));
    assert!(line.contains(" tokens ("), "{line}");
    // The json result breaks tokens down per agent, and the totals add them up.
    let agents = result["agents"].as_array().unwrap();
    let names: Vec<&str> = agents.iter().map(|a| a["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["lead", "alice"]);
    let sum: u64 = agents
        .iter()
        .map(|a| a["usage"]["input_tokens"].as_u64().unwrap())
        .sum();
    assert_eq!(result["usage"]["input_tokens"].as_u64().unwrap(), sum);
    // Every token alice sent, whether the fake's prompt cache read it, wrote it or neither.
    let alice_usage = &agents[1]["usage"];
    let alice_in = [
        "input_tokens",
        "cache_read_input_tokens",
        "cache_creation_input_tokens",
    ]
    .iter()
    .map(|k| alice_usage[*k].as_u64().unwrap())
    .sum::<u64>();
    let sent: u64 = alice
        .iter()
        .filter(|r| !r.rejected_too_long)
        .map(|r| r.tokens())
        .sum();
    assert_eq!(
        alice_in, sent,
        "alice's tokens are hers, summaries included"
    );
}

/// A lead that reads `n` small files, one per call.
fn small_rounds(ws: &TempWorkspace, n: usize) -> Vec<Step> {
    (0..n)
        .map(|i| {
            ws.write(format!("s{i}.txt"), format!("small file {i}\n"));
            Step::tool("read_file", json!({"path": format!("s{i}.txt")}))
        })
        .collect()
}

#[test]
fn prompt_too_long_compacts_once_and_retries() {
    for wire in [Wire::Anthropic, Wire::OpenAi] {
        let ws = TempWorkspace::new();
        let server = FakeServer::start();
        let mut steps = small_rounds(&ws, 4);
        steps.extend([
            Step::fault(Fault::PromptTooLong),
            Step::text("SUMMARY-AFTER-REFUSAL"),
            Step::text("done after compacting"),
        ]);
        server.script("lead", steps);
        let out = run(troupe(ws.path(), &server, wire).args([
            "-p",
            "read the small files",
            "--output-format",
            "stream-json",
            "--permission-mode",
            "bypassPermissions",
        ]));
        assert!(out.status.success(), "{wire:?}: {}", stderr(&out));
        let lines = json_lines(&out);
        assert_eq!(lines.last().unwrap()["result"], "done after compacting");
        let boundary = lines
            .iter()
            .find(|l| l["subtype"] == "compact_boundary")
            .unwrap();
        assert_eq!(boundary["compact_metadata"]["reason"], "prompt_too_long");
        let lead = server.requests_for("lead");
        assert_eq!(lead.len(), 7);
        assert!(
            is_summary(&lead[5]),
            "the refusal is followed by one summary"
        );
        assert!(
            lead[5].all_text().contains("small file 0"),
            "it summarizes the reads"
        );
        let retry = &lead[6];
        assert_well_formed(retry);
        assert!(retry.messages()[0].text().contains("SUMMARY-AFTER-REFUSAL"));
        assert!(
            !retry.all_text().contains("small file 0"),
            "the old reads are gone"
        );
    }
}

#[test]
fn a_second_refusal_is_a_clear_error() {
    for wire in [Wire::Anthropic, Wire::OpenAi] {
        let ws = TempWorkspace::new();
        let server = FakeServer::start();
        let mut steps = small_rounds(&ws, 3);
        steps.extend([
            Step::fault(Fault::PromptTooLong),
            Step::text("SUMMARY"),
            Step::fault(Fault::PromptTooLong),
            Step::text("never reached"),
        ]);
        server.script("lead", steps);
        let out = run(troupe(ws.path(), &server, wire).args([
            "-p",
            "read",
            "--permission-mode",
            "bypassPermissions",
        ]));
        assert_eq!(out.status.code(), Some(1), "{wire:?}");
        let err = stderr(&out);
        assert!(err.contains("still too long"), "{err}");
        assert!(err.contains("after compacting"), "{err}");
        assert!(
            err.contains("--context-window"),
            "it says what to do: {err}"
        );
        assert_eq!(summaries(&server, "lead"), 1, "one compaction, one retry");
        assert_eq!(server.remaining("lead"), 1);
    }
}

#[test]
fn an_unknown_models_window_is_learned_from_the_refusal() {
    let ws = TempWorkspace::new();
    write_files(&ws, 30);
    let server = FakeServer::start();
    // A local model troupe does not know: it assumes a large window until told otherwise.
    server.set_context_limit(Some(20_000));
    server.set_fallback(reader_script(30, "read thirty"));
    let out = run(troupe(ws.path(), &server, Wire::OpenAi).args([
        "-p",
        "read every file",
        "--output-format",
        "json",
        "--permission-mode",
        "bypassPermissions",
    ]));
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(result_json(&out)["result"], "read thirty");
    let journal = server.journal();
    let refused: Vec<usize> = journal
        .iter()
        .enumerate()
        .filter(|(_, r)| r.rejected_too_long)
        .map(|(i, _)| i)
        .collect();
    assert_eq!(refused.len(), 1, "refused once, then it knew the window");
    assert!(is_summary(&journal[refused[0] + 1]));
    for req in &journal {
        assert_well_formed(req);
    }
}

#[test]
fn continue_after_a_compaction_resumes_the_compacted_conversation() {
    let ws = TempWorkspace::new();
    let server = FakeServer::start();
    let mut steps = small_rounds(&ws, 3);
    steps.extend([
        Step::tool(
            "todo_write",
            json!({"todos": [{"content": "Read the files", "status": "in_progress", "activeForm": "Reading the files"}]}),
        ),
        Step::tool("compact", json!({"focus": "which files were read"})),
        Step::text("SUMMARY-XYZ: three files read"),
        Step::text("first run done"),
    ]);
    server.script("lead", steps);
    let first = common::headless_in_mode(
        ws.path(),
        &server,
        "read the small files",
        "bypassPermissions",
        &[],
    );
    assert!(first.status.success(), "{}", stderr(&first));
    let lead = server.requests_for("lead");
    let summary = lead.iter().find(|r| is_summary(r)).unwrap();
    assert!(
        summary.all_text().contains("which files were read"),
        "the focus is passed on"
    );
    assert!(
        summary.all_text().contains("Read the files"),
        "the todo list too"
    );

    server.script("lead", [Step::text("continued")]);
    let second = run(troupe(ws.path(), &server, Wire::Anthropic).args([
        "-p",
        "what next?",
        "--continue",
        "--output-format",
        "json",
    ]));
    assert!(second.status.success(), "{}", stderr(&second));
    let result = result_json(&second);
    assert_eq!(result["result"], "continued");
    assert_eq!(result["todos"][0]["content"], "Read the files", "{result}");
    let resumed = server.requests_for("lead").last().unwrap().clone();
    assert_well_formed(&resumed);
    let messages = resumed.messages();
    let head = messages[0].text();
    assert!(head.starts_with("<compacted-conversation>"), "{head}");
    assert!(head.contains("SUMMARY-XYZ"));
    assert!(resumed.all_text().contains("what next?"));
    assert!(
        !resumed.all_text().contains("read the small files"),
        "the old prompt is summarized away"
    );
    // The transcript keeps everything, the compaction marked in it.
    let dir = ws.path().join(".troupe/sessions");
    let file = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .find(|e| e.path().extension().is_some_and(|x| x == "jsonl"))
        .unwrap()
        .path();
    let transcript = std::fs::read_to_string(file).unwrap();
    assert!(transcript.contains("read the small files"));
    assert!(transcript.contains(r#""kind":"compact""#));
}

#[test]
fn the_repl_compacts_on_demand_and_shows_the_context_and_the_cost() {
    let ws = TempWorkspace::new();
    let server = common::lead_server([
        Step::text("hello there"),
        Step::text("SUMMARY-REPL"),
        Step::text("still here"),
    ]);
    let out = repl(
        ws.path(),
        &server,
        &["--context-window", "50000"],
        "hi\n/compact the greeting\n/context\nare you there?\n/cost\n/exit\n",
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}\n{}", stderr(&out));
    assert!(text.contains("conversation compacted (as asked)"), "{text}");
    assert!(text.contains("of 50000 tokens"), "{text}");
    assert!(text.contains("window 50000 (configured)"), "{text}");
    common::assert_contains(&text, "compacted 1 time(s); last: requested");
    assert!(text.contains("AGENT") && text.contains("COST"), "{text}");
    let lead = server.requests_for("lead");
    assert!(is_summary(&lead[1]));
    assert!(lead[1].all_text().contains("the greeting"));
    assert!(lead[2].messages()[0].text().contains("SUMMARY-REPL"));
}
