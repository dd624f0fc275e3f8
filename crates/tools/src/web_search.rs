//! The `web_search` tool (Claude Code's WebSearch) over a configured search endpoint:
//! `TROUPE_WEB_SEARCH_URL` (in the environment, or a settings file's `env`) names a JSON API.
//!
//! The request is `GET <url>?q=<query>` (plus `allowed_domains` and `blocked_domains`, comma
//! separated, when the call names them); the answer is
//! `{"results": [{"title": "…", "url": "…", "snippet": "…"}]}` (`snippet` optional). The domain
//! lists are applied to the results here too, so an endpoint that ignores them still obeys.

use crate::output::truncate_middle;
use crate::web_client::{client, host_of, host_within};
use crate::{parse_input, schema_of, Effect, Tool, ToolContext, ToolOutput, DEFAULT_OUTPUT_BUDGET};
use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use std::fmt::Write;

/// The variable naming the search endpoint.
pub const ENDPOINT_VAR: &str = "TROUPE_WEB_SEARCH_URL";

/// Input of the `web_search` tool (Claude Code's WebSearch input).
#[derive(Debug, Deserialize, JsonSchema)]
pub struct WebSearchInput {
    /// What to search for.
    pub query: String,
    /// Only results from these domains.
    pub allowed_domains: Option<Vec<String>>,
    /// No results from these domains.
    pub blocked_domains: Option<Vec<String>>,
}

/// One result as the endpoint gives it.
#[derive(Debug, Deserialize)]
struct Hit {
    title: String,
    url: String,
    #[serde(default)]
    snippet: Option<String>,
}

/// The endpoint's answer.
#[derive(Debug, Deserialize)]
struct Answer {
    results: Vec<Hit>,
}

/// Searches the web through the configured endpoint.
#[derive(Debug, Default, Clone)]
pub struct WebSearchTool {
    /// The endpoint, when given here rather than by [`ENDPOINT_VAR`].
    endpoint: Option<String>,
}

impl WebSearchTool {
    /// The tool asking `endpoint`, whatever the environment says.
    pub fn with_endpoint(endpoint: impl Into<String>) -> Self {
        WebSearchTool {
            endpoint: Some(endpoint.into()),
        }
    }
}

const DESCRIPTION: &str = "Searches the web and returns result titles, URLs and snippets. Use \
it for information newer than your training or not in the workspace; then read a result with \
web_fetch. allowed_domains keeps only results from those domains, blocked_domains drops them.";

#[async_trait]
impl Tool for WebSearchTool {
    fn name(&self) -> &str {
        "web_search"
    }

    fn description(&self) -> &str {
        DESCRIPTION
    }

    fn input_schema(&self) -> Value {
        schema_of::<WebSearchInput>()
    }

    fn built_schema(&self) -> Option<&'static str> {
        Some(crate::tool_schemas::WEB_SEARCH)
    }

    /// Network access: asked about in default mode unless a `WebSearch` rule allows it.
    fn effect(&self, _input: &Value) -> Effect {
        Effect::Execute
    }

    async fn call(&self, input: Value, _ctx: &ToolContext) -> ToolOutput {
        let input: WebSearchInput = match parse_input(self.name(), input) {
            Ok(input) => input,
            Err(output) => return output,
        };
        let endpoint = self
            .endpoint
            .clone()
            .or_else(|| crate::child_env::var(ENDPOINT_VAR));
        let Some(endpoint) = endpoint.filter(|v| !v.trim().is_empty()) else {
            return ToolOutput::error(format!(
                "web search is not configured: set {ENDPOINT_VAR} to a search endpoint (in the \
                 environment or a settings file's \"env\"); it is asked `GET <url>?q=<query>` and \
                 answers {{\"results\": [{{\"title\", \"url\", \"snippet\"}}]}}. Meanwhile, \
                 web_fetch reads a page whose URL you know."
            ));
        };
        match search(&endpoint, &input).await {
            Ok(text) => ToolOutput::ok(truncate_middle(&text, DEFAULT_OUTPUT_BUDGET)),
            Err(message) => ToolOutput::error(message),
        }
    }
}

async fn search(endpoint: &str, input: &WebSearchInput) -> Result<String, String> {
    let mut url = reqwest::Url::parse(endpoint.trim())
        .map_err(|e| format!("{ENDPOINT_VAR} `{endpoint}` is not a URL: {e}"))?;
    {
        let mut query = url.query_pairs_mut();
        query.append_pair("q", &input.query);
        if let Some(allowed) = input.allowed_domains.as_deref().filter(|d| !d.is_empty()) {
            query.append_pair("allowed_domains", &allowed.join(","));
        }
        if let Some(blocked) = input.blocked_domains.as_deref().filter(|d| !d.is_empty()) {
            query.append_pair("blocked_domains", &blocked.join(","));
        }
    }
    let response = client()?
        .get(url)
        .send()
        .await
        .map_err(|e| format!("the search endpoint could not be reached: {e}"))?;
    let status = response.status();
    if !status.is_success() {
        return Err(format!("the search endpoint answered HTTP {status}"));
    }
    let body = response
        .bytes()
        .await
        .map_err(|e| format!("reading the search endpoint's answer failed: {e}"))?;
    let answer: Answer = serde_json::from_slice(&body)
        .map_err(|e| format!("the search endpoint's answer is not the expected JSON: {e}"))?;
    let kept: Vec<&Hit> = answer
        .results
        .iter()
        .filter(|hit| wanted(hit, input))
        .collect();
    let mut text = format!("Web search results for query: \"{}\"\n", input.query);
    if kept.is_empty() {
        text.push_str("\nNo results.\n");
    }
    for (n, hit) in kept.iter().enumerate() {
        let _ = write!(text, "\n{}. [{}]({})", n + 1, hit.title, hit.url);
        if let Some(snippet) = hit.snippet.as_deref().filter(|s| !s.is_empty()) {
            let _ = write!(text, "\n   {snippet}");
        }
        text.push('\n');
    }
    Ok(text)
}

/// Whether the call's domain lists let `hit` through.
fn wanted(hit: &Hit, input: &WebSearchInput) -> bool {
    let Some(host) = host_of(&hit.url) else {
        return false;
    };
    let within = |domain: &String| {
        host_within(&host, domain)
            || host_within(&host, &format!("*.{}", domain.trim_start_matches("*.")))
    };
    let allowed = match input.allowed_domains.as_deref() {
        Some(domains) if !domains.is_empty() => domains.iter().any(within),
        _ => true,
    };
    let blocked = input
        .blocked_domains
        .as_deref()
        .is_some_and(|domains| domains.iter().any(within));
    allowed && !blocked
}
