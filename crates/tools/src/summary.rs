//! One-line summaries of tool calls, for progress lines and the roster's "doing" column.

use serde_json::Value;

/// Longest summary, in characters.
const MAX_CHARS: usize = 100;

/// A one-line summary of a call's input: the command, path or pattern when the tool has one.
pub fn summarize_input(tool: &str, input: &Value) -> String {
    if tool == "task" {
        return cut(&task_summary(input));
    }
    let key = match tool {
        "bash" => "command",
        "read_file" | "write_file" | "edit_file" | "notebook_edit" => "path",
        "glob" | "grep" => "pattern",
        "web_fetch" => "url",
        "web_search" => "query",
        "schedule_cron" => "schedule",
        "bash_output" | "kill_background" | "cancel_cron" => "id",
        "send_message" | "spawn_teammate" => {
            if input.get("to").is_some() {
                "to"
            } else {
                "name"
            }
        }
        _ => "",
    };
    let text = input
        .get(key)
        .and_then(Value::as_str)
        .map(str::to_string)
        .unwrap_or_else(|| input.to_string());
    cut(&text)
}

/// A subagent call as `reviewer: "check the diff"`: the agent type (`general-purpose` when
/// none is named) and the call's short description (its prompt when that is missing).
fn task_summary(input: &Value) -> String {
    let text = |key: &str| {
        input
            .get(key)
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|s| !s.is_empty())
    };
    let kind = text("subagent_type").unwrap_or("general-purpose");
    let what = text("description").or_else(|| text("prompt")).unwrap_or("");
    let what = what.lines().next().unwrap_or("");
    format!("{kind}: \"{what}\"")
}

/// The first line of `text`, cut to [`MAX_CHARS`].
fn cut(text: &str) -> String {
    let line = text.lines().next().unwrap_or("");
    if line.chars().count() > MAX_CHARS {
        format!("{}…", line.chars().take(MAX_CHARS).collect::<String>())
    } else {
        line.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn picks_the_telling_field_and_cuts_long_lines() {
        assert_eq!(
            summarize_input("bash", &json!({"command": "ls -la\necho hi"})),
            "ls -la"
        );
        assert_eq!(
            summarize_input("read_file", &json!({"path": "src/a.rs"})),
            "src/a.rs"
        );
        assert_eq!(
            summarize_input(
                "web_fetch",
                &json!({"url": "https://docs.rs/htmd", "prompt": "what?"})
            ),
            "https://docs.rs/htmd"
        );
        assert_eq!(summarize_input("other", &json!({"x": 1})), "{\"x\":1}");
        assert_eq!(
            summarize_input(
                "task",
                &json!({"description": "check the diff", "prompt": "…", "subagent_type": "reviewer"})
            ),
            "reviewer: \"check the diff\""
        );
        assert_eq!(
            summarize_input(
                "task",
                &json!({"description": "", "prompt": "find the bug\nin x"})
            ),
            "general-purpose: \"find the bug\""
        );
        let long = "x".repeat(300);
        assert_eq!(
            summarize_input("bash", &json!({ "command": long }))
                .chars()
                .count(),
            MAX_CHARS + 1
        );
    }
}
