//! A real local server on the OpenAI wire: llama.cpp's server code (the `xllamacpp` package's
//! prebuilt build of its `tools/server`) serving SmolLM2-135M-Instruct, started once for this
//! binary ([`troupe_testkit::llama`]). With `TROUPE_OPENAI_TOOL_CHOICE=required` the server's
//! grammar forces a tool call; troupe must read that call from the server's stream through its
//! OpenAI client and run it. A wire-format test, not a quality test: it asserts the shape of
//! what crossed the wire and of what troupe did with it, not what the model chose to say.
//!
//! A loopback relay between troupe and the server keeps the bytes of both directions, so the
//! test sees the request troupe sent and the chunks the server streamed back.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code may panic on a broken fixture

mod common;

use common::{json_lines, stderr};
use serde_json::Value;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use troupe_testkit::{llama, TempWorkspace};

/// Bytes one direction of the relay carried.
type Seen = Arc<Mutex<Vec<u8>>>;

/// A loopback relay to `upstream` (`127.0.0.1:PORT`): its address, what clients sent and what
/// the server answered.
fn relay(upstream: String) -> (String, Seen, Seen) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap().to_string();
    let (sent, answered): (Seen, Seen) = Default::default();
    let (to_server, to_client) = (sent.clone(), answered.clone());
    std::thread::spawn(move || {
        for client in listener.incoming() {
            let Ok(client) = client else { break };
            let server = TcpStream::connect(&upstream).unwrap();
            pump(
                client.try_clone().unwrap(),
                server.try_clone().unwrap(),
                &to_server,
            );
            pump(server, client, &to_client);
        }
    });
    (address, sent, answered)
}

/// Copies `from` to `to` on a thread of its own, keeping a copy in `seen`.
fn pump(mut from: TcpStream, mut to: TcpStream, seen: &Seen) {
    let seen = seen.clone();
    std::thread::spawn(move || {
        let mut buf = [0u8; 16 * 1024];
        while let Ok(n) = from.read(&mut buf) {
            if n == 0 || to.write_all(&buf[..n]).is_err() {
                break;
            }
            seen.lock().unwrap().extend_from_slice(&buf[..n]);
        }
        let _ = to.shutdown(std::net::Shutdown::Write);
    });
}

/// The tools troupe offers besides `bash`, refused whole so that they are not offered: each
/// one's schema is prompt the model reads before its first token, slowly on a CPU.
const NOT_OFFERED: &[&str] = &[
    "bash_output",
    "kill_background",
    "spawn_teammate",
    "list_teammates",
    "send_message",
    "broadcast",
    "read_inbox",
    "shutdown_request",
    "review_plan",
    "review_permission",
    "list_requests",
    "create_task",
    "list_tasks",
    "get_task",
    "claim_task",
    "update_task",
    "complete_task",
    "create_worktree",
    "remove_worktree",
    "keep_worktree",
    "list_worktrees",
    "schedule_cron",
    "list_crons",
    "cancel_cron",
];

/// The JSON of every `data:` line in `bytes` (an event stream, in HTTP chunks).
fn sse_chunks(bytes: &[u8]) -> Vec<Value> {
    String::from_utf8_lossy(bytes)
        .lines()
        .filter_map(|line| line.strip_prefix("data: "))
        .filter_map(|data| serde_json::from_str(data).ok())
        .collect()
}

#[test]
fn a_forced_tool_call_streams_from_llama_cpp_and_troupe_runs_it() {
    let what = format!(
        "llama.cpp's server and the SmolLM2 model ({})",
        llama::INSTALL
    );
    if !troupe_testkit::requirement(&what, llama::available()) {
        return;
    }
    let base = llama::base_url();
    let upstream = base
        .trim_start_matches("http://")
        .trim_end_matches("/v1")
        .to_owned();
    let (address, sent, answered) = relay(upstream);
    let ws = TempWorkspace::new();
    let started = std::time::Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_troupe"))
        .current_dir(ws.path())
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("ANTHROPIC_BASE_URL")
        .env_remove("OPENAI_API_KEY")
        .env_remove("TROUPE_MODEL")
        .env_remove("XDG_CONFIG_HOME")
        .env("HOME", ws.path().join(".home"))
        .env("OPENAI_BASE_URL", format!("http://{address}/v1"))
        .env("TROUPE_OPENAI_TOOL_CHOICE", "required")
        .env("TROUPE_TEAM", "default")
        .args(["--provider", "openai", "--model", "smollm2-135m"])
        .args([
            "-p",
            "Run: echo hello",
            "--tools",
            "bash",
            "--max-turns",
            "1",
        ])
        .args(["--max-tokens", "256", "--context-window", "8192"])
        .args(["--output-format", "stream-json", "--verbose"])
        .args(["--permission-mode", "bypassPermissions"])
        .args(["--disallowedTools", &NOT_OFFERED.join(",")])
        // A busy machine reads the prompt slowly; this test is about the wire, not deadlines.
        .env("TROUPE_STREAM_IDLE_TIMEOUT_MS", "300000")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    eprintln!(
        "troupe's run against llama.cpp took {:?}",
        started.elapsed()
    );
    let err = stderr(&out);
    let lines = json_lines(&out);
    let context = format!("stderr: {err}\nstdout: {lines:#?}");

    // troupe asked for a stream with the tools and a forced call (after the HEAD of the base
    // URL it opened the connection with while it started).
    let request = String::from_utf8_lossy(&sent.lock().unwrap()).into_owned();
    let call = request
        .find("POST ")
        .map_or(request.as_str(), |at| &request[at..]);
    let body: Value = call
        .split_once("\r\n\r\n")
        .and_then(|(_, rest)| {
            serde_json::Deserializer::from_str(rest)
                .into_iter::<Value>()
                .next()?
                .ok()
        })
        .unwrap_or_else(|| panic!("no JSON request body: {request}"));
    assert_eq!(body["stream"], true, "{body}");
    assert_eq!(body["tool_choice"], "required", "{body}");
    assert!(
        body["tools"].as_array().is_some_and(|t| !t.is_empty()),
        "{body}"
    );

    // The server streamed the call in pieces: its name first, the arguments in fragments.
    let chunks = sse_chunks(&answered.lock().unwrap());
    let calls: Vec<&Value> = chunks
        .iter()
        .filter_map(|c| c.pointer("/choices/0/delta/tool_calls/0"))
        .collect();
    assert!(calls.len() >= 2, "not streamed in pieces: {chunks:#?}");
    assert_eq!(calls[0]["function"]["name"], "bash", "{calls:#?}");
    assert!(
        chunks
            .iter()
            .any(|c| c.pointer("/choices/0/finish_reason") == Some(&"tool_calls".into())),
        "{chunks:#?}"
    );

    // troupe read it from the stream: no fallback to whole answers, no retry.
    for line in &lines {
        assert_ne!(line["subtype"], "notice", "{context}");
        assert_ne!(line["subtype"], "api_retry", "{context}");
    }
    // It became a tool call troupe ran: a tool_use with an object input, then its result.
    let blocks = |role: &str, kind: &str| -> Vec<Value> {
        lines
            .iter()
            .filter(|l| l["type"] == role)
            .flat_map(|l| {
                l["message"]["content"]
                    .as_array()
                    .cloned()
                    .unwrap_or_default()
            })
            .filter(|b| b["type"] == kind)
            .collect()
    };
    let uses = blocks("assistant", "tool_use");
    assert_eq!(uses.len(), 1, "{context}");
    // (stream-json names troupe's bash as Claude Code does.)
    assert_eq!(uses[0]["name"], "Bash", "{context}");
    assert!(uses[0]["input"]["command"].is_string(), "{context}");
    assert_eq!(uses[0]["id"], calls[0]["id"], "{context}");
    let results = blocks("user", "tool_result");
    assert_eq!(results.len(), 1, "{context}");
    assert_eq!(results[0]["tool_use_id"], uses[0]["id"], "{context}");
    // The one model call the run allowed was spent on the call.
    let result = lines.last().cloned().unwrap_or(Value::Null);
    assert_eq!(result["type"], "result", "{context}");
    assert_eq!(result["subtype"], "error_max_turns", "{context}");
}
