//! What removing a worktree would lose, said as a refusal that tells how to keep or merge.

use super::error::{UnmergedWork, WorktreeError};
use super::git::git_ok;
use super::index::WorktreeRecord;
use super::manage::{Repo, WorkState, SHOWN};

pub(super) fn base_name(record: &WorktreeRecord) -> String {
    record
        .base
        .clone()
        .unwrap_or_else(|| "another branch".to_string())
}

/// The refusal when removing would lose something.
pub(super) fn refuse_losing_work(
    repo: &Repo,
    record: &WorktreeRecord,
    state: &WorkState,
) -> Result<(), WorktreeError> {
    if !state.uncommitted.is_empty() {
        return Err(WorktreeError::Uncommitted {
            name: record.name.clone(),
            path: record.path.clone(),
            files: shown(&state.uncommitted),
        });
    }
    if !state.unmerged.is_empty() {
        let top = repo.toplevel.display().to_string();
        let merge = match &record.base {
            Some(base) => {
                let current = git_ok(
                    &repo.toplevel,
                    ["symbolic-ref", "--quiet", "--short", "HEAD"],
                )
                .ok()
                .flatten();
                if current.as_deref() == Some(base.as_str()) {
                    format!("git -C '{top}' merge {}", record.branch)
                } else {
                    format!(
                        "git -C '{top}' checkout {base} && git -C '{top}' merge {}",
                        record.branch
                    )
                }
            }
            None => format!(
                "git -C '{top}' merge {} (on the branch it belongs to)",
                record.branch
            ),
        };
        return Err(WorktreeError::Unmerged(Box::new(UnmergedWork {
            name: record.name.clone(),
            branch: record.branch.clone(),
            base: base_name(record),
            count: state.unmerged.len(),
            commits: shown(&state.unmerged),
            merge,
        })));
    }
    Ok(())
}

/// The first few lines joined, with "and N more".
fn shown(lines: &[String]) -> String {
    let mut text: Vec<String> = lines
        .iter()
        .take(SHOWN)
        .map(|l| l.trim().to_string())
        .collect();
    if lines.len() > SHOWN {
        text.push(format!("and {} more", lines.len() - SHOWN));
    }
    text.join(", ")
}
