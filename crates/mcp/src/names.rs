//! What troupe calls a server's tool: `mcp__<server>__<tool>`, in the characters and length every
//! provider accepts for a tool name.

/// The prefix of every MCP tool's name.
pub const PREFIX: &str = "mcp__";

/// Longest tool name OpenAI-compatible servers accept (Anthropic takes more).
pub const MAX_TOOL_NAME: usize = 64;

/// The troupe name of `tool` on `server`: characters providers refuse become `_`, and the name
/// is cut to [`MAX_TOOL_NAME`].
pub fn tool_name(server: &str, tool: &str) -> String {
    let mut name = format!("{PREFIX}{server}__");
    name.extend(tool.chars().map(|c| match c {
        'a'..='z' | 'A'..='Z' | '0'..='9' | '_' | '-' => c,
        _ => '_',
    }));
    // Only ASCII is left, so any byte index is a character boundary.
    name.truncate(MAX_TOOL_NAME);
    name
}

/// The server a troupe tool name belongs to (`mcp__time__now` → `time`).
pub fn server_of(tool: &str) -> Option<&str> {
    let rest = tool.strip_prefix(PREFIX)?;
    Some(rest.split_once("__").map_or(rest, |(server, _)| server))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_prefixed_sanitised_and_bounded() {
        assert_eq!(
            tool_name("time", "get_current_time"),
            "mcp__time__get_current_time"
        );
        assert_eq!(tool_name("fs", "read.file v2"), "mcp__fs__read_file_v2");
        assert_eq!(tool_name("e", "get-sum"), "mcp__e__get-sum");
        let long = tool_name("server", &"x".repeat(100));
        assert_eq!(long.len(), MAX_TOOL_NAME);
        assert_eq!(server_of("mcp__time__now"), Some("time"));
        assert_eq!(server_of("mcp__time"), Some("time"));
        assert_eq!(server_of("bash"), None);
    }
}
