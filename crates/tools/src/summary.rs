//! One-line summaries of tool calls, for progress lines and the roster's "doing" column.

use serde_json::Value;

/// Longest summary, in characters.
const MAX_CHARS: usize = 100;

/// A one-line summary of a call's input: the command, path or pattern when the tool has one.
pub fn summarize_input(tool: &str, input: &Value) -> String {
    let key = match tool {
        "bash" => "command",
        "read_file" | "write_file" | "edit_file" => "path",
        "glob" | "grep" => "pattern",
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
        assert_eq!(summarize_input("other", &json!({"x": 1})), "{\"x\":1}");
        let long = "x".repeat(300);
        assert_eq!(
            summarize_input("bash", &json!({ "command": long }))
                .chars()
                .count(),
            MAX_CHARS + 1
        );
    }
}
