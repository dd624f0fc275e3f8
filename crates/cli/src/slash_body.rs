//! A custom command's body made ready as Claude Code makes it: each ``!`cmd` `` run first,
//! as a bash call of the lead's (the same gates, permission rules — the command's
//! `allowed-tools` among them — approver and sandbox), its output put in its place; and each
//! `@path` naming a file or folder attached (as a typed prompt's are).

use troupe_agent::Agent;

/// `body` with its ``!`cmd` ``s run and its `@path`s attached. A command refused (headless,
/// nobody to ask: not granted by `allowed-tools` or a rule) is an error naming it and saying
/// why; one that runs and fails puts its output in place like one that succeeds.
pub async fn prepare(
    agent: &Agent,
    command: &str,
    body: &str,
) -> Result<troupe_protocol::session::Prompt, String> {
    let mut out = String::with_capacity(body.len());
    let mut rest = body;
    let mut n = 0;
    while let Some((before, cmd, after)) = next_bang(rest) {
        out.push_str(before);
        n += 1;
        let input = serde_json::json!({ "command": cmd });
        let id = format!("slash-{command}-{n}");
        let ran = agent
            .run_outside_turn(&id, "bash", &input)
            .await
            .map_err(|why| format!("/{command}: !`{cmd}` was not run: {why}"))?;
        out.push_str(shown(&ran.content));
        rest = after;
    }
    out.push_str(rest);
    Ok(crate::repl_input::attach(&out, agent.tool_workspace()))
}

/// The text before the next ``!`cmd` ``, the command, and the text after it.
fn next_bang(text: &str) -> Option<(&str, &str, &str)> {
    let mut from = 0;
    while let Some(at) = text[from..].find("!`").map(|i| i + from) {
        let start = at + 2;
        match text[start..].find('`') {
            Some(len) if len > 0 && !text[start..start + len].contains('\n') => {
                return Some((
                    &text[..at],
                    &text[start..start + len],
                    &text[start + len + 1..],
                ));
            }
            _ => from = start,
        }
    }
    None
}

/// A bash call's output as it goes into the prompt: without the `exit code: 0` of a success.
fn shown(content: &str) -> &str {
    let trimmed = content.trim_end();
    trimmed
        .strip_suffix("exit code: 0")
        .map_or(trimmed, str::trim_end)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bang_is_found_inline_and_an_empty_or_open_one_is_text() {
        assert_eq!(
            next_bang("status: !`git status` now"),
            Some(("status: ", "git status", " now"))
        );
        assert_eq!(next_bang("a !`` b !`open\nline`"), None);
        assert_eq!(shown("hi\nexit code: 0\n"), "hi");
        assert_eq!(shown("oops\nexit code: 1"), "oops\nexit code: 1");
    }
}
