//! Running an `mcp_tool` hook: tool `tool` of MCP server `server` called with the event's JSON
//! as its arguments. Its text result is read as a command hook's stdout (exit 0); a call that
//! fails is a non-blocking error with the failure as stderr.

use crate::config::{HookCommand, McpTarget};
use crate::run::{Ending, HookRun};
use crate::services::HookTools;
use serde_json::Value;
use std::time::Instant;

/// Runs `hook` (whose target is `target`) on the event `input` through `tools`.
pub(crate) async fn run(
    hook: &HookCommand,
    target: &McpTarget,
    input: &[u8],
    tools: Option<&dyn HookTools>,
) -> HookRun {
    let started = Instant::now();
    let arguments: Value = serde_json::from_slice(input).unwrap_or(Value::Null);
    let (ending, stdout, stderr) = match tools {
        None => (
            Ending::NotStarted("no MCP servers are at hand for mcp_tool hooks here".into()),
            String::new(),
            String::new(),
        ),
        Some(tools) => {
            let called = tools.call(&target.server, &target.tool, arguments);
            match tokio::time::timeout(hook.timeout, called).await {
                Err(_) => (Ending::TimedOut(hook.timeout), String::new(), String::new()),
                Ok(Ok(text)) => (Ending::Exited(0), text, String::new()),
                Ok(Err(why)) => (Ending::Exited(1), String::new(), why),
            }
        }
    };
    HookRun {
        command: hook.command.clone(),
        ending,
        stdout,
        stderr,
        duration: started.elapsed(),
    }
}
