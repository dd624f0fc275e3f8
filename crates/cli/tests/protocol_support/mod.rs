//! Shared helpers of the team-protocol tests (`protocols_*.rs`): reading the mail and tool
//! calls an agent was shown, spawning teammates, running the lead headless, and inspecting the
//! team store.

// Each protocol test binary uses only some of these helpers.
#![allow(dead_code)]

use crate::common::{result_json, run, stderr, troupe};
use serde_json::{json, Value};
use std::path::Path;
use std::process::Output;
use troupe_protocol::{ContentBlock, Member, Request, RequestKind};
use troupe_store::{RequestFilter, SharedStore};
use troupe_testkit::{FakeServer, Recorded, TempWorkspace, Wire};

/// One `<message …>` block of an injected inbox.
#[derive(Debug, Clone)]
pub struct Mail {
    /// The `type` attribute, e.g. `shutdown_request`.
    pub kind: String,
    /// Who sent it.
    pub from: String,
    /// The protocol request it belongs to, if any.
    pub request_id: Option<String>,
    /// The text between the tags.
    pub body: String,
}

fn attr(head: &str, name: &str) -> Option<String> {
    let key = format!(" {name}=\"");
    let start = head.find(&key)? + key.len();
    let len = head[start..].find('"')?;
    Some(head[start..start + len].to_string())
}

/// Every mail the agent has been shown so far, oldest first.
pub fn mails(rec: &Recorded) -> Vec<Mail> {
    let text = rec.all_text();
    let mut out = Vec::new();
    let mut rest = text.as_str();
    while let Some(at) = rest.find("<message id=\"") {
        rest = &rest[at..];
        let Some(head_end) = rest.find('>') else {
            break;
        };
        let head = &rest[..head_end];
        let body_end = rest.find("</message>").unwrap_or(rest.len());
        out.push(Mail {
            kind: attr(head, "type").unwrap_or_default(),
            from: attr(head, "from").unwrap_or_default(),
            request_id: attr(head, "request_id"),
            body: rest[head_end + 1..body_end].to_string(),
        });
        rest = &rest[body_end.min(rest.len())..];
        if rest.starts_with("</message>") {
            rest = &rest["</message>".len()..];
        }
    }
    out
}

/// Request ids of mail of one kind, first appearance order, without repeats.
pub fn request_ids(rec: &Recorded, kind: &str) -> Vec<String> {
    let mut ids: Vec<String> = Vec::new();
    for m in mails(rec).into_iter().filter(|m| m.kind == kind) {
        if let Some(id) = m.request_id {
            if !ids.contains(&id) {
                ids.push(id);
            }
        }
    }
    ids
}

/// Inputs of every call of `tool` the agent has made so far.
pub fn calls(rec: &Recorded, tool: &str) -> Vec<Value> {
    rec.messages()
        .iter()
        .flat_map(|m| m.content.clone())
        .filter_map(|b| match b {
            ContentBlock::ToolUse { name, input, .. } if name == tool => Some(input),
            _ => None,
        })
        .collect()
}

/// Request ids the agent has already answered with `tool`.
pub fn answered(rec: &Recorded, tool: &str) -> Vec<String> {
    calls(rec, tool)
        .iter()
        .filter_map(|i| i["request_id"].as_str().map(str::to_string))
        .collect()
}

/// The first id of `kind` mail not yet answered with `tool`.
pub fn unanswered(rec: &Recorded, kind: &str, tool: &str) -> Option<String> {
    let done = answered(rec, tool);
    request_ids(rec, kind)
        .into_iter()
        .find(|id| !done.contains(id))
}

/// Results of every call of `tool`, in order, as (content, is_error).
pub fn results_of(rec: &Recorded, tool: &str) -> Vec<(String, bool)> {
    let messages = rec.messages();
    let ids: Vec<String> = messages
        .iter()
        .flat_map(|m| m.content.clone())
        .filter_map(|b| match b {
            ContentBlock::ToolUse { id, name, .. } if name == tool => Some(id),
            _ => None,
        })
        .collect();
    messages
        .iter()
        .flat_map(|m| m.content.clone())
        .filter_map(|b| match b {
            ContentBlock::ToolResult {
                tool_use_id,
                content,
                is_error,
                ..
            } if ids.contains(&tool_use_id) => Some((content, is_error)),
            _ => None,
        })
        .collect()
}

/// Whether the agent has been shown mail of `kind` from `from`.
pub fn has_mail(rec: &Recorded, kind: &str, from: &str) -> bool {
    mails(rec).iter().any(|m| m.kind == kind && m.from == from)
}

/// Input of a `spawn_teammate` call for a coder named `name`.
pub fn spawn(name: &str, prompt: &str, require_plan: bool) -> Value {
    json!({"name": name, "role": "coder", "prompt": prompt, "require_plan": require_plan})
}

/// The default team's store in workspace `ws`.
pub fn store(ws: &Path) -> SharedStore {
    troupe_store::file::open(&ws.join(".troupe"), "default").expect("team store opens")
}

/// `name`'s roster entry; panics if they are not on the roster.
pub async fn member(ws: &Path, name: &str) -> Member {
    store(ws)
        .roster()
        .await
        .unwrap()
        .get(name)
        .cloned()
        .unwrap_or_else(|| panic!("{name} is on the roster"))
}

/// Every request of `kind` in the team's store.
pub async fn requests(ws: &Path, kind: RequestKind) -> Vec<Request> {
    store(ws)
        .list_requests(&RequestFilter {
            kind: Some(kind),
            ..RequestFilter::default()
        })
        .await
        .unwrap()
}

/// A headless run of the lead with a team; `mode` is the permission mode for everyone.
pub fn headless(ws: &TempWorkspace, server: &FakeServer, mode: &str, extra: &[&str]) -> Output {
    let out = run(troupe(ws.path(), server, Wire::Anthropic)
        .args([
            "-p",
            "run the scenario",
            "--output-format",
            "json",
            "--team-timeout",
            "120",
            "--permission-mode",
            mode,
        ])
        .args(extra));
    assert!(
        out.status.success(),
        "stdout: {}\nstderr: {}",
        String::from_utf8_lossy(&out.stdout),
        stderr(&out)
    );
    assert_eq!(result_json(&out)["subtype"], "success");
    out
}
