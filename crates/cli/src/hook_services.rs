//! What `prompt` and `mcp_tool` hooks call, over the run's model client and MCP servers: the
//! hooks crate's [`HookModel`] and [`HookTools`]; the same small, fast model answers web_fetch's
//! prompts (the tools crate's [`Summarizer`]).

use async_trait::async_trait;
use serde_json::Value;
use std::path::PathBuf;
use std::sync::Arc;
use troupe_hooks::{HookModel, HookTools};
use troupe_mcp::McpManager;
use troupe_model::ModelConfig;
use troupe_model::{Model, ModelRequest, Provider};
use troupe_protocol::{ChatMessage, Role};
use troupe_tools::Summarizer;

/// The most a prompt hook's answer may be.
const ANSWER_TOKENS: u32 = 1024;

/// The model client of the run, for `prompt` hooks.
pub struct ModelForHooks {
    client: Arc<dyn Model>,
    /// The model asked when the hook names none.
    small_fast: String,
}

/// The run's MCP servers, for `mcp_tool` hooks.
pub struct ToolsForHooks {
    mcp: Arc<McpManager>,
    workspace: PathBuf,
}

/// Both, for a run on `model` through `client`, with `mcp`'s servers in `workspace`.
pub fn of(
    model: &ModelConfig,
    client: &Arc<dyn troupe_model::Model>,
    mcp: &Arc<McpManager>,
    workspace: &std::path::Path,
) -> (Arc<dyn HookModel>, Arc<dyn HookTools>) {
    (
        Arc::new(small_fast(model, client)),
        Arc::new(ToolsForHooks {
            mcp: mcp.clone(),
            workspace: workspace.to_path_buf(),
        }),
    )
}

/// The run's small, fast model, answering web_fetch's prompts.
pub fn summarizer(
    model: &ModelConfig,
    client: &Arc<dyn troupe_model::Model>,
) -> Arc<dyn Summarizer> {
    Arc::new(small_fast(model, client))
}

/// The small, fast model: `ANTHROPIC_SMALL_FAST_MODEL`, else haiku from Anthropic; another
/// provider's server may know no haiku, so the session's model stands in.
fn small_fast(model: &ModelConfig, client: &Arc<dyn troupe_model::Model>) -> ModelForHooks {
    let env = |name: &str| std::env::var(name).ok();
    let small_fast =
        env(troupe_model::alias::SMALL_FAST_VAR).unwrap_or_else(|| match model.provider {
            Provider::Anthropic => troupe_model::alias::resolve("haiku", &env),
            Provider::OpenAi => model.model.clone(),
        });
    ModelForHooks {
        client: client.clone(),
        small_fast,
    }
}

/// What web_fetch's small model is told it does.
const SUMMARIZER_SYSTEM: &str = "You answer a question about one web page, whose content (as \
Markdown) you are given. Answer concisely from the content only; say so when the content does \
not answer it. Quote at most a few short passages verbatim.";

#[async_trait]
impl Summarizer for ModelForHooks {
    async fn answer(
        &self,
        agent: &str,
        url: &str,
        prompt: &str,
        content: &str,
    ) -> Result<String, String> {
        let question = format!("Web page content of {url}:\n---\n{content}\n---\n\n{prompt}");
        self.complete(agent, None, SUMMARIZER_SYSTEM, &question)
            .await
    }
}

#[async_trait]
impl HookModel for ModelForHooks {
    async fn complete(
        &self,
        agent: &str,
        model: Option<&str>,
        system: &str,
        prompt: &str,
    ) -> Result<String, String> {
        let env = |name: &str| std::env::var(name).ok();
        let model = match model {
            Some(named) => troupe_model::alias::resolve(named, &env),
            None => self.small_fast.clone(),
        };
        let request = ModelRequest {
            model,
            system: system.into(),
            messages: vec![ChatMessage::user_text(prompt)],
            tools: Vec::new().into(),
            max_tokens: ANSWER_TOKENS,
            agent: agent.to_string(),
            cache: None,
        };
        let reply = self
            .client
            .stream(&request, &mut |_| {})
            .await
            .map_err(|e| e.to_string())?;
        let message = ChatMessage {
            role: Role::Assistant,
            content: reply.content,
        };
        Ok(message.text())
    }
}

#[async_trait]
impl HookTools for ToolsForHooks {
    async fn call(&self, server: &str, tool: &str, input: Value) -> Result<String, String> {
        let name = troupe_mcp::names::tool_name(server, tool);
        let found = self
            .mcp
            .tools()
            .await
            .into_iter()
            .find(|t| t.name() == name)
            .ok_or_else(|| format!("MCP server `{server}` offers no tool `{tool}` (yet)"))?;
        let workspace = troupe_tools::Workspace::new(&self.workspace).map_err(|e| e.to_string())?;
        let ctx = troupe_tools::ToolContext::new(Arc::new(workspace), "hooks");
        let output = found.call(input, &ctx).await;
        match output.is_error {
            false => Ok(output.content),
            true => Err(output.content),
        }
    }
}
