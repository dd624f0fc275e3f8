//! Tests of the shell analysis: deny rules against every spelling, the read-only table against
//! disguises, and the shape of what the analysis reports.

use super::*;

mod analysis;
mod read_only;
mod spellings;

/// Whether a `Bash(rm:*)` deny rule catches `command`: an `rm` command, or anything unknown.
fn caught_by_rm_rule(command: &str) -> bool {
    let rule = Pattern::new(PatternKind::WordPrefix, "rm");
    let analysis = analyze(command);
    !analysis.is_understood()
        || analysis
            .commands
            .iter()
            .any(|c| rule.matches(c, Purpose::Restrict))
}

/// The analysed commands as lines.
fn lines(command: &str) -> Vec<String> {
    analyze(command)
        .commands
        .iter()
        .map(Command::line)
        .collect()
}
