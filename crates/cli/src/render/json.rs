//! The `result` object printed at the end of a headless run (`--output-format json`) and as the
//! last line of `stream-json` — the same fields as `claude -p`.

use serde_json::{json, Value};
use troupe_protocol::Usage;

/// How a headless run ended, as the `subtype` field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Subtype {
    /// The agent finished.
    Success,
    /// `--max-turns` ran out.
    ErrorMaxTurns,
    /// The run's cost passed `--max-budget-usd`.
    ErrorMaxBudgetUsd,
    /// Something failed (model, transcript, team timeout).
    ErrorDuringExecution,
}

impl Subtype {
    fn as_str(self) -> &'static str {
        match self {
            Subtype::Success => "success",
            Subtype::ErrorMaxTurns => "error_max_turns",
            Subtype::ErrorMaxBudgetUsd => "error_max_budget_usd",
            Subtype::ErrorDuringExecution => "error_during_execution",
        }
    }

    /// True for every subtype but success.
    pub fn is_error(self) -> bool {
        self != Subtype::Success
    }
}

/// Everything the result object reports.
#[derive(Debug, Clone)]
pub struct RunResult {
    /// How it ended.
    pub subtype: Subtype,
    /// Final text, or the error message.
    pub result: String,
    /// Model calls made.
    pub num_turns: u32,
    /// Wall time of the run.
    pub duration_ms: u64,
    /// Time spent waiting on the model.
    pub duration_api_ms: u64,
    /// The session id, for `--resume`.
    pub session_id: String,
    /// The model the lead used.
    pub model: String,
    /// The lead's context window in tokens (`modelUsage`'s `contextWindow`).
    pub context_window: u64,
    /// Tokens used.
    pub usage: Usage,
    /// Approximate cost.
    pub total_cost_usd: f64,
    /// Why the last model reply stopped (`end_turn`, `tool_use`, …), when there was one.
    pub stop_reason: Option<String>,
    /// The calls that were refused.
    pub permission_denials: Vec<troupe_agent::PermissionDenial>,
    /// The HTTP status of the model error the run failed on, if it did.
    pub api_error_status: Option<u16>,
    /// Each agent's tokens and cost (the lead, its subagents, each teammate); `usage` and
    /// `total_cost_usd` are their sums.
    pub agents: Vec<crate::cost::AgentCost>,
    /// Each teammate's last report, when a team worked.
    pub teammates: Vec<Value>,
    /// The lead's todo list at the end, when it kept one.
    pub todos: Vec<troupe_agent::todo::TodoItem>,
    /// Claude Code's `terminal_reason`: `completed`, `max_turns`, `interrupted` or `error`.
    pub terminal_reason: &'static str,
    /// Milliseconds to the model's first content, when it sent any.
    pub ttft_ms: Option<u64>,
    /// With `--json-schema`: the final answer as the JSON value the schema accepted.
    pub structured_output: Option<Value>,
}

impl RunResult {
    /// The JSON object: `type` first, then Claude Code's fields, then troupe's additions.
    pub fn to_json(&self) -> Value {
        let mut model_usage = serde_json::Map::new();
        if !self.model.is_empty() {
            let mut entry = json!({
                "inputTokens": self.usage.input_tokens,
                "outputTokens": self.usage.output_tokens,
                "cacheReadInputTokens": self.usage.cache_read_input_tokens,
                "cacheCreationInputTokens": self.usage.cache_creation_input_tokens,
                "webSearchRequests": 0,
                "costUSD": self.total_cost_usd,
                "contextWindow": self.context_window,
            });
            // troupe's addition: the server counted nothing, these are estimates.
            if self.usage.estimated {
                entry["estimated"] = json!(true);
            }
            model_usage.insert(self.model.clone(), entry);
        }
        let mut value = json!({
            "type": "result",
            "subtype": self.subtype.as_str(),
            "is_error": self.subtype.is_error(),
            "duration_ms": self.duration_ms,
            "duration_api_ms": self.duration_api_ms,
            "num_turns": self.num_turns,
            "result": self.result,
            "stop_reason": self.stop_reason,
            "session_id": self.session_id,
            "total_cost_usd": self.total_cost_usd,
            "usage": result_usage(&self.usage),
            "modelUsage": model_usage,
            "cache_hit_rate": self.usage.cache_hit_rate(),
            "permission_denials": self.permission_denials,
            "api_error_status": self.api_error_status,
            "terminal_reason": self.terminal_reason,
            "ttft_ms": self.ttft_ms,
            "uuid": super::stream_json::uuid(),
        });
        if self.subtype.is_error() {
            value["errors"] = json!([self.result]);
        }
        if let Some(structured) = &self.structured_output {
            value["structured_output"] = structured.clone();
        }
        value["agents"] = self
            .agents
            .iter()
            .map(crate::cost::AgentCost::to_json)
            .collect();
        if !self.todos.is_empty() {
            value["todos"] = json!(self.todos);
        }
        if !self.teammates.is_empty() {
            value["teammates"] = Value::Array(self.teammates.clone());
        }
        value
    }
}

/// The refused calls in Claude Code's tool names and input fields.
pub fn claude_denials(
    denials: Vec<troupe_agent::PermissionDenial>,
    root: &std::path::Path,
) -> Vec<troupe_agent::PermissionDenial> {
    use troupe_protocol::claude_names;
    denials
        .into_iter()
        .map(|d| troupe_agent::PermissionDenial {
            tool_input: claude_names::input_to_claude(&d.tool_name, &d.tool_input, root),
            tool_name: claude_names::shown_name(&d.tool_name).to_string(),
            tool_use_id: d.tool_use_id,
            source: d.source,
            message: d.message,
        })
        .collect()
}

/// The result's usage: the wire's fields, then those Claude Code 2.1 adds (no server tools run
/// here; cache writes counted under the lifetime entries are written for).
fn result_usage(usage: &Usage) -> Value {
    let mut value = super::stream_json::usage_json(usage);
    let written = usage.cache_creation_input_tokens;
    let (hour, five) = match crate::cost::hour_cache() {
        true => (written, 0),
        false => (0, written),
    };
    value["server_tool_use"] = json!({"web_search_requests": 0, "web_fetch_requests": 0});
    value["service_tier"] = json!("standard");
    value["cache_creation"] =
        json!({"ephemeral_1h_input_tokens": hour, "ephemeral_5m_input_tokens": five});
    value
}
