//! Permission rules (`Tool` or `Tool(specifier)`) as written in settings and on the command line.

use super::path_glob::{CallPath, PathPattern};
use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;
use troupe_tools::shell::{Command, Pattern, PatternKind};

pub(super) use troupe_tools::shell::Purpose;

/// Why a rule could not be parsed; every variant names the rule as written.
#[derive(Debug, thiserror::Error)]
pub enum RuleError {
    /// The tool name is missing, as in `(ls)`.
    #[error("permission rule `{rule}` has no tool name")]
    EmptyToolName {
        /// The rule as written.
        rule: String,
    },
    /// The tool name holds characters no tool name has.
    #[error("permission rule `{rule}`: `{name}` is not a tool name")]
    InvalidToolName {
        /// The rule as written.
        rule: String,
        /// The offending name.
        name: String,
    },
    /// A `(` without the closing `)` at the end, as in `Bash(foo`.
    #[error("permission rule `{rule}` opens `(` but does not end with `)`")]
    UnclosedParen {
        /// The rule as written.
        rule: String,
    },
    /// `()` with nothing inside.
    #[error("permission rule `{rule}` has an empty specifier; write `{tool}` to match every call")]
    EmptySpecifier {
        /// The rule as written.
        rule: String,
        /// The tool name, for the suggestion.
        tool: String,
    },
    /// `:*` somewhere other than the end of a Bash specifier.
    #[error(
        "permission rule `{rule}`: `:*` may only end the specifier, as in `Bash(npm run test:*)`"
    )]
    MisplacedWildcard {
        /// The rule as written.
        rule: String,
    },
    /// A specifier on an MCP tool, which takes none.
    #[error("permission rule `{rule}`: MCP tool rules take no specifier")]
    McpSpecifier {
        /// The rule as written.
        rule: String,
    },
    /// A path specifier that is not a valid glob.
    #[error("permission rule `{rule}` has an invalid path glob: {source}")]
    BadGlob {
        /// The rule as written.
        rule: String,
        /// What globset objected to.
        source: globset::Error,
    },
}

/// Maps a troupe tool name to the name rules use (`bash` → `Bash`, `write_file` → `Edit`, …).
///
/// Names that are already rule names, MCP tools and unknown tools come back unchanged; Claude
/// Code's `Write`, `MultiEdit` and `NotebookEdit` map to `Edit` so its settings carry over, and
/// `Edit(...)` rules cover notebook edits as Claude Code's do.
pub fn rule_name(tool: &str) -> &str {
    match tool {
        "bash" => "Bash",
        "read_file" => "Read",
        "write_file" | "edit_file" | "notebook_edit" | "Write" | "MultiEdit" | "NotebookEdit" => {
            "Edit"
        }
        "glob" => "Glob",
        "grep" => "Grep",
        "web_fetch" => "WebFetch",
        "web_search" => "WebSearch",
        other => other,
    }
}

/// Which tools a rule is about.
#[derive(Debug, Clone, PartialEq, Eq)]
enum ToolPattern {
    /// One tool, by its rule name.
    Named(String),
    /// Every tool of one MCP server (`mcp__server__*` or `mcp__server`); holds `mcp__server__`.
    McpServer(String),
}

/// What a rule's parentheses say.
#[derive(Debug, Clone)]
enum Specifier {
    /// No parentheses (or `(*)`): every call of the tool.
    Any,
    /// A Bash command pattern.
    Bash(Pattern),
    /// A path glob for file tools.
    Path(PathPattern),
    /// `WebFetch(domain:example.com)`: the host fetched (`*.example.com`: any host under it).
    Domain(String),
    /// A specifier for a tool troupe cannot interpret (`WebSearch(…)`); matches nothing.
    Unsupported,
}

/// One permission rule, such as `Bash(npm run test:*)`, `Edit(src/**)` or `mcp__github__*`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Rule {
    text: String,
    tool: ToolPattern,
    specifier: Specifier,
}

impl Rule {
    /// Parses one rule; a malformed rule is an error naming it.
    pub fn parse(text: &str) -> Result<Rule, RuleError> {
        let text = text.trim();
        let (name, spec) = match text.find('(') {
            None => (text, None),
            Some(open) => match text[open + 1..].strip_suffix(')') {
                Some(spec) => (&text[..open], Some(spec)),
                None => return Err(RuleError::UnclosedParen { rule: text.into() }),
            },
        };
        let tool = parse_tool(text, name.trim())?;
        let specifier = match (spec.map(str::trim), &tool) {
            (None, _) | (Some("*"), ToolPattern::Named(_)) => Specifier::Any,
            (Some(""), _) => {
                return Err(RuleError::EmptySpecifier {
                    rule: text.into(),
                    tool: name.trim().into(),
                })
            }
            (Some(_), ToolPattern::McpServer(_)) => {
                return Err(RuleError::McpSpecifier { rule: text.into() })
            }
            (Some(_), ToolPattern::Named(named)) if named.starts_with("mcp__") => {
                return Err(RuleError::McpSpecifier { rule: text.into() })
            }
            (Some(spec), ToolPattern::Named(named)) => match named.as_str() {
                "Bash" => Specifier::Bash(parse_bash(text, spec)?),
                "Read" | "Edit" | "Glob" | "Grep" => {
                    Specifier::Path(PathPattern::parse(spec).map_err(|source| {
                        RuleError::BadGlob {
                            rule: text.into(),
                            source,
                        }
                    })?)
                }
                "WebFetch" => match spec.strip_prefix("domain:").map(str::trim) {
                    Some(domain) if !domain.is_empty() => Specifier::Domain(domain.to_string()),
                    _ => Specifier::Unsupported,
                },
                _ => Specifier::Unsupported,
            },
        };
        Ok(Rule {
            text: text.into(),
            tool,
            specifier,
        })
    }

    /// The rule as written (trimmed).
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// Whether this rule is about the tool whose rule name is `tool` (see [`rule_name`]).
    ///
    /// `Read` rules also cover `Glob` and `Grep`, which read files too, so a denied path stays
    /// unread whichever tool asks.
    pub fn applies_to(&self, tool: &str) -> bool {
        match &self.tool {
            ToolPattern::Named(name) => {
                name == tool || (name == "Read" && matches!(tool, "Glob" | "Grep"))
            }
            ToolPattern::McpServer(prefix) => tool.starts_with(prefix.as_str()),
        }
    }

    /// The MCP server a rule is about (`time` for `mcp__time`, `mcp__time__*` and
    /// `mcp__time__now`), so a rule naming a server nobody configured can be reported.
    pub fn mcp_server(&self) -> Option<&str> {
        let name = match &self.tool {
            ToolPattern::Named(name) => name.as_str(),
            ToolPattern::McpServer(prefix) => prefix.as_str(),
        };
        let rest = name.strip_prefix("mcp__")?;
        Some(rest.split_once("__").map_or(rest, |(server, _)| server))
    }

    /// Whether the rule covers every call of its tools, whatever the input.
    pub fn is_tool_wide(&self) -> bool {
        matches!(self.specifier, Specifier::Any)
    }

    /// Whether the rule matches one analysed command of a Bash call.
    pub(super) fn matches_command(&self, command: &Command, purpose: Purpose) -> bool {
        match &self.specifier {
            Specifier::Any => true,
            Specifier::Bash(pattern) => pattern.matches(command, purpose),
            Specifier::Path(_) | Specifier::Domain(_) | Specifier::Unsupported => false,
        }
    }

    /// Whether the rule matches a Bash command line as written, whole (to restrict only).
    pub(super) fn matches_command_text(&self, text: &str) -> bool {
        match &self.specifier {
            Specifier::Any => true,
            Specifier::Bash(pattern) => pattern.matches_text(text),
            Specifier::Path(_) | Specifier::Domain(_) | Specifier::Unsupported => false,
        }
    }

    /// The directory every path a path rule covers lies under (see `PathPattern::base`).
    pub(super) fn path_base(&self, root: &std::path::Path) -> Option<std::path::PathBuf> {
        match &self.specifier {
            Specifier::Path(pattern) => Some(pattern.base(root)),
            Specifier::Any | Specifier::Bash(_) | Specifier::Domain(_) | Specifier::Unsupported => {
                None
            }
        }
    }

    /// Whether the rule matches the path of a file tool call.
    pub(super) fn matches_path(&self, path: &CallPath) -> bool {
        match &self.specifier {
            Specifier::Any => true,
            Specifier::Path(pattern) => pattern.matches(path),
            Specifier::Bash(_) | Specifier::Domain(_) | Specifier::Unsupported => false,
        }
    }

    /// Whether the rule matches the host a WebFetch call fetches.
    pub(super) fn matches_host(&self, host: &str) -> bool {
        match &self.specifier {
            Specifier::Any => true,
            Specifier::Domain(domain) => troupe_tools::web_client::host_within(host, domain),
            Specifier::Bash(_) | Specifier::Path(_) | Specifier::Unsupported => false,
        }
    }

    /// Whether the rule names paths (`Read(./secrets/**)`), not the whole tool.
    pub(super) fn is_path_scoped(&self) -> bool {
        matches!(self.specifier, Specifier::Path(_))
    }
}

fn parse_tool(rule: &str, name: &str) -> Result<ToolPattern, RuleError> {
    if name.is_empty() {
        return Err(RuleError::EmptyToolName { rule: rule.into() });
    }
    let invalid = || RuleError::InvalidToolName {
        rule: rule.into(),
        name: name.into(),
    };
    let body = name.strip_suffix('*').unwrap_or(name);
    if !body
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        return Err(invalid());
    }
    let Some(server_and_tool) = name.strip_prefix("mcp__") else {
        return match body.len() == name.len() {
            true => Ok(ToolPattern::Named(rule_name(name).to_string())),
            false => Err(invalid()),
        };
    };
    match server_and_tool.split_once("__") {
        // `mcp__server__*`: every tool of the server.
        Some((server, "*")) if !server.is_empty() => {
            Ok(ToolPattern::McpServer(format!("mcp__{server}__")))
        }
        Some((server, tool)) if !server.is_empty() && !tool.is_empty() && !tool.contains('*') => {
            Ok(ToolPattern::Named(name.to_string()))
        }
        // `mcp__server`: Claude Code's spelling for every tool of the server.
        None if !server_and_tool.is_empty() && !server_and_tool.contains('*') => {
            Ok(ToolPattern::McpServer(format!("mcp__{server_and_tool}__")))
        }
        _ => Err(invalid()),
    }
}

fn parse_bash(rule: &str, spec: &str) -> Result<Pattern, RuleError> {
    let misplaced = || RuleError::MisplacedWildcard { rule: rule.into() };
    let empty = || RuleError::EmptySpecifier {
        rule: rule.into(),
        tool: "Bash".into(),
    };
    let word_prefix = spec
        .strip_suffix(":*")
        .or_else(|| spec.strip_suffix(" *"))
        .map(str::trim_end);
    let (kind, text) = match word_prefix {
        Some(prefix) => (PatternKind::WordPrefix, prefix),
        None => match spec.strip_suffix('*') {
            Some(prefix) => (PatternKind::TextPrefix, prefix),
            None => (PatternKind::Exact, spec),
        },
    };
    if text.contains(":*") {
        return Err(misplaced());
    }
    if text.is_empty() && kind != PatternKind::Exact {
        return Err(empty());
    }
    Ok(Pattern::new(kind, text))
}

impl FromStr for Rule {
    type Err = RuleError;

    fn from_str(text: &str) -> Result<Rule, RuleError> {
        Rule::parse(text)
    }
}

impl TryFrom<String> for Rule {
    type Error = RuleError;

    fn try_from(text: String) -> Result<Rule, RuleError> {
        Rule::parse(&text)
    }
}

impl From<Rule> for String {
    fn from(rule: Rule) -> String {
        rule.text
    }
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// The three rule lists of a settings `permissions` block (plus `--allowedTools` and friends).
#[derive(Debug, Clone, Default)]
pub struct Rules {
    /// Calls these match run without asking (unless a deny or ask rule matches too).
    pub allow: Vec<Rule>,
    /// Calls these match are asked about even when an allow rule or the mode would allow them.
    pub ask: Vec<Rule>,
    /// Calls these match are refused, in every mode.
    pub deny: Vec<Rule>,
}

impl Rules {
    /// Parses the three lists; the first malformed rule is the error.
    pub fn parse(allow: &[String], ask: &[String], deny: &[String]) -> Result<Rules, RuleError> {
        let parse_all = |texts: &[String]| -> Result<Vec<Rule>, RuleError> {
            texts.iter().map(|text| Rule::parse(text)).collect()
        };
        Ok(Rules {
            allow: parse_all(allow)?,
            ask: parse_all(ask)?,
            deny: parse_all(deny)?,
        })
    }

    /// Adds another source's rules (a later settings file, the command line) to these.
    pub fn extend(&mut self, other: Rules) {
        self.allow.extend(other.allow);
        self.ask.extend(other.ask);
        self.deny.extend(other.deny);
    }
}

/// Splits one `--allowedTools` value into rules at commas and spaces outside parentheses.
///
/// `"Bash(git diff:*) Edit,Read"` gives `["Bash(git diff:*)", "Edit", "Read"]`.
pub fn split_rule_list(list: &str) -> Vec<String> {
    let mut rules = Vec::new();
    let mut current = String::new();
    let mut depth = 0usize;
    for c in list.chars() {
        match c {
            ',' | ' ' | '\t' | '\n' if depth == 0 => {
                if !current.is_empty() {
                    rules.push(std::mem::take(&mut current));
                }
            }
            _ => {
                match c {
                    '(' => depth += 1,
                    ')' => depth = depth.saturating_sub(1),
                    _ => {}
                }
                current.push(c);
            }
        }
    }
    if !current.is_empty() {
        rules.push(current);
    }
    rules
}
