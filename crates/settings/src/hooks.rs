//! Checks on the `hooks` key serde cannot make: a matcher must be a valid regular expression and
//! a timeout at least a second. Errors point at the line of the offending value.

use crate::{HookMatcher, SettingsError};
use std::collections::BTreeMap;

/// Refuses a matcher that is not a regular expression, or a zero timeout, naming the event, the
/// file and the line.
pub(crate) fn validate(
    hooks: &BTreeMap<String, Vec<HookMatcher>>,
    text: &str,
    origin: &str,
) -> Result<(), SettingsError> {
    for (event, matchers) in hooks {
        for (index, entry) in matchers.iter().enumerate() {
            let key = format!("hooks.{event}[{index}]");
            // `*` (everything) is Claude Code's word, not a regular expression.
            if let Some(pattern) = entry.matcher.as_deref().filter(|m| m.trim() != "*") {
                if let Err(err) = regex::Regex::new(pattern) {
                    let message = format!(
                        "`{key}.matcher` {pattern:?} is not a regular expression ({})",
                        last_line(&err.to_string())
                    );
                    return Err(located(text, origin, &key, pattern, message));
                }
            }
            for hook in &entry.hooks {
                if hook.timeout == Some(0) {
                    let message = format!(
                        "`{key}` hook {:?}: `timeout` is in seconds and must be at least 1",
                        hook.command
                    );
                    return Err(located(text, origin, &key, &hook.command, message));
                }
            }
        }
    }
    Ok(())
}

/// A parse error at the line where `value` first appears as a JSON string in `text`, or an
/// `Invalid` naming `key` when it cannot be found (escapes spelled differently).
fn located(text: &str, origin: &str, key: &str, value: &str, message: String) -> SettingsError {
    let quoted = serde_json::to_string(value).unwrap_or_default();
    match text.find(&quoted) {
        Some(offset) => {
            let before = &text[..offset];
            let line = before.matches('\n').count() + 1;
            let column = before.len() - before.rfind('\n').map_or(0, |n| n + 1) + 1;
            SettingsError::Parse {
                origin: origin.to_string(),
                line,
                column,
                message,
            }
        }
        None => SettingsError::Invalid {
            origin: origin.to_string(),
            key: key.to_string(),
            message,
        },
    }
}

/// The regex crate's errors are drawings over several lines; the last says what is wrong.
fn last_line(text: &str) -> &str {
    text.lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or(text)
        .trim()
}
