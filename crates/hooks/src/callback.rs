//! Hook callbacks: hooks that are not commands but functions of the process driving troupe (the
//! Agent SDK's `hooks` option, registered in its `initialize` request and called through
//! `hook_callback` control requests). They match and decide exactly as command hooks do — the
//! callback's answer is the JSON a command hook would print — and run beside them.
//!
//! A callback that cannot answer (an error, its timeout, the controlling process gone), or whose
//! answer troupe does not understand (not an object, a field of the wrong type, an unknown
//! `decision` or `permissionDecision`), never means "allowed": for PreToolUse it refuses the call, always; for the other events it blocks
//! when its matcher asked for that (`onFailure: "block"`), else it decides nothing, as in
//! Claude Code.

use crate::event::HookEvent;
use crate::matcher::Matcher;
use crate::run::{Ending, HookRun};
use async_trait::async_trait;
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::{Arc, PoisonError, RwLock};
use std::time::{Duration, Instant};

/// How long a callback may take when its matcher gives no `timeout` (Claude Code's default).
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// Carries one callback's input to the controlling process and brings back its answer.
#[async_trait]
pub trait CallbackTransport: Send + Sync {
    /// Calls callback `id` with the event's `input` (and the tool call's id, for tool events);
    /// the answer is the callback's JSON output, or why there is none.
    async fn call(
        &self,
        id: &str,
        input: &Value,
        tool_use_id: Option<&str>,
    ) -> Result<Value, String>;
}

/// One registered callback.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Callback {
    /// The id the controlling process gave it (`hook_0`).
    pub id: String,
    /// How long it may take.
    pub timeout: Duration,
    /// Whether a failure blocks (events other than PreToolUse; PreToolUse always blocks).
    pub block_on_failure: bool,
}

#[derive(Debug, Clone)]
struct Entry {
    matcher: Matcher,
    callbacks: Vec<Callback>,
}

/// The callbacks a controlling process registered, and the way to call them.
pub struct Callbacks {
    events: RwLock<BTreeMap<HookEvent, Vec<Entry>>>,
    transport: Arc<dyn CallbackTransport>,
}

impl Callbacks {
    /// No callbacks yet; [`register`](Callbacks::register) adds them.
    pub fn new(transport: Arc<dyn CallbackTransport>) -> Callbacks {
        Callbacks {
            events: RwLock::new(BTreeMap::new()),
            transport,
        }
    }

    /// Registers the SDK's hooks configuration:
    /// `{"PreToolUse": [{"matcher": "Bash", "hookCallbackIds": ["hook_0"], "timeout": 5,
    /// "onFailure": "block"}]}`. Returns how many callbacks it registered; an entry that cannot
    /// be used is an error naming it, and nothing is registered then.
    pub fn register(&self, config: &Value) -> Result<usize, String> {
        let Some(events) = config.as_object() else {
            return match config.is_null() {
                true => Ok(0),
                false => Err("hooks must be an object of events".to_string()),
            };
        };
        let mut parsed: BTreeMap<HookEvent, Vec<Entry>> = BTreeMap::new();
        let mut count = 0;
        for (name, entries) in events {
            let Some(event) = HookEvent::parse(name) else {
                tracing::warn!(event = %name, "troupe does not fire this hook event; its SDK callbacks never run");
                continue;
            };
            let entries = entries
                .as_array()
                .ok_or_else(|| format!("hooks.{name} must be a list of matchers"))?;
            for (index, entry) in entries.iter().enumerate() {
                let at = || format!("hooks.{name}[{index}]");
                let matcher = Matcher::new(entry.get("matcher").and_then(Value::as_str))
                    .map_err(|e| format!("{}.matcher is not a regular expression: {e}", at()))?;
                let timeout = match entry.get("timeout") {
                    None | Some(Value::Null) => DEFAULT_TIMEOUT,
                    Some(v) => v
                        .as_f64()
                        .filter(|s| s.is_finite() && *s > 0.0)
                        .map(Duration::from_secs_f64)
                        .ok_or_else(|| format!("{}.timeout must be a positive number", at()))?,
                };
                let block_on_failure = match entry.get("onFailure").and_then(Value::as_str) {
                    None | Some("continue") => false,
                    // Claude Code reads an unknown value as "block".
                    Some(_) => true,
                };
                let ids = entry
                    .get("hookCallbackIds")
                    .and_then(Value::as_array)
                    .ok_or_else(|| format!("{} has no hookCallbackIds list", at()))?;
                let mut callbacks = Vec::new();
                for id in ids {
                    let id = id
                        .as_str()
                        .ok_or_else(|| format!("{}.hookCallbackIds holds a non-string", at()))?;
                    callbacks.push(Callback {
                        id: id.to_string(),
                        timeout,
                        block_on_failure,
                    });
                }
                count += callbacks.len();
                parsed
                    .entry(event)
                    .or_default()
                    .push(Entry { matcher, callbacks });
            }
        }
        let mut events = self.events.write().unwrap_or_else(PoisonError::into_inner);
        for (event, entries) in parsed {
            events.entry(event).or_default().extend(entries);
        }
        Ok(count)
    }

    /// Whether `event` has any callback.
    pub fn has(&self, event: HookEvent) -> bool {
        self.events
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .contains_key(&event)
    }

    /// The callbacks `event` calls for `subject`, each once.
    pub fn select(&self, event: HookEvent, subject: &str) -> Vec<Callback> {
        let events = self.events.read().unwrap_or_else(PoisonError::into_inner);
        let Some(entries) = events.get(&event) else {
            return Vec::new();
        };
        let mut chosen: Vec<Callback> = Vec::new();
        for entry in entries {
            if !crate::config::applies(event, &entry.matcher, subject) {
                continue;
            }
            for callback in &entry.callbacks {
                if !chosen.iter().any(|c| c.id == callback.id) {
                    chosen.push(callback.clone());
                }
            }
        }
        chosen
    }

    /// Calls `callback` for `event` with `input`, as a hook run: its answer is the run's
    /// output; a failure is a blocking run where it must block (see the module's rule), else
    /// a run that decides nothing.
    pub async fn run(&self, event: HookEvent, callback: &Callback, input: &Value) -> HookRun {
        let started = Instant::now();
        let tool_use_id = input.get("tool_use_id").and_then(Value::as_str);
        let call = self.transport.call(&callback.id, input, tool_use_id);
        let failure = match tokio::time::timeout(callback.timeout, call).await {
            Ok(Ok(answer)) => match crate::output::understand(&answer) {
                Ok(_) => {
                    return HookRun {
                        command: label(callback),
                        ending: Ending::Exited(0),
                        stdout: answer_text(&answer),
                        stderr: String::new(),
                        duration: started.elapsed(),
                    }
                }
                Err(why) => format!(
                    "the hook callback's answer {} is not one troupe understands: {why}",
                    shortened(&answer)
                ),
            },
            Ok(Err(why)) => format!("{} failed: {why}", label(callback)),
            Err(_) => format!(
                "{} did not answer within {}s",
                label(callback),
                callback.timeout.as_secs_f64()
            ),
        };
        let blocks = match event {
            HookEvent::PreToolUse => true,
            // Claude Code: these ignore onFailure.
            HookEvent::Stop
            | HookEvent::SubagentStop
            | HookEvent::TaskCompleted
            | HookEvent::TeammateIdle => false,
            _ => callback.block_on_failure,
        };
        HookRun {
            command: label(callback),
            ending: match blocks {
                true => Ending::Exited(2),
                false => Ending::NotStarted(failure.clone()),
            },
            stdout: String::new(),
            stderr: failure,
            duration: started.elapsed(),
        }
    }
}

/// How a callback is named in reports and refusals.
fn label(callback: &Callback) -> String {
    format!("SDK hook callback {}", callback.id)
}

/// An answer as quoted in a refusal: its JSON, cut after 200 characters.
fn shortened(answer: &Value) -> String {
    let text = answer.to_string();
    match text.char_indices().nth(200) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text,
    }
}

/// The callback's answer as the stdout of a command hook: JSON objects as they are; `null` (a
/// callback with nothing to say) as no output.
fn answer_text(answer: &Value) -> String {
    match answer {
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::path::Path;
    use std::sync::Mutex;
    use troupe_agent::CallDecision;

    /// Answers from a table; records what it was asked.
    struct Table {
        answers: BTreeMap<String, Result<Value, String>>,
        asked: Mutex<Vec<(String, Value)>>,
    }

    #[async_trait]
    impl CallbackTransport for Table {
        async fn call(
            &self,
            id: &str,
            input: &Value,
            _tool_use_id: Option<&str>,
        ) -> Result<Value, String> {
            self.asked
                .lock()
                .unwrap()
                .push((id.to_string(), input.clone()));
            match self.answers.get(id) {
                Some(answer) => answer.clone(),
                None => std::future::pending().await,
            }
        }
    }

    fn callbacks(answers: &[(&str, Result<Value, String>)]) -> (Callbacks, Arc<Table>) {
        let table = Arc::new(Table {
            answers: answers
                .iter()
                .map(|(id, a)| (id.to_string(), a.clone()))
                .collect(),
            asked: Mutex::new(Vec::new()),
        });
        (Callbacks::new(table.clone()), table)
    }

    #[test]
    fn the_sdk_configuration_registers_by_event_and_matcher() {
        let (cbs, _) = callbacks(&[]);
        let n = cbs
            .register(&json!({
                "PreToolUse": [
                    {"matcher": "Bash", "hookCallbackIds": ["hook_0", "hook_1"], "timeout": 2.5},
                    {"matcher": null, "hookCallbackIds": ["hook_2"], "onFailure": "block"}
                ],
                "UserPromptSubmit": [{"hookCallbackIds": ["hook_3"]}],
                "SomeFutureEvent": [{"hookCallbackIds": ["hook_4"]}]
            }))
            .unwrap();
        assert_eq!(n, 4);
        let ids = |event, subject| -> Vec<String> {
            cbs.select(event, subject)
                .into_iter()
                .map(|c| c.id)
                .collect()
        };
        assert_eq!(
            ids(HookEvent::PreToolUse, "bash"),
            ["hook_0", "hook_1", "hook_2"]
        );
        assert_eq!(ids(HookEvent::PreToolUse, "read_file"), ["hook_2"]);
        assert_eq!(ids(HookEvent::UserPromptSubmit, ""), ["hook_3"]);
        assert!(!cbs.has(HookEvent::Stop));
        let first = &cbs.select(HookEvent::PreToolUse, "bash")[0];
        assert_eq!(first.timeout, Duration::from_millis(2500));
        assert!(!first.block_on_failure);
        assert!(cbs.select(HookEvent::PreToolUse, "glob")[0].block_on_failure);
    }

    #[test]
    fn a_malformed_configuration_registers_nothing_and_says_where() {
        let (cbs, _) = callbacks(&[]);
        let err = cbs
            .register(&json!({"PreToolUse": [
                {"matcher": "Bash", "hookCallbackIds": ["hook_0"]},
                {"matcher": "Read", "hookCallbackIds": "hook_1"}
            ]}))
            .unwrap_err();
        assert!(err.contains("hooks.PreToolUse[1]"), "{err}");
        assert!(!cbs.has(HookEvent::PreToolUse));
        assert_eq!(cbs.register(&Value::Null).unwrap(), 0);
        assert!(cbs.register(&json!(5)).is_err());
    }

    #[tokio::test]
    async fn an_answer_is_a_run_and_a_failure_refuses_a_tool_call() {
        let (cbs, table) = callbacks(&[
            ("ok", Ok(json!({"decision": "block", "reason": "no"}))),
            ("err", Err("the callback raised".to_string())),
        ]);
        let cb = |id: &str, block_on_failure| Callback {
            id: id.to_string(),
            timeout: Duration::from_millis(200),
            block_on_failure,
        };
        let input = json!({"tool_use_id": "toolu_1", "tool_name": "Bash"});
        let run = cbs
            .run(HookEvent::PreToolUse, &cb("ok", false), &input)
            .await;
        assert_eq!(run.ending, Ending::Exited(0));
        assert_eq!(run.stdout, r#"{"decision":"block","reason":"no"}"#);
        let run = cbs
            .run(HookEvent::PreToolUse, &cb("err", false), &input)
            .await;
        assert_eq!(
            run.ending,
            Ending::Exited(2),
            "a failed PreToolUse callback blocks"
        );
        assert!(run.stderr.contains("the callback raised"), "{}", run.stderr);
        let run = cbs
            .run(HookEvent::PreToolUse, &cb("silent", false), &input)
            .await;
        assert_eq!(
            run.ending,
            Ending::Exited(2),
            "so does one that never answers"
        );
        assert!(run.stderr.contains("did not answer"), "{}", run.stderr);
        let run = cbs
            .run(HookEvent::PostToolUse, &cb("err", false), &input)
            .await;
        assert!(
            matches!(run.ending, Ending::NotStarted(_)),
            "{:?}",
            run.ending
        );
        let run = cbs
            .run(HookEvent::PostToolUse, &cb("err", true), &input)
            .await;
        assert_eq!(run.ending, Ending::Exited(2), "onFailure: block");
        let run = cbs.run(HookEvent::Stop, &cb("err", true), &input).await;
        assert!(
            matches!(run.ending, Ending::NotStarted(_)),
            "Stop ignores onFailure"
        );
        assert_eq!(table.asked.lock().unwrap()[0].0, "ok");
    }

    #[tokio::test]
    async fn an_answer_troupe_does_not_understand_refuses_a_tool_call() {
        let (cbs, _) = callbacks(&[
            ("maybe", Ok(json!({"decision": "maybe"}))),
            (
                "perhaps",
                Ok(json!({"hookSpecificOutput": {"permissionDecision": "perhaps"}})),
            ),
            ("typed", Ok(json!({"continue": "yes"}))),
            ("string", Ok(json!("allow"))),
            ("nothing", Ok(Value::Null)),
        ]);
        let cb = |id: &str| Callback {
            id: id.to_string(),
            timeout: Duration::from_millis(200),
            block_on_failure: false,
        };
        let input = json!({"tool_use_id": "toolu_1", "tool_name": "Bash"});
        for (id, says) in [
            ("maybe", "\"maybe\""),
            ("perhaps", "\"perhaps\""),
            ("typed", "invalid type"),
            ("string", "not an object"),
        ] {
            let run = cbs.run(HookEvent::PreToolUse, &cb(id), &input).await;
            assert_eq!(run.ending, Ending::Exited(2), "{id}");
            assert!(
                run.stderr.contains("is not one troupe understands") && run.stderr.contains(says),
                "{id}: {}",
                run.stderr
            );
            let before = crate::decide::before_tool(&[run], "bash", &input, Path::new("/ws"));
            assert!(
                matches!(before.decision, Some(CallDecision::Deny(ref why)) if why.contains(says)),
                "{id}: {before:?}"
            );
        }
        let run = cbs.run(HookEvent::PreToolUse, &cb("nothing"), &input).await;
        assert_eq!(run.ending, Ending::Exited(0), "null says nothing");
        let run = cbs.run(HookEvent::PostToolUse, &cb("maybe"), &input).await;
        assert!(
            matches!(run.ending, Ending::NotStarted(_)),
            "other events block only with onFailure: block"
        );
    }
}
