//! Hook matchers as Claude Code reads them, over tool names in both spellings: `Bash` and
//! `bash` both name troupe's bash tool.

use regex::Regex;

pub use troupe_protocol::claude_names::claude_name;

/// Which tools (or occasions) a hook entry applies to.
#[derive(Debug, Clone)]
pub enum Matcher {
    /// Absent, `""` or `"*"`: everything.
    All,
    /// Letters, digits, `_` and `|` only: one of these names exactly.
    Names(Vec<String>),
    /// Anything else: a regular expression found anywhere in the name.
    Pattern(Regex),
}

impl Matcher {
    /// Reads a matcher as Claude Code does.
    pub fn new(pattern: Option<&str>) -> Result<Matcher, regex::Error> {
        let pattern = pattern.map(str::trim).unwrap_or("");
        if pattern.is_empty() || pattern == "*" {
            return Ok(Matcher::All);
        }
        let simple = pattern
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '|');
        match simple {
            true => Ok(Matcher::Names(
                pattern
                    .split('|')
                    .filter(|n| !n.is_empty())
                    .map(str::to_string)
                    .collect(),
            )),
            false => Regex::new(pattern).map(Matcher::Pattern),
        }
    }

    /// Whether `subject` (an occasion, or a name as given) matches.
    pub fn matches(&self, subject: &str) -> bool {
        match self {
            Matcher::All => true,
            Matcher::Names(names) => names.iter().any(|n| n == subject),
            Matcher::Pattern(regex) => regex.is_match(subject),
        }
    }

    /// Whether troupe's tool `name` matches, by its own name or Claude Code's.
    pub fn matches_tool(&self, name: &str) -> bool {
        self.matches(name) || claude_name(name).is_some_and(|claude| self.matches(claude))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(pattern: &str) -> Matcher {
        Matcher::new(Some(pattern)).unwrap_or_else(|e| panic!("{pattern}: {e}"))
    }

    #[test]
    fn claude_names_and_troupe_names_both_match() {
        assert!(m("Bash").matches_tool("bash"));
        assert!(m("bash").matches_tool("bash"));
        assert!(m("Edit|Write").matches_tool("write_file"));
        assert!(m("Edit|Write").matches_tool("edit_file"));
        assert!(!m("Edit|Write").matches_tool("read_file"));
        assert!(m("Read").matches_tool("read_file"));
        assert!(!m("Bash").matches_tool("glob"));
    }

    #[test]
    fn simple_names_are_exact_and_the_rest_is_a_regex() {
        assert!(!m("Edit").matches("NotebookEdit"), "a plain name is exact");
        assert!(m("Notebook.*").matches("NotebookEdit"));
        assert!(m("mcp__github__.*").matches_tool("mcp__github__create_issue"));
        assert!(!m("mcp__github__.*").matches_tool("mcp__jira__create_issue"));
        assert!(m("^Bash$").matches_tool("bash"));
        assert!(!m("^Bash$").matches_tool("grep"));
    }

    #[test]
    fn empty_and_star_match_everything() {
        for pattern in [None, Some(""), Some("*"), Some("  ")] {
            let all = Matcher::new(pattern).unwrap_or_else(|e| panic!("{e}"));
            assert!(all.matches_tool("anything"));
            assert!(all.matches("startup"));
        }
        assert!(Matcher::new(Some("Bash(")).is_err());
    }
}
