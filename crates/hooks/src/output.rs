//! What a hook that exited 0 may print on stdout: Claude Code's JSON answer, or plain text.

use serde::Deserialize;
use serde_json::Value;

/// A hook's JSON answer (every field optional).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HookOutput {
    /// `false` ends the agent's turn.
    #[serde(rename = "continue")]
    pub keep_on: Option<bool>,
    /// Why the turn ended (with `continue: false`), for the user.
    pub stop_reason: Option<String>,
    /// A warning for the user.
    pub system_message: Option<String>,
    /// `block` (or, before `permissionDecision`, `approve` for PreToolUse).
    pub decision: Option<String>,
    /// Why, with `decision`.
    pub reason: Option<String>,
    /// The event's own fields.
    pub hook_specific_output: Option<Specific>,
}

/// `hookSpecificOutput`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Specific {
    /// PreToolUse: `allow`, `deny` or `ask`.
    pub permission_decision: Option<String>,
    /// PreToolUse: why.
    pub permission_decision_reason: Option<String>,
    /// PreToolUse: the input to run the call with instead.
    pub updated_input: Option<Value>,
    /// Text for the model.
    pub additional_context: Option<String>,
    /// PermissionRequest: the answer (`behavior` `allow` or `deny`, `message`,
    /// `updatedInput`), read by the event.
    pub decision: Option<Value>,
}

/// The `decision` values troupe knows (`approve` is PreToolUse's older `allow`).
pub const DECISIONS: [&str; 2] = ["approve", "block"];

/// The `permissionDecision` values troupe knows.
pub const PERMISSION_DECISIONS: [&str; 3] = ["allow", "deny", "ask"];

impl HookOutput {
    /// What in a well-formed answer troupe does not understand: a `decision` or
    /// `permissionDecision` it does not know, an `updatedInput` that is not an object. Such an
    /// answer never means "allowed".
    pub fn not_understood(&self) -> Option<String> {
        if let Some(decision) = self.decision.as_deref() {
            if !DECISIONS.contains(&decision) {
                return Some(format!(
                    "`decision` is {decision:?}, not one of {}",
                    DECISIONS.join(", ")
                ));
            }
        }
        let specific = self.hook_specific_output.as_ref()?;
        if let Some(decision) = specific.permission_decision.as_deref() {
            if !PERMISSION_DECISIONS.contains(&decision) {
                return Some(format!(
                    "`hookSpecificOutput.permissionDecision` is {decision:?}, not one of {}",
                    PERMISSION_DECISIONS.join(", ")
                ));
            }
        }
        match &specific.updated_input {
            Some(input) if !input.is_object() => {
                Some("`hookSpecificOutput.updatedInput` is not an object".to_string())
            }
            _ => None,
        }
    }
}

/// Reads a hook callback's answer (a JSON value, not text): `null` or an object troupe
/// understands; anything else is why not.
pub fn understand(answer: &Value) -> Result<Option<HookOutput>, String> {
    match answer {
        Value::Null => Ok(None),
        Value::Object(_) => {
            let output = HookOutput::deserialize(answer).map_err(|e| e.to_string())?;
            match output.not_understood() {
                Some(why) => Err(why),
                None => Ok(Some(output)),
            }
        }
        other => Err(format!("it is {}, not an object", kind(other))),
    }
}

/// A JSON value's type, for a message.
fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// How a hook's stdout reads.
#[derive(Debug, Clone, PartialEq)]
pub enum Stdout {
    /// Nothing printed.
    Empty,
    /// A JSON answer.
    Json(Box<HookOutput>),
    /// Text that is not JSON (context for the prompt and session-start events).
    Text(String),
    /// It starts like JSON but is not a valid answer; reported, otherwise ignored.
    Malformed(String),
}

/// Reads stdout as Claude Code does: JSON when it starts with `{`, else text.
pub fn parse(stdout: &str) -> Stdout {
    let trimmed = stdout.trim();
    if trimmed.is_empty() {
        return Stdout::Empty;
    }
    if !trimmed.starts_with('{') {
        return Stdout::Text(trimmed.to_string());
    }
    match serde_json::from_str::<HookOutput>(trimmed) {
        Ok(output) => Stdout::Json(Box::new(output)),
        Err(err) => Stdout::Malformed(err.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_claude_code_fields() {
        let Stdout::Json(out) = parse(
            r#"{"continue": false, "stopReason": "enough", "systemMessage": "w",
                "decision": "block", "reason": "r",
                "hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny",
                  "permissionDecisionReason": "no", "updatedInput": {"command": "ls"},
                  "additionalContext": "ctx"}}"#,
        ) else {
            panic!("not read as JSON");
        };
        assert_eq!(out.keep_on, Some(false));
        assert_eq!(out.stop_reason.as_deref(), Some("enough"));
        assert_eq!(out.system_message.as_deref(), Some("w"));
        assert_eq!(out.decision.as_deref(), Some("block"));
        let specific = out.hook_specific_output.unwrap_or_default();
        assert_eq!(specific.permission_decision.as_deref(), Some("deny"));
        assert_eq!(
            specific.updated_input,
            Some(serde_json::json!({"command": "ls"}))
        );
        assert_eq!(specific.additional_context.as_deref(), Some("ctx"));
    }

    #[test]
    fn unknown_decisions_and_wrong_types_are_not_understood() {
        use serde_json::json;
        assert_eq!(understand(&Value::Null), Ok(None));
        assert!(understand(&json!({"decision": "block"})).is_ok());
        assert!(understand(&json!({"decision": "approve"})).is_ok());
        assert!(understand(&json!({})).is_ok());
        let ask = json!({"hookSpecificOutput": {"permissionDecision": "ask"}});
        assert!(understand(&ask).is_ok());
        for (answer, says) in [
            (json!({"decision": "maybe"}), "\"maybe\""),
            (
                json!({"hookSpecificOutput": {"permissionDecision": "perhaps"}}),
                "\"perhaps\"",
            ),
            (json!({"decision": 5}), "invalid type"),
            (json!({"hookSpecificOutput": "allow"}), "invalid type"),
            (
                json!({"hookSpecificOutput": {"updatedInput": "ls"}}),
                "updatedInput",
            ),
            (json!("allow"), "a string, not an object"),
            (json!([]), "an array"),
            (json!(true), "a boolean"),
        ] {
            let why = understand(&answer).expect_err(&answer.to_string());
            assert!(why.contains(says), "{answer}: {why}");
        }
    }

    #[test]
    fn text_empty_and_broken_json() {
        assert_eq!(parse("  \n"), Stdout::Empty);
        assert_eq!(parse("remember X\n"), Stdout::Text("remember X".into()));
        assert!(matches!(parse("{not json"), Stdout::Malformed(_)));
        assert!(matches!(
            parse(r#"{"continue": "yes"}"#),
            Stdout::Malformed(_)
        ));
    }
}
