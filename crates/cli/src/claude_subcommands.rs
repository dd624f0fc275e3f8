//! Claude Code's subcommands troupe does not have. `troupe update` out of Claude Code habit
//! must not become a prompt and open a REPL: when the first argument is one of these words
//! (and not a subcommand troupe has), troupe says so, names its own subcommands and exits 2.
//! Any other word stays a prompt, as `claude foo` makes `foo` one.

use clap::CommandFactory;

/// Claude Code's subcommands (2.1.x and the older ones scripts still call), each with what it
/// does there and what to do in troupe instead.
const CLAUDE_ONLY: &[(&str, &str)] = &[
    ("update", "Claude Code's self-update; to update troupe, pull its repository and run `cargo install --path crates/cli --locked`"),
    ("upgrade", "Claude Code's self-update; to update troupe, pull its repository and run `cargo install --path crates/cli --locked`"),
    ("install", "Claude Code's native installer; troupe installs with `cargo install --path crates/cli --locked`"),
    ("migrate-installer", "Claude Code's installer migration; troupe has no installer to migrate"),
    ("setup-token", "Claude Code's subscription token; troupe reads ANTHROPIC_API_KEY or ANTHROPIC_AUTH_TOKEN"),
    ("auth", "Claude Code's sign-in; troupe reads ANTHROPIC_API_KEY or ANTHROPIC_AUTH_TOKEN, or OPENAI_BASE_URL"),
    ("login", "Claude Code's sign-in; troupe reads ANTHROPIC_API_KEY or ANTHROPIC_AUTH_TOKEN, or OPENAI_BASE_URL"),
    ("logout", "Claude Code's sign-out; troupe keeps no login"),
    ("agents", "Claude Code's list of subagents; `troupe config` lists the agent definitions"),
    ("plugin", "Claude Code's plugin manager"),
    ("plugins", "Claude Code's plugin manager"),
    ("remote-control", "Claude Code's Remote Control; troupe runs on this machine only"),
    ("auto-mode", "Claude Code's auto mode classifier rules"),
    ("ultrareview", "Claude Code's cloud review"),
];

/// The error for `args` (the whole command line) when its first argument names a Claude Code
/// subcommand troupe lacks; `None` otherwise.
pub fn refusal(args: &[std::ffi::OsString]) -> Option<String> {
    let word = args.get(1)?.to_str()?;
    let (name, what) = CLAUDE_ONLY.iter().find(|(name, _)| *name == word)?;
    let command = crate::args::Cli::command();
    let ours: Vec<&str> = command
        .get_subcommands()
        .filter(|c| !c.is_hide_set())
        .map(|c| c.get_name())
        .filter(|n| *n != "help")
        .collect();
    if ours.contains(name) {
        return None;
    }
    Some(format!(
        "troupe has no `{name}` ({what}).\ntroupe's commands: {}. For a prompt that starts with this word, quote it: troupe \"{name} …\"",
        ours.join(", ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(args: &[&str]) -> Vec<std::ffi::OsString> {
        args.iter().map(Into::into).collect()
    }

    #[test]
    fn claude_codes_own_words_are_refused_and_others_are_left_alone() {
        let err = refusal(&line(&["troupe", "update"])).unwrap_or_default();
        assert!(
            err.starts_with("troupe has no `update` (Claude Code's self-update"),
            "{err}"
        );
        assert!(err.contains("doctor"), "{err}");
        assert!(refusal(&line(&["troupe", "setup-token"])).is_some());
        // troupe's own subcommands, a prompt, a flag first: clap's business.
        assert_eq!(refusal(&line(&["troupe", "doctor"])), None);
        assert_eq!(refusal(&line(&["troupe", "mcp", "list"])), None);
        assert_eq!(refusal(&line(&["troupe", "update the readme"])), None);
        assert_eq!(refusal(&line(&["troupe", "-p", "update"])), None);
        assert_eq!(refusal(&line(&["troupe", "fix"])), None);
        assert_eq!(refusal(&line(&["troupe"])), None);
    }
}
