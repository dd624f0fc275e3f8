//! What a call is judged on: the analysed commands of a bash call, or the path of a file tool.

use super::*;

/// What a call is judged on: the analysed commands of a bash call, or the path of a file tool.
pub(super) enum Subject {
    Command {
        /// The command line as written.
        whole: String,
        analysis: Analysis,
    },
    /// The path as named, and (when it differs) where it really leads, symlinks followed.
    Path(Option<CallPath>, Option<CallPath>),
    /// The host a WebFetch call fetches (`None`: the URL names none).
    Host(Option<String>),
    Opaque,
}

impl Subject {
    pub(super) fn of(tool: &str, call: &CallInfo<'_>) -> Subject {
        let field = |name: &str| call.input.get(name).and_then(Value::as_str);
        match tool {
            "Bash" => {
                let command = field("command").unwrap_or("").trim();
                Subject::Command {
                    whole: command.to_string(),
                    analysis: shell::analyze(command),
                }
            }
            // Glob and grep search the workspace root when no path is given.
            "Glob" | "Grep" | "Read" | "Edit" => {
                let raw = match tool {
                    "Glob" | "Grep" => Some(field("path").unwrap_or(".")),
                    _ => field("path"),
                };
                Subject::Path(
                    raw.map(|raw| CallPath::resolve(raw, call.workspace_root)),
                    raw.and_then(|raw| CallPath::resolve_real(raw, call.workspace_root)),
                )
            }
            "WebFetch" => Subject::Host(field("url").and_then(troupe_tools::web_client::host_of)),
            _ => Subject::Opaque,
        }
    }

    /// Whether a deny or ask rule (already known to be about this tool) matches: any command will
    /// do, and a line the analysis could not follow matches every rule, since it might run
    /// exactly what the rule names.
    pub(super) fn restricted_by(&self, rule: &Rule) -> bool {
        match self {
            Subject::Command { whole, analysis } => {
                !analysis.is_understood()
                    || rule.matches_command_text(whole)
                    || analysis
                        .commands
                        .iter()
                        .any(|command| rule.matches_command(command, Purpose::Restrict))
            }
            // A symlink into a denied tree is denied as the tree is.
            Subject::Path(Some(path), real) => {
                rule.matches_path(path) || real.as_ref().is_some_and(|real| rule.matches_path(real))
            }
            Subject::Host(Some(host)) => rule.matches_host(host),
            Subject::Path(None, _) | Subject::Host(None) | Subject::Opaque => rule.is_tool_wide(),
        }
    }

    /// When `rule` restricts this call only because the analysis could not follow the command,
    /// the words saying so (to go after the rule in a message); empty otherwise.
    pub(super) fn unanalysed_under(&self, rule: &Rule) -> String {
        let Subject::Command { whole, analysis } = self else {
            return String::new();
        };
        let named = rule.matches_command_text(whole)
            || analysis
                .commands
                .iter()
                .any(|command| rule.matches_command(command, Purpose::Restrict));
        match named || analysis.is_understood() {
            true => String::new(),
            false => format!(
                ", because the command could not be analysed and might run what the rule names ({})",
                analysis.unknown_reasons()
            ),
        }
    }

    /// Whether allow rules (already known to be about this tool) cover the call: every command
    /// must be, and a line the analysis could not follow is granted only by a tool-wide rule.
    pub(super) fn granted_by(&self, allow: &[&Rule]) -> bool {
        if allow.iter().any(|rule| rule.is_tool_wide()) {
            return true;
        }
        match self {
            Subject::Command { analysis, .. } => {
                analysis.is_understood()
                    && !analysis.commands.is_empty()
                    && analysis.commands.iter().all(|command| {
                        allow
                            .iter()
                            .any(|rule| rule.matches_command(command, Purpose::Grant))
                    })
            }
            Subject::Path(Some(path), _) => allow.iter().any(|rule| rule.matches_path(path)),
            Subject::Host(Some(host)) => allow.iter().any(|rule| rule.matches_host(host)),
            Subject::Path(None, _) | Subject::Host(None) | Subject::Opaque => false,
        }
    }
}
