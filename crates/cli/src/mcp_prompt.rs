//! `/mcp__<server>__<prompt> [args]`: an MCP server's prompt run as a slash command, as Claude
//! Code runs it — the words after the name fill the prompt's declared arguments in order, and
//! the text of the messages the server returns is the prompt the model is sent.

use std::time::Duration;
use troupe_mcp::names::{server_of, PREFIX};
use troupe_mcp::McpManager;

/// The longest a prompt command waits for its server to finish starting (the REPL does not
/// wait for the servers before its first prompt).
const START_WAIT: Duration = Duration::from_secs(30);

/// The prompt `typed` (`/mcp__…` and its words) runs: `None` when it is not an MCP prompt
/// command or names no configured server (then it is what it is: another command or a plain
/// prompt); an error when the server is configured but has no such prompt or the server
/// refuses it.
pub async fn run(mcp: &McpManager, typed: &str) -> Option<Result<String, String>> {
    let (name, words, server) = parse(mcp, typed)?;
    if let Some(ran) = mcp.run_prompt(name, words).await {
        return Some(ran);
    }
    // Its server may still be starting.
    mcp.settle(START_WAIT).await;
    if let Some(ran) = mcp.run_prompt(name, words).await {
        return Some(ran);
    }
    let offered: Vec<String> = mcp
        .prompts()
        .into_iter()
        .filter(|p| p.server == server)
        .map(|p| format!("/{}", p.name))
        .collect();
    Some(Err(match offered.is_empty() {
        true => format!(
            "/{name}: MCP server `{server}` offers no prompts (it is not connected, or declares none; /mcp shows its status)"
        ),
        false => format!(
            "/{name}: MCP server `{server}` has no such prompt; its prompts: {}",
            offered.join(", ")
        ),
    }))
}

/// Whether `typed` names a prompt command of a configured server (connected or not).
pub fn is_one(mcp: &McpManager, typed: &str) -> bool {
    parse(mcp, typed).is_some()
}

/// The command's name, the words after it, and its server, when that server is configured.
fn parse<'a>(mcp: &McpManager, typed: &'a str) -> Option<(&'a str, &'a str, &'a str)> {
    let rest = typed.trim_start().strip_prefix('/')?;
    let (name, words) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
    if !name.starts_with(PREFIX) {
        return None;
    }
    let server = server_of(name)?;
    mcp.contains(server).then_some((name, words, server))
}

/// The connected servers' prompts for `/help`, one a line, or nothing.
pub fn help(mcp: &McpManager) -> String {
    let prompts = mcp.prompts();
    if prompts.is_empty() {
        return String::new();
    }
    let lines: Vec<String> = prompts
        .iter()
        .map(|p| {
            let call = format!("/{} {}", p.name, p.argument_hint());
            format!("  {:<40} {}", call.trim_end(), p.description)
        })
        .collect();
    format!("\nMCP prompts:\n{}", lines.join("\n"))
}
