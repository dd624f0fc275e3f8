//! Running a `prompt` hook (and an `agent` hook, which troupe runs as one without tools): one
//! model call with the hook's `prompt`, `$ARGUMENTS` replaced by the event's JSON (appended when
//! the prompt does not name it). The model answers `{"ok": true}` or `{"ok": false, "reason":
//! "…"}`: `ok: false` blocks as a command's exit 2 does, with the reason as its stderr; an
//! answer that is not that JSON is a non-blocking error.

use crate::config::{HookCommand, PromptTarget};
use crate::run::{Ending, HookRun};
use crate::services::HookModel;
use serde_json::Value;
use std::time::Instant;

/// What the model is told it is doing.
const SYSTEM: &str = "You are a hook deciding about one event of a coding agent's session. \
The user message holds your instructions and the event as JSON. Answer with JSON only, no \
other text: {\"ok\": true} to let it proceed, or {\"ok\": false, \"reason\": \"why\"} to stop it.";

/// Runs `hook` (whose target is `target`) on the event `input` with `model`.
pub(crate) async fn run(
    hook: &HookCommand,
    target: &PromptTarget,
    input: &[u8],
    agent: &str,
    model: Option<&dyn HookModel>,
) -> HookRun {
    let started = Instant::now();
    let (ending, stderr) = match model {
        None => (
            Ending::NotStarted("no model is at hand for prompt hooks here".into()),
            String::new(),
        ),
        Some(model) => {
            let event = String::from_utf8_lossy(input);
            let prompt = match target.prompt.contains("$ARGUMENTS") {
                true => target.prompt.replace("$ARGUMENTS", &event),
                false => format!("{}\n\n{event}", target.prompt),
            };
            let asked = model.complete(agent, target.model.as_deref(), SYSTEM, &prompt);
            match tokio::time::timeout(hook.timeout, asked).await {
                Err(_) => (Ending::TimedOut(hook.timeout), String::new()),
                Ok(Err(why)) => (Ending::NotStarted(why), String::new()),
                Ok(Ok(reply)) => read(&reply),
            }
        }
    };
    HookRun {
        command: hook.command.clone(),
        ending,
        stdout: String::new(),
        stderr,
        duration: started.elapsed(),
    }
}

/// How the model's reply ends the run: exit 0 for `ok: true`, exit 2 with the reason for
/// `ok: false`, exit 1 saying why for anything else.
fn read(reply: &str) -> (Ending, String) {
    let json = match (reply.find('{'), reply.rfind('}')) {
        (Some(start), Some(end)) if start < end => &reply[start..=end],
        _ => "",
    };
    let answer: Option<Value> = serde_json::from_str(json).ok();
    match answer
        .as_ref()
        .and_then(|a| a.get("ok"))
        .and_then(Value::as_bool)
    {
        Some(true) => (Ending::Exited(0), String::new()),
        Some(false) => {
            let reason = answer
                .as_ref()
                .and_then(|a| a.get("reason"))
                .and_then(Value::as_str)
                .unwrap_or("the prompt hook said no without a reason");
            (Ending::Exited(2), reason.to_string())
        }
        None => (
            Ending::Exited(1),
            format!(
                "the model's answer is not {{\"ok\": …}} JSON: {}",
                reply.trim()
            ),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_models_answer_decides_as_an_exit_code() {
        assert_eq!(read(r#"{"ok": true}"#).0, Ending::Exited(0));
        assert_eq!(
            read("Here it is: {\"ok\": false, \"reason\": \"tests fail\"}"),
            (Ending::Exited(2), "tests fail".to_string())
        );
        let (ending, why) = read("sure, go ahead");
        assert_eq!(ending, Ending::Exited(1));
        assert!(why.contains("sure, go ahead"), "{why}");
    }
}
