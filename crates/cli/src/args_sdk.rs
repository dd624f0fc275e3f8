//! The rest of the flags the Agent SDKs (Python `claude-agent-sdk`, TypeScript
//! `@anthropic-ai/claude-agent-sdk`) pass to Claude Code. Every one is accepted, so an SDK
//! option never makes troupe exit 2; each does what it does in Claude Code where troupe has it
//! (`--debug-file`, `--debug-to-stderr`, `--no-session-persistence`,
//! `--allow-dangerously-skip-permissions`, `--effort`, `--thinking`), and the others say once on stderr that they are
//! accepted and what troupe does instead ([`SdkArgs::notes`]).

use clap::Args;
use std::path::PathBuf;
use troupe_model::Reasoning;

/// Claude Code's variable for a thinking budget, used when no flag sets one.
pub const MAX_THINKING_TOKENS_VAR: &str = "MAX_THINKING_TOKENS";
/// Claude Code's variable for the effort, used when `--effort` is not given.
pub const EFFORT_VAR: &str = "CLAUDE_CODE_EFFORT_LEVEL";

/// Agent SDK flags beyond Claude Code's headless basics.
#[derive(Debug, Args, Clone, Default)]
pub struct SdkArgs {
    /// Reasoning effort: low, medium, high, xhigh or max (Anthropic's effort on models that
    /// think adaptively, a thinking budget on older ones, `reasoning_effort` on
    /// OpenAI-compatible servers).
    #[arg(long, value_name = "LEVEL")]
    pub effort: Option<String>,

    /// Extended thinking: adaptive, enabled or disabled (`--max-thinking-tokens` sets a
    /// budget).
    #[arg(long, value_name = "MODE")]
    pub thinking: Option<String>,

    /// How thinking is shown (accepted; troupe streams thinking as it comes).
    #[arg(long, value_name = "DISPLAY", hide = true)]
    pub thinking_display: Option<String>,

    /// Keep no session: the transcript lives in a temporary folder removed when troupe exits,
    /// so `--continue` and `troupe sessions` never see it.
    #[arg(long)]
    pub no_session_persistence: bool,

    /// Write debug logs to this file (turns debug logging on).
    #[arg(long, value_name = "FILE")]
    pub debug_file: Option<PathBuf>,

    /// Debug logs on stderr (the same as --debug).
    #[arg(long)]
    pub debug_to_stderr: bool,

    /// Lets the controlling process switch to bypassPermissions later (troupe always allows
    /// that switch; accepted).
    #[arg(long)]
    pub allow_dangerously_skip_permissions: bool,

    /// A display name for the session (accepted; see the note it prints).
    #[arg(short = 'n', long, value_name = "NAME")]
    pub name: Option<String>,

    /// Start in a new git worktree (accepted; see the note it prints).
    #[arg(short = 'w', long, value_name = "NAME", num_args = 0..=1, default_missing_value = "")]
    pub worktree: Option<String>,

    /// Run the lead as this agent definition: its prompt, its tools, its model (unless
    /// --model).
    #[arg(long, value_name = "NAME")]
    pub agent: Option<String>,

    /// Agent definitions for this session as JSON (`{"name": {"description", "prompt",
    /// "tools", "model"}}`), for `task` and `spawn_teammate`; they win over files of a name.
    #[arg(long, value_name = "JSON")]
    pub agents: Option<String>,

    /// A plugin folder to load for this session (repeatable).
    #[arg(long, value_name = "DIR")]
    pub plugin_dir: Vec<PathBuf>,

    /// A plugin folder to load without its MCP servers (repeatable).
    #[arg(long, value_name = "DIR", hide = true)]
    pub plugin_dir_no_mcp: Vec<PathBuf>,

    /// With --input-format stream-json: echo each user message from stdin back on stdout
    /// (marked `isReplay`) as its turn starts.
    #[arg(long)]
    pub replay_user_messages: bool,

    /// Resume only up to this message (accepted; see the note it prints).
    #[arg(long, value_name = "MESSAGE_ID")]
    pub resume_session_at: Option<String>,

    /// With --resume-session-at (accepted).
    #[arg(long, value_name = "BOOL", hide = true)]
    pub resume_drops_turn: Option<String>,

    /// A token budget for the task (accepted; see the note it prints).
    #[arg(long, value_name = "TOKENS", hide = true)]
    pub task_budget: Option<String>,

    /// The SDK's protocol details troupe needs no flag for (accepted, nothing to do).
    #[arg(long, hide = true)]
    pub await_initialize: bool,
    #[arg(long, value_name = "FIELDS", hide = true)]
    pub initialize_fields: Option<String>,
    #[arg(long, hide = true)]
    pub managed_settings_in_initialize: bool,
    #[arg(long, hide = true)]
    pub hard_fail: bool,
    #[arg(long, hide = true)]
    pub session_mirror: bool,
    #[arg(long, value_name = "MODE", hide = true)]
    pub permission_prompts: Option<String>,

    /// Claude Code features troupe does not have (accepted; see the note each prints).
    #[arg(long, value_name = "JSON", hide = true)]
    pub managed_settings: Option<String>,
    #[arg(long, value_name = "CHANNEL", hide = true)]
    pub channels: Vec<String>,
    #[arg(long, value_name = "DIR", hide = true)]
    pub project_config_root: Option<PathBuf>,
    #[arg(long, value_name = "URL", hide = true)]
    pub sdk_url: Option<String>,
}

impl SdkArgs {
    /// One line each for the flags troupe accepts but does not apply, for stderr.
    pub fn notes(&self) -> Vec<String> {
        let mut notes = Vec::new();
        let mut note = |on: bool, text: &str| {
            if on {
                notes.push(text.to_string());
            }
        };
        note(
            self.thinking_display.is_some(),
            "--thinking-display is accepted; thinking is streamed as the model sends it",
        );
        note(
            self.name.is_some(),
            "--name is accepted; sessions are listed by id and first prompt",
        );
        note(
            self.worktree.is_some(),
            "--worktree is accepted but the session runs in the workspace (teammates get worktrees with create_worktree)",
        );
        note(
            self.resume_session_at.is_some() || self.resume_drops_turn.is_some(),
            "--resume-session-at is accepted; the whole session is resumed",
        );
        note(
            self.task_budget.is_some(),
            "--task-budget is accepted; use --max-budget-usd or --max-turns to bound a run",
        );
        note(
            self.managed_settings.is_some(),
            "--managed-settings is accepted but not applied; use --settings",
        );
        note(
            !self.channels.is_empty(),
            "--channels is accepted but troupe has no channels",
        );
        note(
            self.project_config_root.is_some(),
            "--project-config-root is accepted; troupe reads the workspace's own .claude and .troupe",
        );
        note(
            self.sdk_url.is_some(),
            "--sdk-url is accepted but troupe talks over stdin and stdout only",
        );
        notes
    }

    /// The extended thinking and effort these flags ask for, with `--max-thinking-tokens`;
    /// without flags, Claude Code's variables `MAX_THINKING_TOKENS` and
    /// `CLAUDE_CODE_EFFORT_LEVEL` (looked up by `env`).
    pub fn reasoning(
        &self,
        max_thinking_tokens: Option<u32>,
        env: impl Fn(&str) -> Option<String>,
    ) -> anyhow::Result<Reasoning> {
        let budget = match max_thinking_tokens {
            Some(budget) => Some(budget),
            None if self.thinking.is_none() => match env(MAX_THINKING_TOKENS_VAR) {
                Some(value) => Some(value.trim().parse::<u32>().map_err(|_| {
                    anyhow::anyhow!(
                        "{MAX_THINKING_TOKENS_VAR}={value} is not a number of tokens: set a whole number, or unset it"
                    )
                })?),
                None => None,
            },
            None => None,
        };
        let effort = self.effort.clone().or_else(|| env(EFFORT_VAR));
        Reasoning::from_flags(self.thinking.as_deref(), budget, effort.as_deref())
            .map_err(anyhow::Error::msg)
    }

    /// The debug filter these flags ask for, when they ask for one.
    pub fn debug(&self) -> Option<&'static str> {
        (self.debug_to_stderr || self.debug_file.is_some()).then_some("debug")
    }
}

#[cfg(test)]
mod tests {
    use crate::args::Cli;
    use clap::Parser;

    /// What the TypeScript SDK 0.3.332 and the Python SDK 0.2.18x pass, in their own spelling.
    const SDK_FLAGS: &[&str] = &[
        "--effort=high",
        "--thinking=adaptive",
        "--thinking-display=summarized",
        "--no-session-persistence",
        "--debug-file=/tmp/troupe-debug.log",
        "--debug-to-stderr",
        "--plugin-dir=/tmp",
        "--plugin-dir-no-mcp=/tmp",
        "--replay-user-messages",
        "--resume-session-at=msg_1",
        "--resume-drops-turn=true",
        "--name=nightly",
        "--worktree=feature",
        "--allow-dangerously-skip-permissions",
        "--agent=reviewer",
        "--await-initialize",
        "--channels=a",
        "--hard-fail",
        "--initialize-fields=settings,disallowedTools",
        "--managed-settings={}",
        "--managed-settings-in-initialize",
        "--permission-prompts=stdio",
        "--project-config-root=/tmp",
        "--sdk-url=ws://x",
        "--session-mirror",
        "--task-budget=1000",
        "--max-thinking-tokens=2048",
        "--betas=a,b",
        "--include-hook-events",
        "--setting-sources=",
        r#"--agents={"r": {"description": "d", "prompt": "p"}}"#,
    ];

    #[test]
    fn every_flag_the_sdks_pass_is_accepted() {
        for flag in SDK_FLAGS {
            let parsed = Cli::try_parse_from(["troupe", "-p", flag, "hi"]);
            assert!(parsed.is_ok(), "{flag}: {:?}", parsed.err());
        }
        let all = Cli::try_parse_from(
            ["troupe", "-p"]
                .into_iter()
                .chain(SDK_FLAGS.iter().copied())
                .chain(["hi"]),
        )
        .map_err(|e| e.to_string());
        let cli = all.unwrap_or_else(|e| panic!("{e}"));
        assert!(cli.run.sdk.no_session_persistence);
        assert_eq!(cli.run.sdk.debug(), Some("debug"));
        assert!(cli.run.sdk.notes().len() >= 9, "{:?}", cli.run.sdk.notes());
    }

    #[test]
    fn short_forms_of_name_and_worktree() {
        let cli = Cli::try_parse_from(["troupe", "-p", "-n", "x", "-w", "--", "hi"])
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(cli.run.sdk.name.as_deref(), Some("x"));
        assert_eq!(cli.run.sdk.worktree.as_deref(), Some(""));
        assert_eq!(cli.prompt.as_deref(), Some("hi"));
    }

    #[test]
    fn flags_in_use_say_so_once_and_others_say_nothing() {
        let cli = Cli::try_parse_from([
            "troupe",
            "-p",
            "--effort",
            "high",
            "--thinking",
            "adaptive",
            "--thinking-display",
            "summarized",
            "hi",
        ])
        .unwrap_or_else(|e| panic!("{e}"));
        let notes = cli.run.sdk.notes();
        assert_eq!(notes.len(), 1, "{notes:?}");
        assert!(notes[0].contains("--thinking-display"));
        let plain = Cli::try_parse_from(["troupe", "-p", "hi"]).unwrap_or_else(|e| panic!("{e}"));
        assert!(plain.run.sdk.notes().is_empty());
        assert_eq!(plain.run.sdk.debug(), None);
    }

    #[test]
    fn effort_and_thinking_become_the_models_reasoning() {
        use troupe_model::{Effort, Thinking};
        let parse = |args: &[&str]| {
            let cli = Cli::try_parse_from(["troupe", "-p"].iter().chain(args).chain(&["hi"]))
                .unwrap_or_else(|e| panic!("{e}"));
            cli.run
                .sdk
                .reasoning(cli.run.contract.max_thinking_tokens, |_| None)
        };
        let r = parse(&["--effort", "low", "--max-thinking-tokens", "3000"])
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(r.thinking, Thinking::Budget(3000));
        assert_eq!(r.effort, Some(Effort::Low));
        let r = parse(&["--thinking=disabled"]).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(r.thinking, Thinking::Off);
        let err = parse(&["--effort", "huge"]).err().map(|e| e.to_string());
        assert!(err.is_some_and(|e| e.contains("--effort")));
        // Without flags, Claude Code's variables.
        let cli = Cli::try_parse_from(["troupe", "-p", "hi"]).unwrap_or_else(|e| panic!("{e}"));
        let env = |name: &str| match name {
            "MAX_THINKING_TOKENS" => Some("2048".to_string()),
            "CLAUDE_CODE_EFFORT_LEVEL" => Some("medium".to_string()),
            _ => None,
        };
        let r = cli
            .run
            .sdk
            .reasoning(None, env)
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            (r.thinking, r.effort),
            (Thinking::Budget(2048), Some(Effort::Medium))
        );
        let bad = cli
            .run
            .sdk
            .reasoning(None, |_| Some("lots".to_string()))
            .err()
            .map(|e| e.to_string());
        assert!(bad.is_some_and(|e| e.contains("MAX_THINKING_TOKENS")));
    }
}
