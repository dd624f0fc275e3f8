//! Permission modes and rules: whether a tool call runs, is asked about, or is refused.
//!
//! The order is fixed: a deny rule beats everything; plan mode then refuses anything that is not
//! read-only (so no allow or ask rule can open the plan gate); an ask rule beats allow rules; an
//! allow rule beats the mode's default.

mod conceal;
mod denial;
mod git_objects;
mod named_paths;
mod path_glob;
mod protected;
mod rules;
mod subject;
#[cfg(test)]
mod tests;

pub use protected::ProtectedPaths;
pub use rules::{rule_name, split_rule_list, Rule, RuleError, Rules};

pub use denial::DenialSource;
use path_glob::CallPath;
use rules::Purpose;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::fmt;
use std::path::Path;
use std::str::FromStr;
use subject::Subject;
use troupe_tools::shell::{self, Analysis, Redirect};
use troupe_tools::{Effect, Sandbox};

/// How much an agent may do without asking, as `--permission-mode` and settings spell it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum PermissionMode {
    /// Ask before edits and commands.
    #[default]
    Default,
    /// File edits run without asking; commands still ask.
    AcceptEdits,
    /// Read-only tools only.
    Plan,
    /// Everything runs without asking; deny rules still apply.
    BypassPermissions,
    /// Claude Code's `dontAsk`: what the rules allow runs, what would be asked about is refused
    /// without asking.
    DontAsk,
    /// Claude Code's `auto`: troupe has no classifier model, so it decides as `acceptEdits`
    /// (edits run, commands not covered by a rule ask).
    Auto,
}

impl PermissionMode {
    /// Every mode, in the order the help text lists them.
    pub const ALL: [PermissionMode; 6] = [
        PermissionMode::Default,
        PermissionMode::AcceptEdits,
        PermissionMode::Plan,
        PermissionMode::BypassPermissions,
        PermissionMode::DontAsk,
        PermissionMode::Auto,
    ];

    /// The mode as written on the command line and in settings.
    pub fn as_str(self) -> &'static str {
        match self {
            PermissionMode::Default => "default",
            PermissionMode::AcceptEdits => "acceptEdits",
            PermissionMode::Plan => "plan",
            PermissionMode::BypassPermissions => "bypassPermissions",
            PermissionMode::DontAsk => "dontAsk",
            PermissionMode::Auto => "auto",
        }
    }

    /// How much the mode lets run without asking, for comparing modes: plan (read-only) lets
    /// the least, then dontAsk (what would be asked is refused), default, acceptEdits and auto
    /// (edits run), bypassPermissions the most.
    fn latitude(self) -> u8 {
        match self {
            PermissionMode::Plan => 0,
            PermissionMode::DontAsk => 1,
            PermissionMode::Default => 2,
            PermissionMode::AcceptEdits | PermissionMode::Auto => 3,
            PermissionMode::BypassPermissions => 4,
        }
    }

    /// This mode, or `asked` when it is stricter: how a mode something asks for itself (an agent
    /// definition's `permissionMode`, a file the model could have written) is honoured only when
    /// it tightens.
    pub fn tightened_by(self, asked: PermissionMode) -> PermissionMode {
        if asked.latitude() < self.latitude() {
            asked
        } else {
            self
        }
    }
}

/// A permission mode name that is not one of the four.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown permission mode `{given}`; expected default, acceptEdits, plan, bypassPermissions, dontAsk or auto"
)]
pub struct ModeError {
    /// What was given.
    pub given: String,
}

impl FromStr for PermissionMode {
    type Err = ModeError;

    fn from_str(text: &str) -> Result<PermissionMode, ModeError> {
        PermissionMode::ALL
            .into_iter()
            .find(|mode| mode.as_str() == text)
            .ok_or_else(|| ModeError { given: text.into() })
    }
}

impl fmt::Display for PermissionMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why a call may run; decides how far its processes are confined.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Grant {
    /// Only because its effect was judged read-only (any mode but bypassPermissions, plan mode
    /// included). The judgement reads shell text, so the OS sandbox must back it: read-only.
    Classified,
    /// An allow rule covers it.
    Rule,
    /// The mode allows it as such (an edit in acceptEdits).
    Mode,
    /// A person (or the lead, for a teammate) approved it when asked.
    Person,
    /// A PreToolUse hook allowed it where the permission mode would have asked.
    Hook,
    /// bypassPermissions.
    Bypass,
}

impl Grant {
    /// The sandbox a call allowed this way runs in.
    pub fn sandbox(self) -> Sandbox {
        match self {
            Grant::Classified => Sandbox::ReadOnly,
            Grant::Rule | Grant::Mode | Grant::Person | Grant::Hook => Sandbox::WorkspaceWrite,
            Grant::Bypass => Sandbox::Unsandboxed,
        }
    }
}

/// What the policy says about one tool call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Run it, for this reason.
    Allow(Grant),
    /// Ask the user (or, for a teammate, the lead) first.
    Ask {
        /// Why, in a sentence the user can act on.
        reason: String,
    },
    /// Refuse it; the reason goes back to the model.
    Deny {
        /// Why, in a sentence the model can act on.
        reason: String,
    },
}

/// The facts about a tool call that permissions decide on.
#[derive(Debug, Clone, Copy)]
pub struct CallInfo<'a> {
    /// The tool's troupe name (`bash`, `write_file`, `mcp__github__create_issue`, …).
    pub tool: &'a str,
    /// What the call does, as the tool judged it from its input.
    pub effect: Effect,
    /// The call's input: `command` for bash, `path` for file tools.
    pub input: &'a Value,
    /// The workspace root that relative paths and path rules are relative to.
    pub workspace_root: &'a Path,
}

/// A permission mode with its rules: the whole permission configuration of one agent.
#[derive(Debug, Clone, Default)]
pub struct Policy {
    /// The mode that decides calls no rule speaks about.
    pub mode: PermissionMode,
    /// The allow, ask and deny rules.
    pub rules: Rules,
    /// Files protected besides the built-in ones (hook scripts named in settings).
    pub protected: ProtectedPaths,
}

/// Why a call got its decision; kept apart from the wording so headless help can say more.
enum Outcome<'r> {
    Allow(Grant),
    DeniedByRule(&'r Rule),
    /// A bash call naming a path a `Read` deny rule covers (second: why, for the message).
    DeniedReadByCommand(&'r Rule, String),
    /// A git command that may print, from git's store, files a `Read` deny rule covers (second:
    /// why, for the message).
    DeniedReadFromGit(&'r Rule, String),
    DeniedByPlanMode,
    AskedByRule(&'r Rule),
    AskedByMode,
    AskedProtected(protected::Hit),
}

impl Policy {
    /// A policy of `mode` and `rules`.
    pub fn new(mode: PermissionMode, rules: Rules) -> Policy {
        Policy {
            mode,
            rules,
            protected: ProtectedPaths::default(),
        }
    }

    /// Decides whether `call` runs, is asked about, or is refused.
    pub fn decide(&self, call: &CallInfo<'_>) -> Decision {
        match self.evaluate(call) {
            Outcome::Allow(grant) => Decision::Allow(grant),
            outcome @ (Outcome::DeniedByRule(_)
            | Outcome::DeniedReadByCommand(..)
            | Outcome::DeniedReadFromGit(..)
            | Outcome::DeniedByPlanMode) => Decision::Deny {
                reason: self.reason(&outcome, call),
            },
            outcome @ (Outcome::AskedByRule(_)
            | Outcome::AskedByMode
            | Outcome::AskedProtected(_)) => match self.mode {
                PermissionMode::DontAsk => Decision::Deny {
                    reason: format!(
                        "{} (dontAsk mode refuses what it would ask about; allow it with a rule)",
                        self.reason(&outcome, call)
                    ),
                },
                _ => Decision::Ask {
                    reason: self.reason(&outcome, call),
                },
            },
        }
    }

    /// Whether a hook's "allow" may stand in for the question the policy asks about `call`:
    /// only when the permission mode asks. An ask rule or a protected file is still asked about
    /// (as in Claude Code, a hook's allow never overrides a deny or ask rule).
    pub fn hook_may_allow(&self, call: &CallInfo<'_>) -> bool {
        matches!(self.evaluate(call), Outcome::AskedByMode)
    }

    /// What a headless run, which has nobody to ask, tells the user about `call`.
    ///
    /// For a call the policy would ask about, this says exactly how to allow it on the next run
    /// (`--allowedTools "Bash(rm:*)"`, `--permission-mode acceptEdits`, or removing an ask rule).
    /// For any other call it is the decision's reason.
    pub fn headless_refusal(&self, call: &CallInfo<'_>) -> String {
        let outcome = self.evaluate(call);
        let reason = self.reason(&outcome, call);
        match (outcome, call.effect) {
            (Outcome::AskedByMode, Effect::Edit) => format!(
                "{reason}. To allow it, re-run with --permission-mode acceptEdits or --allowedTools {}",
                shell_quote(&self.suggested_rules(call))
            ),
            (Outcome::AskedByMode, Effect::Execute | Effect::ReadOnly | Effect::Coordinate) => {
                format!(
                    "{reason}. To allow it, re-run with --allowedTools {}{} or --permission-mode bypassPermissions",
                    shell_quote(&self.suggested_rules(call)),
                    mcp_server_hint(call.tool)
                )
            }
            (Outcome::AskedByRule(rule), _) => format!(
                "{reason}, and a headless run cannot ask. Ask rules win over --allowedTools and every \
                 permission mode: remove `{rule}` from \"permissions.ask\" in the settings to run it unattended"
            ),
            (Outcome::AskedProtected(hit), _) => protected::headless(&reason, &hit),
            (
                Outcome::Allow(_)
                | Outcome::DeniedByRule(_)
                | Outcome::DeniedReadByCommand(..)
                | Outcome::DeniedReadFromGit(..)
                | Outcome::DeniedByPlanMode,
                _,
            ) => reason,
        }
    }

    fn evaluate(&self, call: &CallInfo<'_>) -> Outcome<'_> {
        let tool = rule_name(call.tool);
        let subject = Subject::of(tool, call);
        if let Some(rule) = relevant(&self.rules.deny, tool)
            .into_iter()
            .find(|rule| subject.restricted_by(rule))
        {
            return Outcome::DeniedByRule(rule);
        }
        // edit_file reads the file to find its old string, notebook_edit its cell ids (an
        // oracle): `Read` denials hold.
        if matches!(call.tool, "edit_file" | "notebook_edit") {
            if let Some(rule) = named_paths::read_rules(&self.rules.deny)
                .into_iter()
                .find(|rule| subject.restricted_by(rule))
            {
                return Outcome::DeniedByRule(rule);
            }
        }
        // What `Read` deny rules keep from the file tools, a command cannot read either.
        if let Subject::Command { analysis, .. } = &subject {
            let rules = named_paths::read_rules(&self.rules.deny);
            if let Some((rule, path)) = named_paths::denied(&rules, analysis, call.workspace_root) {
                return Outcome::DeniedReadByCommand(rule, path);
            }
            if let Some((rule, why)) = git_objects::denied(&rules, analysis) {
                return Outcome::DeniedReadFromGit(rule, why);
            }
        }
        let mutates = match call.effect {
            Effect::ReadOnly | Effect::Coordinate => false,
            Effect::Edit | Effect::Execute => true,
        };
        if mutates && self.mode == PermissionMode::Plan {
            return Outcome::DeniedByPlanMode;
        }
        if let Some(rule) = relevant(&self.rules.ask, tool)
            .into_iter()
            .find(|rule| subject.restricted_by(rule))
        {
            return Outcome::AskedByRule(rule);
        }
        // Files that make git or troupe run commands: no mode or path pattern writes them.
        if let Some(hit) = protected::unnamed_write(self, call, tool) {
            return Outcome::AskedProtected(hit);
        }
        let by_rule = || subject.granted_by(&relevant(&self.rules.allow, tool));
        match (self.mode, call.effect) {
            (PermissionMode::BypassPermissions, _) => Outcome::Allow(Grant::Bypass),
            // Plan mode never lets a rule widen what a read-only call may do.
            (PermissionMode::Plan, Effect::ReadOnly | Effect::Coordinate) => {
                Outcome::Allow(Grant::Classified)
            }
            // A read-only call an allow rule also covers runs as the rule allows.
            (
                PermissionMode::Default
                | PermissionMode::AcceptEdits
                | PermissionMode::DontAsk
                | PermissionMode::Auto,
                Effect::ReadOnly | Effect::Coordinate,
            ) => match by_rule() {
                true => Outcome::Allow(Grant::Rule),
                false => Outcome::Allow(Grant::Classified),
            },
            (PermissionMode::AcceptEdits | PermissionMode::Auto, Effect::Edit) => {
                Outcome::Allow(Grant::Mode)
            }
            // Already refused above; listed so the match stays exhaustive.
            (PermissionMode::Plan, Effect::Edit | Effect::Execute) => Outcome::DeniedByPlanMode,
            (PermissionMode::Default | PermissionMode::DontAsk, Effect::Edit | Effect::Execute)
            | (PermissionMode::AcceptEdits | PermissionMode::Auto, Effect::Execute) => {
                match by_rule() {
                    true => Outcome::Allow(Grant::Rule),
                    false => Outcome::AskedByMode,
                }
            }
        }
    }

    fn reason(&self, outcome: &Outcome<'_>, call: &CallInfo<'_>) -> String {
        let tool = call.tool;
        let detail = match call_detail(call) {
            Some(detail) => format!(": {:?}", shorten(detail)),
            None => String::new(),
        };
        match outcome {
            Outcome::Allow(_) => format!("{tool} is allowed{detail}"),
            Outcome::DeniedByRule(rule) => {
                let why = Subject::of(rule_name(tool), call).unanalysed_under(rule);
                format!("{tool} is denied by the permission rule `{rule}`{why}{detail}")
            }
            Outcome::DeniedReadByCommand(rule, why) => format!(
                "{tool} is denied by the permission rule `{rule}`: {why}{detail}. Leave that path \
                 out of the command"
            ),
            Outcome::DeniedReadFromGit(rule, why) => format!(
                "{tool} is denied by the permission rule `{rule}`: git would read files from its \
                 object store, where committed copies of the files the rule covers are kept too, \
                 and {why}{detail}. Names and counts still run (`git log --stat`, \
                 `git diff --name-only`, `git show --stat HEAD`); read files with read_file, which \
                 keeps to the rule"
            ),
            Outcome::DeniedByPlanMode => {
                let what = match call.effect {
                    Effect::Edit => "changes files",
                    Effect::Execute | Effect::ReadOnly | Effect::Coordinate => {
                        "runs a command that may change things"
                    }
                };
                format!(
                    "plan mode allows read-only tools only, and {tool} {what}{detail}. \
                     Finish the plan and have it approved before changing anything"
                )
            }
            Outcome::AskedByRule(rule) => {
                let why = Subject::of(rule_name(tool), call).unanalysed_under(rule);
                format!("{tool} needs permission: the ask rule `{rule}` matches{why}{detail}")
            }
            Outcome::AskedByMode => {
                format!("{tool} needs permission in {} mode{detail}", self.mode)
            }
            Outcome::AskedProtected(hit) => protected::reason(tool, hit),
        }
    }

    /// The allow rules that would let `call` run: one per analysed command not yet allowed.
    fn suggested_rules(&self, call: &CallInfo<'_>) -> String {
        let tool = rule_name(call.tool);
        let analysis = match Subject::of(tool, call) {
            Subject::Command { analysis, .. } => analysis,
            Subject::Host(Some(host)) => return format!("{tool}(domain:{host})"),
            _ => return tool.to_string(),
        };
        if !analysis.is_understood() {
            // Nothing narrower than the whole tool grants a line the analysis cannot follow.
            return "Bash".to_string();
        }
        let allow = relevant(&self.rules.allow, tool);
        let mut suggestions: Vec<String> = Vec::new();
        for command in &analysis.commands {
            if allow
                .iter()
                .any(|rule| rule.matches_command(command, Purpose::Grant))
            {
                continue;
            }
            let suggestion = match command.redirect {
                // A prefix rule never grants a redirection to a file, so only the exact command does.
                Redirect::File => format!("Bash({})", command.line()),
                Redirect::None => format!("Bash({}:*)", command_words(command)),
            };
            if !suggestions.contains(&suggestion) {
                suggestions.push(suggestion);
            }
        }
        match suggestions.is_empty() {
            false => suggestions.join(" "),
            true => "Bash".to_string(),
        }
    }
}

/// The rules of `rules` that are about the tool whose rule name is `tool`.
fn relevant<'r>(rules: &'r [Rule], tool: &str) -> Vec<&'r Rule> {
    rules.iter().filter(|rule| rule.applies_to(tool)).collect()
}

/// The command or path a message should quote for `call`.
fn call_detail<'a>(call: &CallInfo<'a>) -> Option<&'a str> {
    let field = match rule_name(call.tool) {
        "Bash" => "command",
        "Read" | "Edit" | "Glob" | "Grep" => "path",
        "WebFetch" => "url",
        "WebSearch" => "query",
        _ => return None,
    };
    call.input.get(field).and_then(Value::as_str)
}

/// For an MCP tool, the wider rule that allows every tool of its server, as a clause.
fn mcp_server_hint(tool: &str) -> String {
    let Some((server, _)) = tool
        .strip_prefix("mcp__")
        .and_then(|rest| rest.split_once("__"))
    else {
        return String::new();
    };
    format!(" (or --allowedTools mcp__{server} for every tool of the MCP server {server}, or an allow rule in the settings)")
}

/// Cuts long commands (heredocs, scripts) so a reason stays one readable line.
fn shorten(text: &str) -> String {
    const LIMIT: usize = 200;
    match text.char_indices().nth(LIMIT) {
        Some((end, _)) => format!("{}…", &text[..end]),
        None => text.to_string(),
    }
}

/// The program a command runs, with any leading `VAR=value` assignments: `rm` for `rm -rf build`,
/// `FOO=1 cargo` for `FOO=1 cargo test`.
fn command_words(command: &shell::Command) -> String {
    let program = command
        .words
        .first()
        .map(std::slice::from_ref)
        .unwrap_or(&[]);
    shell::Command {
        words: program.to_vec(),
        redirections: Vec::new(),
        ..command.clone()
    }
    .line()
}

/// Quotes a `--allowedTools` value for a POSIX shell, only when it needs it.
fn shell_quote(value: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | ',');
    if !value.is_empty() && value.chars().all(plain) {
        value.to_string()
    } else if !value.contains(['"', '\\', '$', '`']) {
        format!("\"{value}\"")
    } else {
        format!("'{}'", value.replace('\'', r"'\''"))
    }
}
