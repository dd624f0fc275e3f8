//! Binding an agent's tools to a worktree ([`WorktreeSource`], the team's
//! [`WorkspaceSource`]): a teammate spawned with `isolation: "worktree"` works in its own for
//! its whole life; any other agent works in the worktree of the in-progress task it owns (the
//! lowest id, when it owns several), and back in the main tree once it owns none. The board is
//! read before every model call, off the async workers; opened worktrees are cached.
//!
//! Commits must work under the sandbox: git writes a linked worktree's index and HEAD in the
//! main repository's `.git/worktrees/<name>`, its objects in `.git/objects` and its branch in
//! `.git/refs/heads/wt/` (and the reflog beside it), so those join the writable roots.

use super::git::git;
use super::index::{self, WorktreeRecord};
use super::manage::Worktrees;
use super::WorktreeError;
use crate::shared::TeamShared;
use async_trait::async_trait;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use troupe_agent::{BindingError, WorkspaceBinding, WorkspaceSource};
use troupe_protocol::{Task, TaskStatus};
use troupe_store::{StoreError, TaskFilter};
use troupe_tools::Workspace;

/// A worktree opened for tools.
#[derive(Clone)]
struct Opened {
    record: WorktreeRecord,
    dir: PathBuf,
    workspace: Arc<Workspace>,
    writable_roots: Vec<PathBuf>,
}

/// Where an agent's tools work: its own worktree, or its task's.
pub struct WorktreeSource {
    shared: Arc<TeamShared>,
    agent: String,
    own: Option<String>,
    cache: Mutex<HashMap<String, Opened>>,
}

impl WorktreeSource {
    /// The source for `agent`; `own` names its own worktree when it was spawned with one.
    pub fn new(shared: Arc<TeamShared>, agent: &str, own: Option<String>) -> WorktreeSource {
        WorktreeSource {
            shared,
            agent: agent.to_string(),
            own,
            cache: Mutex::new(HashMap::new()),
        }
    }

    fn cached(&self, name: &str) -> Option<Opened> {
        let cache = self.cache.lock().ok()?;
        cache.get(name).filter(|o| o.dir.is_dir()).cloned()
    }

    /// The worktree the agent entered with create_worktree, while it is still there.
    fn entered(&self) -> Option<String> {
        let entered = self.shared.entered.lock().ok()?;
        entered.get(&self.agent).cloned()
    }

    /// Forgets that the agent entered worktree `name`.
    fn leave(&self, name: &str) {
        if let Ok(mut entered) = self.shared.entered.lock() {
            if entered.get(&self.agent).is_some_and(|n| n == name) {
                entered.remove(&self.agent);
            }
        }
    }

    fn remember(&self, opened: &Opened) {
        if let Ok(mut cache) = self.cache.lock() {
            cache.insert(opened.record.name.clone(), opened.clone());
        }
    }
}

#[async_trait]
impl WorkspaceSource for WorktreeSource {
    async fn binding(&self) -> Result<Option<WorkspaceBinding>, BindingError> {
        if let Some(own) = &self.own {
            let opened = match self.cached(own) {
                Some(o) => o,
                None => {
                    let name = own.clone();
                    let opened = open(&self.shared, &name).map_err(unusable)?;
                    self.remember(&opened);
                    opened
                }
            };
            return Ok(Some(WorkspaceBinding {
                note: own_note(&opened),
                workspace: opened.workspace,
                writable_roots: opened.writable_roots,
            }));
        }
        if let Some(name) = self.entered() {
            let opened = match self.cached(&name) {
                Some(o) => Some(o),
                None => {
                    let opened = open(&self.shared, &name);
                    opened.inspect(|o| self.remember(o)).ok()
                }
            };
            match opened {
                Some(opened) => {
                    return Ok(Some(WorkspaceBinding {
                        note: entered_note(&opened),
                        workspace: opened.workspace,
                        writable_roots: opened.writable_roots,
                    }))
                }
                // Removed from under the session: it is back in the main tree.
                None => self.leave(&name),
            }
        }
        let agent = self.agent.clone();
        let task = bound_task(&self.shared, &agent)
            .await
            .map_err(|e| BindingError::Store(Box::new(e)))?;
        let Some((task, name)) = task else {
            return Ok(None);
        };
        let opened = match self.cached(&name) {
            Some(o) => o,
            None => {
                let n = name.clone();
                let opened = open(&self.shared, &n).map_err(unusable)?;
                self.remember(&opened);
                opened
            }
        };
        Ok(Some(WorkspaceBinding {
            note: task_note(&task, &opened),
            workspace: opened.workspace,
            writable_roots: opened.writable_roots,
        }))
    }
}

fn unusable(e: WorktreeError) -> BindingError {
    BindingError::Unusable(Box::new(e))
}

/// The lowest-id in-progress task `agent` owns that has a worktree, with the worktree's name.
async fn bound_task(
    shared: &TeamShared,
    agent: &str,
) -> Result<Option<(Task, String)>, StoreError> {
    let filter = TaskFilter {
        status: Some(TaskStatus::InProgress),
        owner: Some(agent.to_string()),
    };
    let list = shared.store.list_tasks(&filter).await?;
    Ok(list.tasks.into_iter().find_map(|t| {
        let name = t.worktree.clone()?;
        Some((t, name))
    }))
}

/// Opens the worktree called `name` for tools: its directory, a workspace handle on it and the
/// git directories its commits write.
fn open(shared: &TeamShared, name: &str) -> Result<Opened, WorktreeError> {
    let config = &shared.config;
    let index = index::read(&config.troupe_dir)?;
    let record = index
        .present(name)
        .cloned()
        .ok_or_else(|| WorktreeError::Unknown {
            name: name.to_string(),
            known: index.known(),
        })?;
    let manager = Worktrees::new(&config.workspace, &config.troupe_dir, shared.store.as_ref());
    let dir = manager.tools_dir(&record)?;
    let workspace = Workspace::new(&dir).map_err(|e| WorktreeError::Index {
        path: dir.clone(),
        detail: format!("cannot open the worktree: {e}"),
    })?;
    let writable_roots = git_write_roots(&record.path, &record.branch)?;
    Ok(Opened {
        dir: workspace.root().to_path_buf(),
        workspace: Arc::new(workspace),
        record,
        writable_roots,
    })
}

/// The directories outside a linked worktree that git writes when committing in it: its own
/// metadata (`.git/worktrees/<name>`), the object store, and the directory of its branch and
/// of that branch's reflog.
pub fn git_write_roots(worktree: &Path, branch: &str) -> Result<Vec<PathBuf>, WorktreeError> {
    let answer = git(
        worktree,
        [
            "rev-parse",
            "--path-format=absolute",
            "--git-dir",
            "--git-common-dir",
        ],
    )?;
    let mut lines = answer.lines().map(PathBuf::from);
    let (Some(git_dir), Some(common)) = (lines.next(), lines.next()) else {
        return Ok(Vec::new());
    };
    let branch_dir = Path::new(branch)
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default();
    Ok(vec![
        git_dir,
        common.join("objects"),
        common.join("refs/heads").join(&branch_dir),
        common.join("logs/refs/heads").join(&branch_dir),
    ])
}

fn entered_note(opened: &Opened) -> String {
    format!(
        "Your session works in git worktree '{}' at {} (branch {}): bash runs there and file \
         paths resolve inside it. exit_worktree returns to the main tree.",
        opened.record.name,
        opened.dir.display(),
        opened.record.branch
    )
}

fn own_note(opened: &Opened) -> String {
    format!(
        "Your tools work in your own git worktree '{}' at {} (branch {}).",
        opened.record.name,
        opened.dir.display(),
        opened.record.branch
    )
}

fn task_note(task: &Task, opened: &Opened) -> String {
    format!(
        "You own task {id} ({subject}), which is bound to git worktree '{name}' at {dir} on branch {branch}. \
From now on bash runs there and every file path resolves inside it; the main tree is out of your tools' reach. \
Commit your work there on {branch} (`git add` and `git commit`); the lead merges it.",
        id = task.id,
        subject = task.subject,
        name = opened.record.name,
        dir = opened.dir.display(),
        branch = opened.record.branch,
    )
}
