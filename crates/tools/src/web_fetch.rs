//! The `web_fetch` tool (Claude Code's WebFetch): fetches one http(s) URL, turns HTML into
//! Markdown and answers the call's prompt over it with the run's small, fast model (a
//! [`Summarizer`]); without one, the Markdown itself comes back.

use crate::output::truncate_middle;
use crate::web_client::{client, is_local};
use crate::{parse_input, schema_of, Effect, Tool, ToolContext, ToolOutput, DEFAULT_OUTPUT_BUDGET};
use async_trait::async_trait;
use futures_util::StreamExt;
use reqwest::Url;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use std::sync::OnceLock;
use std::time::Duration;

/// The most bytes of a response body read; the rest is cut.
pub const MAX_BYTES: usize = 10 * 1024 * 1024;

/// The most Markdown the summarizer is given.
pub const SUMMARY_INPUT_BUDGET: usize = 100_000;

/// Same-host redirects followed at most.
const MAX_REDIRECTS: usize = 10;

/// Answers a prompt over fetched content: the run's small, fast model, provided by whoever
/// composes the run (this crate knows no model).
#[async_trait]
pub trait Summarizer: Send + Sync {
    /// The answer to `prompt` about `content` (Markdown from `url`), for agent `agent`.
    async fn answer(
        &self,
        agent: &str,
        url: &str,
        prompt: &str,
        content: &str,
    ) -> Result<String, String>;
}

/// Input of the `web_fetch` tool (Claude Code's WebFetch input).
#[derive(Debug, Deserialize, JsonSchema)]
pub struct WebFetchInput {
    /// The URL to fetch (http or https).
    pub url: String,
    /// What to find out from the page.
    pub prompt: String,
}

/// Fetches a URL and answers a prompt over its content.
#[derive(Debug, Clone, Copy)]
pub struct WebFetchTool {
    max_bytes: usize,
    timeout: Duration,
}

impl Default for WebFetchTool {
    fn default() -> Self {
        WebFetchTool {
            max_bytes: MAX_BYTES,
            timeout: crate::web_client::TIMEOUT,
        }
    }
}

impl WebFetchTool {
    /// The same tool reading at most `max_bytes` of a body.
    pub fn with_max_bytes(self, max_bytes: usize) -> Self {
        WebFetchTool { max_bytes, ..self }
    }

    /// The same tool giving up on a request (body included) after `timeout`.
    pub fn with_timeout(self, timeout: Duration) -> Self {
        WebFetchTool { timeout, ..self }
    }
}

const DESCRIPTION: &str = "Fetches a URL (http or https; http is upgraded to https except for \
localhost), converts HTML to Markdown, and answers the prompt about the page's content with a \
small, fast model. A redirect to another host is not followed: the result names the new URL, \
fetch it with another call. Bodies over 10 MB are cut; a fetch takes at most 30 seconds. Use it \
to read documentation or pages the user names; it cannot reach pages that need a login.";

#[async_trait]
impl Tool for WebFetchTool {
    fn name(&self) -> &str {
        "web_fetch"
    }

    fn description(&self) -> &str {
        DESCRIPTION
    }

    fn input_schema(&self) -> Value {
        schema_of::<WebFetchInput>()
    }

    fn built_schema(&self) -> Option<&'static str> {
        Some(crate::tool_schemas::WEB_FETCH)
    }

    /// Network access: asked about in default mode unless a `WebFetch` rule allows it.
    fn effect(&self, _input: &Value) -> Effect {
        Effect::Execute
    }

    async fn call(&self, input: Value, ctx: &ToolContext) -> ToolOutput {
        let input: WebFetchInput = match parse_input(self.name(), input) {
            Ok(input) => input,
            Err(output) => return output,
        };
        let url = match target(&input.url) {
            Ok(url) => url,
            Err(message) => return ToolOutput::error(message),
        };
        let asked = url.to_string();
        let fetched = match cache().get(&asked) {
            Some(page) => Ok(Fetched::Page(page)),
            None => fetch(url, self.max_bytes, self.timeout)
                .await
                .inspect(|fetched| {
                    if let Fetched::Page(page) = fetched {
                        cache().put(&asked, page.body.len(), page.clone());
                    }
                }),
        };
        let page = match fetched {
            Ok(Fetched::Page(page)) => page,
            Ok(Fetched::Elsewhere(message)) => return ToolOutput::ok(message),
            Err(message) => return ToolOutput::error(message),
        };
        // Converting a large page is seconds of CPU: off the async workers.
        let (page, markdown) = match tokio::task::spawn_blocking(move || {
            let markdown = page.markdown();
            (page, markdown)
        })
        .await
        {
            Ok(done) => done,
            Err(err) => return ToolOutput::error(format!("converting the page failed: {err}")),
        };
        let Some(summarizer) = &ctx.summarizer else {
            return ToolOutput::ok(format!(
                "{}\n\n{}",
                page.header(),
                truncate_middle(&markdown, DEFAULT_OUTPUT_BUDGET)
            ));
        };
        let content = truncate_middle(&markdown, SUMMARY_INPUT_BUDGET);
        match summarizer
            .answer(&ctx.agent, page.url.as_str(), &input.prompt, &content)
            .await
        {
            Ok(answer) => ToolOutput::ok(answer),
            Err(err) => ToolOutput::ok(format!(
                "{} (the prompt could not be answered: {err}; the content follows)\n\n{}",
                page.header(),
                truncate_middle(&markdown, DEFAULT_OUTPUT_BUDGET)
            )),
        }
    }
}

/// The URL to fetch: http or https only, http upgraded to https unless it names this machine.
fn target(text: &str) -> Result<Url, String> {
    let mut url = Url::parse(text.trim()).map_err(|e| format!("`{text}` is not a URL: {e}"))?;
    match url.scheme() {
        "https" => {}
        "http" if is_local(&url) => {}
        "http" => {
            // Only the scheme changes; `set_scheme` refuses nothing between http and https.
            let _ = url.set_scheme("https");
        }
        other => {
            return Err(format!(
                "web_fetch fetches http and https URLs only, not `{other}:`"
            ))
        }
    }
    if url.host_str().is_none() {
        return Err(format!("`{text}` names no host"));
    }
    Ok(url)
}

/// What a fetch came to.
enum Fetched {
    /// The page, read.
    Page(Page),
    /// A redirect to another host, not followed: the message saying where.
    Elsewhere(String),
}

/// Pages fetched in the last 15 minutes, by the URL asked for.
fn cache() -> &'static crate::web_cache::Cache<Page> {
    static CACHE: OnceLock<crate::web_cache::Cache<Page>> = OnceLock::new();
    CACHE.get_or_init(Default::default)
}

/// A fetched body.
#[derive(Clone)]
struct Page {
    /// Where it was read from, after same-host redirects.
    url: Url,
    content_type: String,
    body: Vec<u8>,
    /// The body was longer than the limit and is cut.
    cut: Option<usize>,
}

impl Page {
    /// The body as Markdown: HTML converted, other text as it is.
    fn markdown(&self) -> String {
        let text = String::from_utf8_lossy(&self.body);
        let html = self.content_type.contains("html")
            || (self.content_type.is_empty() && text.trim_start().starts_with('<'));
        if !html {
            return text.into_owned();
        }
        // What a reader never sees (scripts, styles) is left out rather than printed as text.
        htmd::HtmlToMarkdown::builder()
            .skip_tags(vec!["script", "style", "noscript", "template", "svg"])
            .build()
            .convert(&text)
            .unwrap_or_else(|_| text.into_owned())
    }

    /// One line naming what was fetched.
    fn header(&self) -> String {
        let cut = match self.cut {
            Some(limit) => format!("; cut at {limit} bytes"),
            None => String::new(),
        };
        format!(
            "Content of {} ({}, {} bytes{cut}):",
            self.url,
            match self.content_type.as_str() {
                "" => "no content type",
                known => known,
            },
            self.body.len()
        )
    }
}

/// GETs `url`, following redirects on the same host only.
async fn fetch(mut url: Url, max_bytes: usize, timeout: Duration) -> Result<Fetched, String> {
    let http = client()?;
    for _ in 0..=MAX_REDIRECTS {
        let response = http
            .get(url.clone())
            .timeout(timeout)
            .send()
            .await
            .map_err(|e| {
                format!(
                    "fetching {url} failed: {}",
                    troupe_protocol::error_chain(&e)
                )
            })?;
        let status = response.status();
        if status.is_redirection() {
            let location = response
                .headers()
                .get(reqwest::header::LOCATION)
                .and_then(|value| value.to_str().ok())
                .ok_or_else(|| format!("{url} answered {status} without a Location"))?;
            let next = url
                .join(location)
                .map_err(|e| format!("{url} redirects to `{location}`, which is no URL: {e}"))?;
            if next.host_str() != url.host_str() {
                return Ok(Fetched::Elsewhere(format!(
                    "{url} redirected to {next} ({status}), a different host; it was not \
                     followed. To read it, fetch that URL with web_fetch."
                )));
            }
            url = next;
            continue;
        }
        if !status.is_success() {
            return Err(format!("fetching {url} failed: HTTP {status}"));
        }
        let content_type = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|value| value.to_str().ok())
            .unwrap_or("")
            .to_ascii_lowercase();
        if is_binary(&content_type) {
            return Err(format!(
                "{url} is `{content_type}`, not text; web_fetch reads text and HTML only"
            ));
        }
        let (body, cut) = read_body(response, max_bytes)
            .await
            .map_err(|e| format!("reading {url} failed: {e}"))?;
        return Ok(Fetched::Page(Page {
            url,
            content_type,
            body,
            cut,
        }));
    }
    Err(format!(
        "{url}: more than {MAX_REDIRECTS} redirects; stopped"
    ))
}

/// Reads at most `max_bytes` of the body; the limit comes back when the body was longer.
async fn read_body(
    response: reqwest::Response,
    max_bytes: usize,
) -> Result<(Vec<u8>, Option<usize>), String> {
    let mut body = Vec::new();
    let mut stream = response.bytes_stream();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|e| troupe_protocol::error_chain(&e))?;
        let room = max_bytes - body.len();
        if chunk.len() > room {
            body.extend_from_slice(&chunk[..room]);
            return Ok((body, Some(max_bytes)));
        }
        body.extend_from_slice(&chunk);
    }
    Ok((body, None))
}

/// Content types that are not text (images, archives, PDFs).
fn is_binary(content_type: &str) -> bool {
    let essence = content_type.split(';').next().unwrap_or("").trim();
    let textual = essence.is_empty()
        || essence.starts_with("text/")
        || essence.contains("json")
        || essence.contains("xml")
        || essence.contains("javascript")
        || essence.contains("markdown");
    !textual
}

#[cfg(test)]
mod tests {
    use super::target;

    #[test]
    fn http_is_upgraded_to_https_except_on_this_machine() {
        let url = |text: &str| target(text).map(|url| url.to_string());
        assert_eq!(
            url("http://example.com/a?b=1"),
            Ok("https://example.com/a?b=1".into())
        );
        assert_eq!(
            url("https://example.com/"),
            Ok("https://example.com/".into())
        );
        assert_eq!(
            url("http://localhost:8080/x"),
            Ok("http://localhost:8080/x".into())
        );
        assert_eq!(url("http://127.0.0.1:9/"), Ok("http://127.0.0.1:9/".into()));
        assert_eq!(url("http://[::1]:9/"), Ok("http://[::1]:9/".into()));
        assert!(url("javascript:alert(1)").is_err());
        assert!(url("example.com").is_err());
    }
}
