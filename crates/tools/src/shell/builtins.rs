//! Builtins and variables through which a command line runs code the analysis cannot see:
//! `eval` and friends, `declare -i`, array subscripts (evaluated as arithmetic), and
//! assignments to variables that other programs run (`BASH_ENV`, `GIT_PAGER`…).

use super::words::{self, Expanded};
use super::{wrappers, UnknownReason, Word};

/// Builtins that run text as code or change which program a name runs.
const RUNS_TEXT: &[&str] = &[
    "eval", "source", ".", "trap", "alias", "fc", "enable", "complete", "compgen", "bind", "let",
];

/// Builtins whose arguments can name array elements, whose subscripts are evaluated as code.
#[rustfmt::skip]
const NAMES_VARIABLES: &[&str] = &[
    "read", "unset", "printf", "declare", "typeset", "local", "export", "readonly", "test", "[",
    "wait", "getopts", "mapfile", "readarray",
];

/// Builtins that declare variables (and with `-i` or `-n` make later assignments run code).
const DECLARES: &[&str] = &["declare", "typeset", "local", "export", "readonly"];

/// Variables whose value other programs run as code or use to find code.
#[rustfmt::skip]
const SENSITIVE: &[&str] = &[
    "BASH_ENV", "ENV", "PS4", "PROMPT_COMMAND", "SHELLOPTS", "BASHOPTS", "GIT_EXTERNAL_DIFF",
    "GIT_PAGER", "PAGER", "GIT_EDITOR", "EDITOR", "VISUAL", "GIT_SSH", "GIT_SSH_COMMAND",
    "GIT_ASKPASS", "SSH_ASKPASS", "GIT_EXEC_PATH", "GIT_CONFIG_PARAMETERS", "LD_PRELOAD",
    "LD_AUDIT", "LD_LIBRARY_PATH",
];

/// Variable name prefixes that are sensitive the same way.
const SENSITIVE_PREFIXES: &[&str] = &["BASH_FUNC_", "GIT_CONFIG_"];

/// Why assigning `assignment` (`NAME=value`) makes the line unknown, if it does.
pub(super) fn assignment_risk(assignment: &Word) -> Option<UnknownReason> {
    let name = assignment
        .text
        .split(['=', '[', '+'])
        .next()
        .unwrap_or_default();
    let sensitive =
        SENSITIVE.contains(&name) || SENSITIVE_PREFIXES.iter().any(|p| name.starts_with(p));
    sensitive.then(|| UnknownReason::SensitiveVariable(name.to_string()))
}

/// Why the builtin `name` run with `args` makes the line unknown (nothing for other programs).
pub(super) fn risks(name: &str, args: &[Word]) -> Vec<UnknownReason> {
    let mut reasons = Vec::new();
    if RUNS_TEXT.contains(&name)
        || (name == "hash" && args.iter().any(|a| a.text.starts_with("-p")))
        || (matches!(name, "mapfile" | "readarray")
            && args.iter().any(|a| a.text.starts_with("-C")))
    {
        reasons.push(UnknownReason::RunsText(name.to_string()));
    }
    if DECLARES.contains(&name) {
        let mut options = args.iter().filter(|a| a.text.starts_with(['-', '+']));
        if options.any(|a| a.text.contains(['i', 'n'])) {
            reasons.push(UnknownReason::Expansion(format!(
                "`{name} -i`/`-n` makes later assignments evaluate code that"
            )));
        }
        reasons.extend(
            args.iter()
                .filter(|a| wrappers::is_assignment(a))
                .filter_map(assignment_risk),
        );
    }
    if NAMES_VARIABLES.contains(&name) {
        reasons.extend(args.iter().filter_map(subscript_risk));
    }
    reasons
}

/// `name[index]` in a word taken as a variable name: the index is arithmetic, which runs
/// commands unless it is a plain number.
pub(super) fn subscript_risk(word: &Word) -> Option<UnknownReason> {
    let (name, rest) = word.text.split_once('[')?;
    let is_name = !name.is_empty()
        && !name.starts_with(|c: char| c.is_ascii_digit())
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if !is_name {
        return None;
    }
    let index = rest.split(']').next().unwrap_or_default();
    let mut expanded = Expanded::default();
    words::subscript(&mut expanded, index);
    expanded.risks.pop().map(UnknownReason::Expansion)
}
