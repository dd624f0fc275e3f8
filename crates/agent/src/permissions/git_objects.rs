//! `Read` deny rules against git commands that print files from git's own store.
//!
//! The sandbox hides a denied file in the working tree, but a committed copy stays in git's
//! objects (and the index), which git reads whatever the sandbox shows: `git show HEAD`,
//! `git log -p`, `git grep foo HEAD`, `git cat-file -p <blob>` print it without naming it. While
//! any path-specific `Read` deny rule applies, such a command is refused
//! (`troupe_tools::shell::git_reads_objects` says which ones may print contents, failing closed);
//! names and counts (`git status`, `git log --stat`, `git diff --name-only`) still run.

use super::Rule;
use troupe_tools::shell::{git_reads_objects, Analysis};

/// The rule a git command of `analysis` would get around by reading git's store, with why;
/// `None` when no rule applies or no command can print file contents from the store.
pub(super) fn denied<'r>(rules: &[&'r Rule], analysis: &Analysis) -> Option<(&'r Rule, String)> {
    let first = rules.first()?;
    let why = analysis.commands.iter().find_map(git_reads_objects)?;
    Some((*first, why))
}
