//! The rest of `claude --help`'s flags, so a script written for Claude Code never makes troupe
//! exit 2 (the list: crates/cli/tests/fixtures/claude_flags.txt). Those troupe has the feature
//! for are honoured (`--append-system-prompt-file`, `--disable-slash-commands`); the others
//! print a one-line note naming the flag and what troupe does instead ([`ClaudeArgs::notes`]).

use clap::Args;
use std::path::PathBuf;

/// Claude Code's flags beyond the headless contract and the Agent SDKs'.
#[derive(Debug, Args, Clone, Default)]
pub struct ClaudeArgs {
    /// Append this file's text to the end of the lead's system prompt (after
    /// --append-system-prompt's).
    #[arg(long, value_name = "FILE")]
    pub append_system_prompt_file: Option<PathBuf>,

    /// No custom slash commands: a prompt starting with `/name` is sent as it is.
    #[arg(long)]
    pub disable_slash_commands: bool,

    /// Claude Code's minimal mode (accepted; troupe loads the workspace as usual).
    #[arg(long, hide = true)]
    pub bare: bool,

    /// Files to attach to the first prompt, as @path does (Claude Code's `file_id:path` form is
    /// accepted with a note: troupe has no file API).
    #[arg(long, value_name = "PATHS", num_args = 1..)]
    pub file: Vec<String>,

    /// Start from a pull request (accepted; see the note it prints).
    #[arg(long, value_name = "PR", num_args = 0..=1, default_missing_value = "", hide = true)]
    pub from_pr: Option<String>,

    /// Claude in Chrome (accepted; troupe has no browser integration).
    #[arg(long, hide = true)]
    pub chrome: bool,
    /// Claude in Chrome off (accepted).
    #[arg(long, hide = true)]
    pub no_chrome: bool,

    /// Connect to an IDE (accepted; troupe has no IDE integration).
    #[arg(long, hide = true)]
    pub ide: bool,

    /// Run the Setup hooks then the session (accepted; troupe has no Setup hook event).
    #[arg(long, hide = true)]
    pub init: bool,
    /// Run the Setup hooks and exit (accepted; see the note it prints).
    #[arg(long, hide = true)]
    pub init_only: bool,
    /// Run the maintenance Setup hooks (accepted; see the note it prints).
    #[arg(long, hide = true)]
    pub maintenance: bool,

    /// A web session (accepted; troupe runs here).
    #[arg(long, value_name = "TASK", num_args = 0..=1, default_missing_value = "", hide = true)]
    pub remote: Option<String>,
    /// Pull a web session here (accepted; troupe has no web sessions).
    #[arg(long, value_name = "SESSION", num_args = 0..=1, default_missing_value = "", hide = true)]
    pub teleport: Option<String>,
    /// Remote Control (accepted; troupe has none).
    #[arg(long, alias = "rc", value_name = "NAME", num_args = 0..=1, default_missing_value = "", hide = true)]
    pub remote_control: Option<String>,

    /// A tmux session for the worktree (accepted; see the note it prints).
    #[arg(long, hide = true)]
    pub tmux: bool,

    /// The old MCP debug flag (troupe: the same as --debug).
    #[arg(long, hide = true)]
    pub mcp_debug: bool,

    /// Leave the per-machine sections out of the system prompt (accepted; see the note).
    #[arg(long, hide = true)]
    pub exclude_dynamic_system_prompt_sections: bool,

    /// Development channels (accepted; troupe has no channels).
    #[arg(long, value_name = "SERVERS", num_args = 1.., hide = true)]
    pub dangerously_load_development_channels: Vec<String>,
}

impl ClaudeArgs {
    /// One line each for the flags troupe accepts but cannot apply, for stderr.
    pub fn notes(&self) -> Vec<String> {
        let mut notes = Vec::new();
        let mut note = |on: bool, flag: &str, instead: &str| {
            if on {
                notes.push(format!("{flag} is accepted but not honoured: {instead}"));
            }
        };
        note(
            self.bare,
            "--bare",
            "hooks, MCP servers, memory and skills load as usual (--setting-sources \"\" and --strict-mcp-config leave most out)",
        );
        note(
            self.from_pr.is_some(),
            "--from-pr",
            "troupe does not fetch pull requests; check the branch out and run troupe there",
        );
        note(
            self.chrome || self.no_chrome,
            "--chrome",
            "troupe has no browser integration",
        );
        note(self.ide, "--ide", "troupe has no IDE integration");
        note(
            self.init || self.init_only || self.maintenance,
            "--init/--init-only/--maintenance",
            "troupe has no Setup hook event",
        );
        note(
            self.remote.is_some() || self.teleport.is_some() || self.remote_control.is_some(),
            "--remote/--teleport/--remote-control",
            "troupe runs on this machine only",
        );
        note(
            self.tmux,
            "--tmux",
            "teammates run in process or as processes (--teammate-mode)",
        );
        note(
            self.exclude_dynamic_system_prompt_sections,
            "--exclude-dynamic-system-prompt-sections",
            "the environment section stays in the system prompt",
        );
        note(
            !self.dangerously_load_development_channels.is_empty(),
            "--dangerously-load-development-channels",
            "troupe has no channels",
        );
        notes
    }

    /// The text of `--append-system-prompt-file`, if given.
    pub fn appended_prompt(&self) -> anyhow::Result<Option<String>> {
        use anyhow::Context;
        self.append_system_prompt_file
            .as_ref()
            .map(|path| {
                std::fs::read_to_string(path)
                    .with_context(|| format!("--append-system-prompt-file {}", path.display()))
            })
            .transpose()
    }
}

#[cfg(test)]
mod tests {
    use crate::args::Cli;
    use clap::Parser;

    /// Claude Code's flags, one a line: the flag, then its example value (the rest of the line).
    const CLAUDE_FLAGS: &str = include_str!("../tests/fixtures/claude_flags.txt");

    fn flags() -> Vec<Vec<String>> {
        CLAUDE_FLAGS
            .lines()
            .map(str::trim)
            .filter(|line| !line.is_empty() && !line.starts_with('#'))
            .map(|line| match line.split_once(' ') {
                Some((flag, value)) => vec![flag.to_string(), value.to_string()],
                None => vec![line.to_string()],
            })
            .collect()
    }

    #[test]
    fn every_flag_of_claude_code_parses() {
        let flags = flags();
        assert!(flags.len() > 60, "the list holds {} flags", flags.len());
        for flag in &flags {
            let args = ["troupe"].into_iter().map(String::from).chain(flag.clone());
            let parsed = Cli::try_parse_from(args);
            assert!(
                parsed.is_ok(),
                "{flag:?}: {}",
                parsed.err().map(|e| e.to_string()).unwrap_or_default()
            );
        }
    }

    #[test]
    fn a_flag_troupe_cannot_honour_names_itself_and_honoured_ones_say_nothing() {
        let cli = Cli::try_parse_from(["troupe", "-p", "--bare", "--file", "a:b", "--", "hi"])
            .unwrap_or_else(|e| panic!("{e}"));
        let notes = cli.run.claude.notes();
        assert_eq!(notes.len(), 1, "{notes:?}");
        assert!(notes[0].starts_with("--bare "), "{notes:?}");
        let cli = Cli::try_parse_from(["troupe", "-p", "--disable-slash-commands", "hi"])
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(cli.run.claude.notes().is_empty());
        assert!(cli.run.claude.disable_slash_commands);
        assert_eq!(cli.prompt.as_deref(), Some("hi"));
    }
}
