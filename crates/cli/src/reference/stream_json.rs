//! docs/reference/stream-json.md: the events troupe writes with `--output-format stream-json`,
//! the result object and the control protocol. The fields of the events an agent's run makes
//! and of the result are read from what `render::stream_json` and `render::json` produce for
//! sample events (every `AgentEvent` variant is matched, so a new one fails to compile here);
//! the events written elsewhere (team notices, hooks, control requests) are listed in
//! [`OTHERS`], and a test fails on a `"subtype": "…"` in the sources that no row names.

use crate::render::json::{RunResult, Subtype};
use crate::render::stream_json::{self, Init, Stream};
use serde_json::{json, Value};
use std::fmt::Write;
use troupe_agent::permissions::DenialSource;
use troupe_agent::{AgentEvent, CompactReason, Compaction, PermissionDenial};
use troupe_model::StopReason;
use troupe_protocol::{ChatMessage, ContentBlock, Role, Usage};

/// One kind of line troupe writes or reads, documented by hand: type, subtype, direction,
/// when, fields.
struct Row {
    kind: &'static str,
    subtype: &'static str,
    when: &'static str,
    fields: &'static str,
}

const fn row(
    kind: &'static str,
    subtype: &'static str,
    when: &'static str,
    fields: &'static str,
) -> Row {
    Row {
        kind,
        subtype,
        when,
        fields,
    }
}

/// Lines written outside an agent's event stream.
const OTHERS: &[Row] = &[
    row("system", "teammate_status", "A teammate's status changed (headless lead).", "agent, status, detail, session_id, uuid"),
    row("system", "teammate_tool", "A teammate ran a tool (headless lead).", "agent, tool, summary, session_id, uuid"),
    row("system", "mail", "Team mail between members (headless lead; the lead's own injected mail is the row above).", "from, to, kind, content, session_id, uuid"),
    row("system", "hook_started", "A hook began (Claude Code's hook events).", "hook_id, hook_name, hook_event, uuid, session_id, agent"),
    row("system", "hook_response", "A hook ended: its output and outcome (`success`, `error`, `cancelled`).", "hook_id, hook_name, hook_event, output, stdout, stderr, outcome, uuid, session_id, agent, exit_code (when it exited)"),
    row("control_request", "can_use_tool", "`--permission-prompt-tool stdio`: troupe asks the controlling process about a call.", "request_id, request: {subtype, tool_name, input, permission_suggestions, decision_reason, agent_id}"),
    row("control_request", "hook_callback", "An SDK hook callback (`hooks=` of the Agent SDK) is called.", "request_id, request: {subtype, callback_id, input, tool_use_id}"),
    row("control_request", "mcp_message", "A message for an SDK in-process MCP server (`create_sdk_mcp_server`).", "request_id, request: {subtype, server_name, message}"),
    row("control_response", "success", "The answer to a control request the controlling process sent.", "response: {subtype, request_id, response}"),
    row("control_response", "error", "A control request troupe refused or could not do.", "response: {subtype, request_id, error}"),
];

/// Control requests troupe reads on stdin (`--input-format stream-json`).
const INBOUND: &[(&str, &str)] = &[
    ("initialize", "First: the SDK's hooks, agents, `systemPrompt`, `appendSystemPrompt` and `sdkMcpServers`, read before the lead is built; answered with the commands, agents and output styles (and `system/init` is written)."),
    ("interrupt", "Ends the running turn; the session goes on."),
    ("set_permission_mode", "`mode`: the lead's permission mode from the next call on."),
    ("set_model", "`model`: the lead's model, and that of teammates and subagents started afterwards."),
    ("set_max_thinking_tokens", "`max_thinking_tokens`: a thinking budget, or `null` for none."),
    ("mcp_status", "The MCP servers and their status."),
];

/// Each agent event's name, matched without a wildcard so a new variant fails to compile here
/// until the page says what it writes.
fn variant(event: &AgentEvent<'_>) -> &'static str {
    match event {
        AgentEvent::TextDelta(_) => "TextDelta",
        AgentEvent::ThinkingDelta(_) => "ThinkingDelta",
        AgentEvent::Retrying { .. } => "Retrying",
        AgentEvent::Notice(_) => "Notice",
        AgentEvent::Reply { .. } => "Reply",
        AgentEvent::Assistant(_) => "Assistant",
        AgentEvent::ToolStarted { .. } => "ToolStarted",
        AgentEvent::ToolFinished { .. } => "ToolFinished",
        AgentEvent::PermissionDenied(_) => "PermissionDenied",
        AgentEvent::ToolResults(_) => "ToolResults",
        AgentEvent::MailInjected { .. } => "MailInjected",
        AgentEvent::Compacted(_) => "Compacted",
    }
}

/// A line's keys, nested objects' keys in braces.
fn keys(value: &Value) -> String {
    let Value::Object(map) = value else {
        return String::new();
    };
    map.iter()
        .filter(|(k, _)| *k != "type" && *k != "subtype")
        .map(|(k, v)| match v {
            Value::Object(inner) if !inner.is_empty() && k != "modelUsage" => {
                format!("{k}: {{{}}}", keys_all(v))
            }
            _ => k.clone(),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

fn keys_all(value: &Value) -> String {
    match value {
        Value::Object(map) => map.keys().cloned().collect::<Vec<_>>().join(", "),
        _ => String::new(),
    }
}

/// The lines an agent's events make, one sample each, with the variant that made them.
fn agent_lines() -> Vec<(&'static str, Value)> {
    let root = std::path::Path::new("/work");
    let mut stream = Stream::new("session", "lead", true, root);
    let usage = Usage::default();
    let stop = StopReason::ToolUse;
    let assistant = ChatMessage {
        role: Role::Assistant,
        content: vec![
            ContentBlock::text("Running the tests."),
            ContentBlock::ToolUse {
                id: "toolu_1".into(),
                name: "bash".into(),
                input: json!({"command": "cargo test"}),
            },
        ],
    };
    let results = ChatMessage {
        role: Role::User,
        content: vec![ContentBlock::tool_result("toolu_1", "ok", false)],
    };
    let denial = PermissionDenial {
        tool_name: "bash".into(),
        tool_use_id: "toolu_2".into(),
        tool_input: json!({"command": "rm -rf x"}),
        source: Some(DenialSource::Rule),
        message: "denied by Bash(rm:*)".into(),
    };
    let compaction = Compaction {
        reason: CompactReason::Threshold,
        tokens_before: 100,
        tokens_after: 10,
        summarized: 8,
        kept: 2,
    };
    let input = json!({});
    let events = [
        AgentEvent::TextDelta("Run"),
        AgentEvent::ThinkingDelta("hmm"),
        AgentEvent::Retrying {
            attempt: 1,
            wait_ms: 500,
            reason: "HTTP 529 overloaded",
        },
        AgentEvent::Notice("switching to non-streaming requests"),
        AgentEvent::Reply {
            stop_reason: &stop,
            usage: &usage,
            model: "m",
        },
        AgentEvent::Assistant(&assistant),
        AgentEvent::ToolStarted {
            id: "toolu_1",
            name: "bash",
            input: &input,
        },
        AgentEvent::ToolFinished {
            id: "toolu_1",
            name: "bash",
            content: "ok",
            is_error: false,
        },
        AgentEvent::PermissionDenied(&denial),
        AgentEvent::ToolResults(&results),
        AgentEvent::MailInjected {
            count: 1,
            text: "alice: done",
        },
        AgentEvent::Compacted(&compaction),
    ];
    let mut out = Vec::new();
    for event in &events {
        let name = variant(event);
        let lines = stream.event(event);
        if lines.is_empty() {
            out.push((name, Value::Null));
        }
        // One line per kind is enough: an assistant message's blocks share their fields.
        if let Some(first) = lines.into_iter().next() {
            out.push((name, first));
        }
    }
    out
}

fn init_line() -> Value {
    stream_json::init(&Init {
        session_id: "session",
        model: "m",
        cwd: "/work",
        tools: &[],
        permission_mode: "default",
        mcp_servers: json!([]),
        api_key_source: "ANTHROPIC_API_KEY",
        agents: Vec::new(),
        skills: Vec::new(),
        slash_commands: Vec::new(),
        output_style: "default",
    })
}

fn result_line(subtype: Subtype) -> Value {
    RunResult {
        subtype,
        result: "done".into(),
        num_turns: 1,
        duration_ms: 1,
        duration_api_ms: 1,
        session_id: "session".into(),
        model: "m".into(),
        context_window: 200_000,
        usage: Usage::default(),
        total_cost_usd: 0.0,
        stop_reason: Some("end_turn".into()),
        permission_denials: Vec::new(),
        api_error_status: None,
        agents: Vec::new(),
        teammates: Vec::new(),
        todos: Vec::new(),
        terminal_reason: "completed",
        ttft_ms: None,
        structured_output: None,
    }
    .to_json()
}

/// Every result subtype, matched without a wildcard.
fn subtypes() -> Vec<(Subtype, &'static str)> {
    let all = [
        Subtype::Success,
        Subtype::ErrorMaxTurns,
        Subtype::ErrorMaxBudgetUsd,
        Subtype::ErrorDuringExecution,
    ];
    all.into_iter()
        .map(|s| {
            let when = match s {
                Subtype::Success => "The agent finished (exit 0).",
                Subtype::ErrorMaxTurns => "`--max-turns` ran out (exit 1).",
                Subtype::ErrorMaxBudgetUsd => "The run's cost passed `--max-budget-usd` (exit 1).",
                Subtype::ErrorDuringExecution => "Something failed: the model, the transcript, a team timeout, an interrupt (exit 1).",
            };
            (s, when)
        })
        .collect()
}

fn table_line(page: &mut String, line: &Value, when: &str) {
    let kind = line["type"].as_str().unwrap_or_default();
    let subtype = line["subtype"].as_str().unwrap_or("");
    let _ = writeln!(
        page,
        "| `{kind}` | {} | {when} | {} |",
        code(subtype),
        keys(line)
    );
}

fn code(text: &str) -> String {
    match text.is_empty() {
        true => String::new(),
        false => format!("`{text}`"),
    }
}

/// What each agent event means, for the table.
fn when(variant: &str) -> &'static str {
    match variant {
        "TextDelta" => "With `--include-partial-messages`: streamed text (`delta.type` `text_delta`).",
        "ThinkingDelta" => "With `--include-partial-messages`: streamed thinking (`delta.type` `thinking_delta`).",
        "Retrying" => "A model call failed transiently and is retried.",
        "Notice" => "troupe's own: said once when a provider's client changes how it calls (a server that cannot stream tool calls).",
        "Assistant" => "One line per content block of a model reply (text, thinking, tool_use under Claude Code's tool names).",
        "PermissionDenied" => "A call refused without anybody asked (a rule, the mode, nobody to ask).",
        "ToolResults" => "One line per tool result.",
        "MailInjected" => "Mail or a notification was put into the agent's conversation.",
        "Compacted" => "The conversation was compacted.",
        _ => "",
    }
}

/// The page.
pub fn markdown() -> String {
    let mut page = format!(
        "# stream-json\n\n\
         Generated from `crates/cli/src/render/stream_json.rs`, `render/json.rs` and the rows of\n\
         `crates/cli/src/reference/stream_json.rs`; do not edit by hand. Regenerate with\n\
         `{}`.\n\n\
         `troupe -p --output-format stream-json` writes one JSON object per line, `type` first, in\n\
         Claude Code's shapes (`crates/cli/tests/contract.rs` compares them with a recorded Claude\n\
         Code {} run). troupe's additions are extra fields (`agent`: which agent of the team the\n\
         line is about) and extra `system` subtypes, which the Agent SDKs pass through. Fields\n\
         below are those of a sample line; nested objects' fields are in braces.\n",
        super::REGENERATE,
        stream_json::CONTRACT_VERSION
    );
    page.push_str("\n## Events\n\n| type | subtype | when | fields |\n|---|---|---|---|\n");
    table_line(
        &mut page,
        &init_line(),
        "First: the session, its tools, model, MCP servers, agents, skills, commands.",
    );
    let mut silent = Vec::new();
    for (variant, line) in agent_lines() {
        match line {
            Value::Null => silent.push(variant),
            line => table_line(&mut page, &line, when(variant)),
        }
    }
    for r in OTHERS.iter().filter(|r| r.kind == "system") {
        let _ = writeln!(
            page,
            "| `{}` | `{}` | {} | {} |",
            r.kind, r.subtype, r.when, r.fields
        );
    }
    let _ = writeln!(
        page,
        "\nAgent events that write no line of their own: {} (a reply's stop reason and usage go on\n\
         its `assistant` lines; a tool's start and end show as its `tool_use` and result).",
        silent.iter().map(|v| format!("`{v}`")).collect::<Vec<_>>().join(", ")
    );
    page.push_str(
        "\n## The result\n\nThe last line, and the whole output of `--output-format json`:\n\n",
    );
    let result = result_line(Subtype::Success);
    let _ = writeln!(page, "`type` `result`: {}.\n", keys(&result));
    let error = result_line(Subtype::ErrorDuringExecution);
    let extra: Vec<&String> = error
        .as_object()
        .map(|m| {
            m.keys()
                .filter(|k| result.get(k.as_str()).is_none())
                .collect()
        })
        .unwrap_or_default();
    let _ = writeln!(
        page,
        "An error result also has {}. With a team, `teammates` lists each teammate's last report;\n\
         `todos` is the lead's todo list when it kept one; `structured_output` answers\n\
         `--json-schema`.\n",
        extra.iter().map(|k| format!("`{k}`")).collect::<Vec<_>>().join(", ")
    );
    page.push_str("| subtype | is_error | when |\n|---|---|---|\n");
    for (subtype, when) in subtypes() {
        let line = result_line(subtype);
        let _ = writeln!(
            page,
            "| `{}` | {} | {when} |",
            line["subtype"].as_str().unwrap_or_default(),
            line["is_error"]
        );
    }
    page.push_str(
        "\n## The control protocol\n\n\
         With `--input-format stream-json` troupe reads user messages and control requests as JSON\n\
         lines on stdin (one session until stdin closes), as the Agent SDKs write them.\n\n\
         Control requests troupe answers (`{\"type\": \"control_request\", \"request_id\", \"request\": {\"subtype\", …}}`):\n\n\
         | subtype | what it does |\n|---|---|\n",
    );
    for (subtype, what) in INBOUND {
        let _ = writeln!(page, "| `{subtype}` | {what} |");
    }
    page.push_str("\nLines troupe writes for the controlling process:\n\n| type | subtype | when | fields |\n|---|---|---|---|\n");
    for r in OTHERS.iter().filter(|r| r.kind != "system") {
        let _ = writeln!(
            page,
            "| `{}` | `{}` | {} | {} |",
            r.kind, r.subtype, r.when, r.fields
        );
    }
    page
}

/// Every `"subtype": "…"` literal in the binary's sources and every `Some("…") =>` arm of the
/// control requests is on the page.
#[test]
fn every_subtype_in_the_sources_is_on_the_page() {
    let page = markdown();
    let src = super::root().join("crates/cli/src");
    let mut missing = Vec::new();
    for (path, text) in super::sources(&src) {
        if path.starts_with(src.join("reference")) {
            continue;
        }
        let control = path.ends_with("control/mod.rs");
        for pattern in ["\"subtype\": \"", "Some(\""] {
            if pattern == "Some(\"" && !control {
                continue;
            }
            for (i, _) in text.match_indices(pattern) {
                let rest = &text[i + pattern.len()..];
                let name: String = rest
                    .chars()
                    .take_while(|c| c.is_ascii_lowercase() || *c == '_')
                    .collect();
                let end = if pattern == "Some(\"" { "\") =>" } else { "\"" };
                // `--permission-prompt-tool stdio` is matched in the same file, not a subtype.
                if name.is_empty() || name == "stdio" || !rest[name.len()..].starts_with(end) {
                    continue;
                }
                if !page.contains(&format!("`{name}`")) {
                    missing.push(format!("{name} ({})", path.display()));
                }
            }
        }
    }
    missing.sort();
    missing.dedup();
    assert!(
        missing.is_empty(),
        "subtypes docs/reference/stream-json.md does not list:\n{}",
        missing.join("\n")
    );
}

#[test]
fn stream_json_page_is_up_to_date() {
    super::check_page("docs/reference/stream-json.md", &markdown());
}
