//! Claude Code's space-separated rule lists: `--allowedTools Bash Read` (and
//! `--disallowedTools`) take values until the next flag. clap's `num_args(1..)` would also take
//! a prompt that follows, so the command line is rewritten before clap reads it: each further
//! argument that is a permission rule becomes one more `--allowedTools` value. An argument that
//! is not a rule — a prompt, a subcommand — ends the list, so `-p --allowedTools Bash "fix the
//! tests"` keeps its prompt.

use std::ffi::OsString;
use troupe_agent::permissions::split_rule_list;

/// The flags whose values continue until the next flag.
const RULE_FLAGS: [&str; 4] = [
    "--allowedTools",
    "--allowed-tools",
    "--disallowedTools",
    "--disallowed-tools",
];

/// Tool names a bare rule may carry: Claude Code's tools and troupe's own names for them.
const TOOL_NAMES: [&str; 30] = [
    "Bash",
    "Read",
    "Edit",
    "Write",
    "MultiEdit",
    "Glob",
    "Grep",
    "LS",
    "WebFetch",
    "WebSearch",
    "NotebookEdit",
    "NotebookRead",
    "Task",
    "Agent",
    "TodoWrite",
    "TodoRead",
    "ExitPlanMode",
    "BashOutput",
    "KillShell",
    "SlashCommand",
    "Skill",
    "bash",
    "read_file",
    "write_file",
    "edit_file",
    "notebook_edit",
    "glob",
    "grep",
    "web_fetch",
    "web_search",
];

/// The command line with every further rule after a rule flag given its own flag.
pub fn spread_rule_lists(args: impl IntoIterator<Item = OsString>) -> Vec<OsString> {
    let mut out = Vec::new();
    // The rule flag whose list is open, once its first value is in.
    let mut open: Option<String> = None;
    // A rule flag that still waits for its first value (which is taken whatever it is).
    let mut pending: Option<String> = None;
    let mut after_separator = false;
    for arg in args {
        let text = arg.to_str().map(str::to_owned);
        if after_separator {
            out.push(arg);
            continue;
        }
        if let Some(flag) = pending.take() {
            out.push(arg);
            open = Some(flag);
            continue;
        }
        match text.as_deref() {
            Some("--") => {
                after_separator = true;
                open = None;
            }
            Some(t) if RULE_FLAGS.contains(&t) => {
                pending = Some(t.to_owned());
                open = None;
            }
            Some(t) if t.starts_with("--") && t.contains('=') => {
                let flag = t.split('=').next().unwrap_or("");
                open = RULE_FLAGS.contains(&flag).then(|| flag.to_owned());
            }
            Some(t) if t.starts_with('-') && t.len() > 1 => open = None,
            Some(t) => {
                if let Some(flag) = open.as_ref().filter(|_| is_rule_list(t)) {
                    out.push(OsString::from(flag.clone()));
                } else {
                    open = None;
                }
            }
            None => open = None,
        }
        out.push(arg);
    }
    out
}

/// True when every item of `text` (split as rule lists are) is a permission rule: a known tool
/// name, an MCP tool or server, or any name with a parenthesised specifier.
fn is_rule_list(text: &str) -> bool {
    let rules = split_rule_list(text);
    !rules.is_empty() && rules.iter().all(|rule| is_rule(rule))
}

fn is_rule(rule: &str) -> bool {
    let (name, spec) = match rule.find('(') {
        Some(open) => (&rule[..open], Some(&rule[open..])),
        None => (rule, None),
    };
    let name_chars = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '*'));
    match spec {
        Some(spec) => name_chars && spec.ends_with(')'),
        None => name_chars && (name.starts_with("mcp__") || TOOL_NAMES.contains(&name)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spread(args: &[&str]) -> Vec<String> {
        spread_rule_lists(args.iter().map(OsString::from))
            .into_iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect()
    }

    #[test]
    fn space_separated_rules_each_get_the_flag() {
        assert_eq!(
            spread(&["troupe", "-p", "hi", "--allowedTools", "Bash", "Read"]),
            [
                "troupe",
                "-p",
                "hi",
                "--allowedTools",
                "Bash",
                "--allowedTools",
                "Read"
            ]
        );
        assert_eq!(
            spread(&[
                "troupe",
                "--disallowedTools",
                "Bash",
                "mcp__gh__*",
                "Edit(src/**)",
                "-p",
                "hi"
            ]),
            [
                "troupe",
                "--disallowedTools",
                "Bash",
                "--disallowedTools",
                "mcp__gh__*",
                "--disallowedTools",
                "Edit(src/**)",
                "-p",
                "hi"
            ]
        );
        assert_eq!(
            spread(&["troupe", "--allowedTools=Bash", "Read", "-p", "x"]),
            [
                "troupe",
                "--allowedTools=Bash",
                "--allowedTools",
                "Read",
                "-p",
                "x"
            ]
        );
    }

    #[test]
    fn prompts_subcommands_and_the_other_forms_are_left_alone() {
        for args in [
            // A prompt after the list ends it, even one starting with a tool's name.
            &[
                "troupe",
                "-p",
                "--allowedTools",
                "Bash(cargo test:*) Edit",
                "make the tests pass",
            ][..],
            &[
                "troupe",
                "-p",
                "--allowedTools",
                "Bash",
                "Run echo contract",
            ],
            &[
                "troupe",
                "-p",
                "--allowedTools",
                "Bash(git diff *)",
                "Read the diff",
            ],
            &["troupe", "--allowedTools", "Bash,Read", "-p", "hi"],
            &["troupe", "--allowedTools", "Bash", "team", "status"],
            &["troupe", "-p", "--", "--allowedTools", "Bash", "Read"],
        ] {
            let expected: Vec<String> = args.iter().map(|a| a.to_string()).collect();
            assert_eq!(spread(args), expected);
        }
        // The first value is always the flag's, as clap takes it.
        assert_eq!(
            spread(&["troupe", "--allowedTools", "anything at all", "Read"]),
            [
                "troupe",
                "--allowedTools",
                "anything at all",
                "--allowedTools",
                "Read"
            ]
        );
    }
}
