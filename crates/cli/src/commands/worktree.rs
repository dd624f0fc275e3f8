//! `troupe worktree list|create|remove|keep`: the workspace's git worktrees from another
//! terminal, with the same rules as the team's worktree tools (removal never loses work unless
//! `--discard`), bindings on the team's board and events in its log.

use crate::args::{WorktreeArgs, WorktreeCommand};
use crate::render::sanitize::{json_line, out, outln};
use anyhow::{Context, Result};
use serde_json::{json, Value};
use std::path::PathBuf;
use troupe_team::worktree::exclude::repo_place;
use troupe_team::worktree::table::{state_text, worktrees_table};
use troupe_team::worktree::{
    Listed, NewWorktree, Removal, WorkState, WorktreeError, WorktreeRecord, Worktrees,
};

/// Runs a worktree subcommand; returns the exit code.
pub async fn run(args: &WorktreeArgs) -> Result<i32> {
    let dir = crate::workspace::root(args.place.cwd.as_deref())?;
    let workspace = dir
        .canonicalize()
        .with_context(|| format!("workspace {} is not accessible", dir.display()))?;
    // Before anything is created: a workspace outside git has no worktrees to manage.
    if repo_place(&workspace)?.is_none() {
        return Err(WorktreeError::NotARepo { workspace }.into());
    }
    let troupe_dir: PathBuf = workspace.join(".troupe");
    let choice = crate::store::choose_for(args.place.store.as_deref(), &workspace)?;
    let team = crate::team_pick::pick(args.place.team.as_deref(), &choice, &troupe_dir)?;
    let existing = crate::store::open_existing(&choice, &troupe_dir, &team)
        .await
        .with_context(|| format!("opening team '{team}'"))?;
    let (store, scratch) = match (existing, &args.command) {
        (Some(store), _) => (store, None),
        // Listing reads git and the worktree index only: no team folder is made for it.
        (None, WorktreeCommand::List) => {
            let scratch =
                std::env::temp_dir().join(format!("troupe-worktree-list-{}", std::process::id()));
            let store = troupe_store::file::open(&scratch, "none")
                .with_context(|| format!("opening a scratch store in {}", scratch.display()))?;
            (store, Some(scratch))
        }
        (None, _) => {
            crate::workspace::before_creating_troupe_dir(&workspace);
            let store = crate::store::open(&choice, &troupe_dir, &team)
                .await
                .with_context(|| format!("opening team '{team}'"))?;
            (store, None)
        }
    };
    let result = run_on(args, &workspace, &troupe_dir, store.as_ref());
    if let Some(scratch) = scratch {
        let _ = std::fs::remove_dir_all(scratch);
    }
    result.await
}

/// Runs the subcommand on `store`'s team.
async fn run_on(
    args: &WorktreeArgs,
    workspace: &std::path::Path,
    troupe_dir: &std::path::Path,
    store: &dyn troupe_store::TeamStore,
) -> Result<i32> {
    let manager = Worktrees::new(workspace, troupe_dir, store);
    let by = format!(
        "user:{}",
        std::env::var("USER").unwrap_or_else(|_| "user".into())
    );
    match &args.command {
        WorktreeCommand::List => {
            let list = manager.list()?;
            if args.json {
                let items: Vec<Value> = list.iter().map(listed_json).collect();
                println!("{}", json_line(&serde_json::to_string_pretty(&items)?));
            } else if list.is_empty() {
                outln!("no worktrees (create one with `troupe worktree create <name> [--task N]`)");
            } else {
                out!("{}", worktrees_table(&list));
            }
        }
        WorktreeCommand::Create { name, task, base } => {
            let record = manager
                .create(&NewWorktree {
                    name,
                    task: *task,
                    base: base.as_deref(),
                    member: None,
                    by: &by,
                })
                .await?;
            if args.json {
                println!("{}", json_line(&serde_json::to_string_pretty(&record)?));
            } else {
                let bound = record
                    .task
                    .map(|id| format!(", bound to task {id}"))
                    .unwrap_or_default();
                outln!(
                    "created worktree {} at {} on branch {} from {}{bound}",
                    record.name,
                    record.path.display(),
                    record.branch,
                    record.base.as_deref().unwrap_or(&record.base_commit)
                );
            }
        }
        WorktreeCommand::Remove { name, discard } => {
            let removal = match discard {
                true => Removal::Discard,
                false => Removal::KeepWork,
            };
            let removed = manager.remove(name, removal, &by).await?;
            if args.json {
                let mut value = record_json(&removed.record);
                value["discarded"] = state_json(&removed.lost);
                println!("{}", json_line(&serde_json::to_string_pretty(&value)?));
            } else if *discard {
                outln!(
                    "removed worktree {} and branch {}, discarding {} (recorded in the team's event log)",
                    removed.record.name,
                    removed.record.branch,
                    state_text(&removed.lost).replace("clean", "nothing")
                );
            } else {
                outln!(
                    "removed worktree {} and branch {} (clean, merged)",
                    removed.record.name,
                    removed.record.branch
                );
            }
        }
        WorktreeCommand::Keep { name } => {
            let record = manager.keep(name, &by).await?;
            if args.json {
                println!("{}", json_line(&serde_json::to_string_pretty(&record)?));
            } else {
                outln!(
                    "kept worktree {} at {} (branch {})",
                    record.name,
                    record.path.display(),
                    record.branch
                );
            }
        }
    }
    Ok(0)
}

fn record_json(record: &WorktreeRecord) -> Value {
    serde_json::to_value(record).unwrap_or(Value::Null)
}

fn state_json(state: &WorkState) -> Value {
    json!({
        "uncommitted": state.uncommitted,
        "unmerged": state.unmerged,
        "missing": state.missing,
    })
}

fn listed_json(listed: &Listed) -> Value {
    let mut value = record_json(&listed.record);
    value["holds"] = state_json(&listed.state);
    value
}
