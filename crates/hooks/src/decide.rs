//! What the runs of one event decide, by Claude Code's contract: exit 0 with a JSON answer
//! (or, for prompts and session starts, plain text as context); exit 2 blocks, with stderr as
//! the feedback; any other ending decides nothing. A PreToolUse answer that starts like JSON
//! but does not parse, or carries a `decision` or `permissionDecision` troupe does not know,
//! refuses the call: an answer troupe cannot read never means "allowed".

use crate::event::HookEvent;
use crate::output::{parse, HookOutput, Stdout};
use crate::run::{Ending, HookRun};
use serde_json::Value;
use std::path::Path;
use troupe_agent::extension::Approval;
use troupe_agent::{BeforeTool, CallDecision, Verdict};
use troupe_protocol::claude_names;

/// What the runs of `event` (any event but PreToolUse) decide.
pub fn verdict(event: HookEvent, runs: &[HookRun]) -> Verdict {
    let mut verdict = Verdict::default();
    for run in runs {
        verdict = verdict.merge(one_verdict(event, run));
    }
    verdict
}

fn one_verdict(event: HookEvent, run: &HookRun) -> Verdict {
    let mut verdict = Verdict::default();
    if run.exited_with(2) {
        verdict.block = Some(feedback(event, &stderr_or_default(run)));
        return verdict;
    }
    if !run.exited_with(0) {
        return verdict;
    }
    match parse(&run.stdout) {
        Stdout::Json(out) => {
            if out.decision.as_deref() == Some("block") {
                verdict.block = Some(feedback(event, &reason_or_default(&out, run)));
            }
            verdict.context.extend(context(event, &out));
            verdict.halt = halt(event, &out);
        }
        // Claude Code adds plain stdout to the conversation for these events only.
        Stdout::Text(text)
            if matches!(
                event,
                HookEvent::UserPromptSubmit
                    | HookEvent::UserPromptExpansion
                    | HookEvent::SessionStart
            ) =>
        {
            verdict.context.push(text);
        }
        Stdout::Text(_) | Stdout::Empty | Stdout::Malformed(_) => {}
    }
    verdict
}

/// What the PreToolUse runs for a call of `tool` with `input` decide.
/// `root` is the project folder Claude Code's absolute `file_path` is relative to.
pub fn before_tool(runs: &[HookRun], tool: &str, input: &Value, root: &Path) -> BeforeTool {
    runs.iter()
        .map(|run| one_before_tool(run, tool, input, root))
        .fold(BeforeTool::default(), BeforeTool::merge)
}

fn one_before_tool(run: &HookRun, tool: &str, input: &Value, root: &Path) -> BeforeTool {
    let mut before = BeforeTool::default();
    if run.exited_with(2) {
        before.decision = Some(CallDecision::Deny(format!(
            "Blocked by a PreToolUse hook: {}",
            stderr_or_default(run)
        )));
        return before;
    }
    if !run.exited_with(0) {
        return before;
    }
    let out = match parse(&run.stdout) {
        Stdout::Json(out) => out,
        // An answer troupe cannot read never means "allowed".
        Stdout::Malformed(why) => return not_understood(run, &why),
        Stdout::Text(_) | Stdout::Empty => return before,
    };
    if let Some(why) = out.not_understood() {
        return not_understood(run, &why);
    }
    let specific = out.hook_specific_output.clone().unwrap_or_default();
    let why = specific
        .permission_decision_reason
        .clone()
        .or_else(|| out.reason.clone());
    let said = specific
        .permission_decision
        .as_deref()
        .or(match out.decision.as_deref() {
            // Claude Code's older spelling.
            Some("approve") => Some("allow"),
            Some("block") => Some("deny"),
            _ => None,
        });
    before.decision = match said {
        Some("allow") => Some(CallDecision::Allow),
        Some("deny") => Some(CallDecision::Deny(format!(
            "Denied by a PreToolUse hook: {}",
            why.unwrap_or_else(|| format!("`{}` refused this call", run.command))
        ))),
        Some("ask") => Some(CallDecision::Ask(format!(
            "a PreToolUse hook asks before this call: {}",
            why.unwrap_or_else(|| format!("`{}` wants a person to decide", run.command))
        ))),
        _ => None,
    };
    before.input = specific
        .updated_input
        .filter(Value::is_object)
        .map(|updated| tool_input_back(tool, input, updated, root));
    before.context = context(HookEvent::PreToolUse, &out);
    before.halt = halt(HookEvent::PreToolUse, &out);
    before
}

/// The refusal of a call whose PreToolUse hook answered what troupe does not understand.
fn not_understood(run: &HookRun, why: &str) -> BeforeTool {
    BeforeTool {
        decision: Some(CallDecision::Deny(format!(
            "Denied by a PreToolUse hook: the answer of `{}` is not one troupe understands: {why}",
            run.command
        ))),
        ..BeforeTool::default()
    }
}

/// The input a hook returned, in troupe's shape (`troupe_protocol::claude_names`): a changed
/// `file_path` becomes the file tool's `path`, Claude Code's other field names troupe's. An
/// unchanged `file_path` leaves `path` as the hook returned it.
fn tool_input_back(tool: &str, sent: &Value, mut updated: Value, root: &Path) -> Value {
    if let Some(map) = updated.as_object_mut() {
        if map.contains_key("path") && map.get("file_path") == sent.get("file_path") {
            map.remove("file_path");
        }
    }
    claude_names::input_from_claude(tool, &updated, root)
}

/// What the PermissionRequest runs for a call of `tool` with `input` answer in place of the
/// person: exit 2 or `behavior: deny` refuses (a refusal stands over any allow), `behavior:
/// allow` runs the call (with `updatedInput`, in troupe's fields, when given); `None` leaves the
/// question to the person.
pub fn permission(runs: &[HookRun], tool: &str, input: &Value, root: &Path) -> Option<Approval> {
    let mut answer: Option<Approval> = None;
    for run in runs {
        let said = one_permission(run, tool, input, root);
        answer = match (answer, said) {
            (Some(Approval::Deny(a)), _) => Some(Approval::Deny(a)),
            (_, Some(deny @ Approval::Deny(_))) => Some(deny),
            (Some(yes), _) => Some(yes),
            (None, said) => said,
        };
    }
    answer
}

fn one_permission(run: &HookRun, tool: &str, input: &Value, root: &Path) -> Option<Approval> {
    if run.exited_with(2) {
        return Some(Approval::Deny(format!(
            "Denied by a PermissionRequest hook: {}",
            stderr_or_default(run)
        )));
    }
    let Stdout::Json(out) = run.exited_with(0).then(|| parse(&run.stdout))? else {
        return None;
    };
    let decision = out.hook_specific_output?.decision?;
    let message = decision.get("message").and_then(Value::as_str);
    match decision.get("behavior").and_then(Value::as_str) {
        Some("allow") => Some(match decision.get("updatedInput") {
            Some(updated) if updated.is_object() => {
                Approval::AllowWith(tool_input_back(tool, input, updated.clone(), root))
            }
            _ => Approval::Allow,
        }),
        Some("deny") => Some(Approval::Deny(format!(
            "Denied by a PermissionRequest hook: {}",
            message.map_or_else(
                || format!("`{}` refused this call", run.command),
                str::to_string
            )
        ))),
        _ => None,
    }
}

/// `additionalContext`, labelled where it lands in a tool result.
fn context(event: HookEvent, out: &HookOutput) -> Vec<String> {
    let Some(text) = out
        .hook_specific_output
        .as_ref()
        .and_then(|s| s.additional_context.clone())
    else {
        return Vec::new();
    };
    match event {
        HookEvent::PreToolUse | HookEvent::PostToolUse | HookEvent::PostToolUseFailure => {
            vec![format!("{event} hook context: {text}")]
        }
        _ => vec![text],
    }
}

/// `continue: false`, with its reason.
fn halt(event: HookEvent, out: &HookOutput) -> Option<String> {
    (out.keep_on == Some(false)).then(|| {
        out.stop_reason
            .clone()
            .unwrap_or_else(|| format!("a {event} hook ended the turn"))
    })
}

/// The model's (or, for a refused prompt, the user's) view of a block.
fn feedback(event: HookEvent, text: &str) -> String {
    match event {
        HookEvent::UserPromptSubmit | HookEvent::UserPromptExpansion => {
            format!("prompt blocked by a {event} hook: {text}")
        }
        _ => format!("{event} hook feedback: {text}"),
    }
}

fn stderr_or_default(run: &HookRun) -> String {
    match run.stderr.trim() {
        "" => format!("`{}` exited 2 without saying why", run.command),
        text => text.to_string(),
    }
}

fn reason_or_default(out: &HookOutput, run: &HookRun) -> String {
    out.reason
        .clone()
        .unwrap_or_else(|| format!("`{}` said block without a reason", run.command))
}

/// One line on how a run went, for the user and the event log.
pub fn summary(run: &HookRun) -> String {
    let mut line = match &run.ending {
        Ending::Exited(0) => "exit 0".to_string(),
        Ending::Exited(2) => "exit 2 (blocks)".to_string(),
        Ending::Exited(code) => format!("exit {code} (a non-blocking error)"),
        Ending::Signalled(signal) => format!("ended by signal {signal} (decides nothing)"),
        Ending::TimedOut(after) => format!(
            "timed out after {}s; it and its process group were killed (decides nothing)",
            after.as_secs()
        ),
        Ending::NotStarted(why) => format!("could not start: {why} (decides nothing)"),
    };
    if run.exited_with(0) {
        let why = match parse(&run.stdout) {
            Stdout::Malformed(why) => Some(why),
            Stdout::Json(out) => out.not_understood(),
            Stdout::Text(_) | Stdout::Empty => None,
        };
        if let Some(why) = why {
            line.push_str(&format!(
                "; its stdout is not a JSON answer troupe understands ({why}): a tool call it guards is refused, other events ignore it"
            ));
        }
    }
    line
}

/// The hook's `systemMessage`, a warning for the user.
pub fn system_message(run: &HookRun) -> Option<String> {
    match run.exited_with(0).then(|| parse(&run.stdout)) {
        Some(Stdout::Json(out)) => out.system_message,
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::time::Duration;

    fn run(ending: Ending, stdout: &str, stderr: &str) -> HookRun {
        HookRun {
            command: "hook.sh".into(),
            ending,
            stdout: stdout.into(),
            stderr: stderr.into(),
            duration: Duration::ZERO,
        }
    }

    #[test]
    fn exit_two_blocks_with_stderr_and_other_endings_decide_nothing() {
        let bash = json!({"command": "rm -rf /"});
        let blocked = before_tool(
            &[run(Ending::Exited(2), "", "no rm -rf\n")],
            "bash",
            &bash,
            Path::new("/ws"),
        );
        assert_eq!(
            blocked.decision,
            Some(CallDecision::Deny(
                "Blocked by a PreToolUse hook: no rm -rf".into()
            ))
        );
        for ending in [
            Ending::Exited(1),
            Ending::TimedOut(Duration::from_secs(1)),
            Ending::Signalled(9),
            Ending::NotStarted("x".into()),
        ] {
            let allowed = json!({"hookSpecificOutput": {"permissionDecision": "deny"}}).to_string();
            assert_eq!(
                before_tool(
                    &[run(ending.clone(), &allowed, "e")],
                    "bash",
                    &bash,
                    Path::new("/ws")
                ),
                BeforeTool::default()
            );
            assert_eq!(
                verdict(HookEvent::Stop, &[run(ending, "", "e")]),
                Verdict::default()
            );
        }
        let stop = verdict(
            HookEvent::Stop,
            &[run(Ending::Exited(2), "", "run the tests")],
        );
        assert_eq!(
            stop.block.as_deref(),
            Some("Stop hook feedback: run the tests")
        );
    }

    #[test]
    fn json_decisions_and_updated_input() {
        let sent = json!({"path": "a.txt", "file_path": "/ws/a.txt", "content": "x"});
        let out = json!({"hookSpecificOutput": {"permissionDecision": "allow",
            "updatedInput": {"file_path": "/ws/b.txt", "content": "y"}, "additionalContext": "c"}});
        let before = before_tool(
            &[run(Ending::Exited(0), &out.to_string(), "")],
            "write_file",
            &sent,
            Path::new("/ws"),
        );
        assert_eq!(before.decision, Some(CallDecision::Allow));
        assert_eq!(before.input, Some(json!({"path": "b.txt", "content": "y"})));
        assert_eq!(before.context, ["PreToolUse hook context: c"]);
        let ask = json!({"hookSpecificOutput": {"permissionDecision": "ask", "permissionDecisionReason": "why"}});
        let deny = json!({"decision": "block", "reason": "old style"});
        let both = before_tool(
            &[
                run(Ending::Exited(0), &ask.to_string(), ""),
                run(Ending::Exited(0), &deny.to_string(), ""),
            ],
            "bash",
            &json!({}),
            Path::new("/ws"),
        );
        assert_eq!(
            both.decision,
            Some(CallDecision::Deny(
                "Denied by a PreToolUse hook: old style".into()
            ))
        );
        let halted = json!({"continue": false, "stopReason": "done for today"});
        let post = verdict(
            HookEvent::PostToolUse,
            &[run(Ending::Exited(0), &halted.to_string(), "")],
        );
        assert_eq!(post.halt.as_deref(), Some("done for today"));
    }

    #[test]
    fn a_command_hooks_answer_troupe_cannot_read_refuses_the_call() {
        let bash = json!({"command": "ls"});
        for (stdout, says) in [
            (r#"{"decision": "maybe"}"#, "\"maybe\""),
            (
                r#"{"hookSpecificOutput": {"permissionDecision": "perhaps"}}"#,
                "\"perhaps\"",
            ),
            (r#"{"decision": ["allow"]}"#, "invalid type"),
            ("{oops", "key must be a string"),
        ] {
            let before = before_tool(
                &[run(Ending::Exited(0), stdout, "")],
                "bash",
                &bash,
                Path::new("/ws"),
            );
            let Some(CallDecision::Deny(why)) = &before.decision else {
                panic!("{stdout}: {before:?}");
            };
            assert!(
                why.contains("`hook.sh` is not one troupe understands") && why.contains(says),
                "{stdout}: {why}"
            );
        }
        // Plain text and silence still decide nothing.
        for stdout in ["", "checked\n"] {
            let before = before_tool(
                &[run(Ending::Exited(0), stdout, "")],
                "bash",
                &bash,
                Path::new("/ws"),
            );
            assert_eq!(before, BeforeTool::default(), "{stdout:?}");
        }
    }

    #[test]
    fn plain_stdout_is_context_for_prompts_only() {
        let prompt = verdict(
            HookEvent::UserPromptSubmit,
            &[run(Ending::Exited(0), "it is Tuesday\n", "")],
        );
        assert_eq!(prompt.context, ["it is Tuesday"]);
        let post = verdict(
            HookEvent::PostToolUse,
            &[run(Ending::Exited(0), "noise", "")],
        );
        assert_eq!(post, Verdict::default());
        let broken = run(Ending::Exited(0), "{oops", "");
        assert!(
            summary(&broken).contains("not a JSON answer troupe understands"),
            "{}",
            summary(&broken)
        );
    }
}
