//! [`Worktrees`]: create, remove, keep and list the git worktrees of one workspace on behalf of
//! one team (whose board the bindings are on and whose event log records every change).
//!
//! Removal never loses work: it refuses while the worktree has uncommitted changes (untracked
//! files included) or commits its base branch lacks, and deletes the branch only if it still
//! points where it was checked (`git update-ref -d <ref> <old>`), so a commit landing meanwhile
//! survives. `discard` is the one explicit way through, and it is recorded.

use super::error::WorktreeError;
use super::exclude::ensure_troupe_excluded;
use super::git::{git, git_ok};
use super::index::{self, Locked, WorktreeRecord, WorktreeStatus};
use super::name::{branch_of, validate_name};
use super::refusal::{base_name, refuse_losing_work};
use serde_json::json;
use std::path::{Path, PathBuf};
use troupe_agent::transcript::now_ms;
use troupe_protocol::{Event, EventKind, TaskId};
use troupe_store::TeamStore;

/// What a manager operation comes to.
type Outcome<T> = Result<T, WorktreeError>;

/// How many files or commits an error or event lists before "and N more".
pub(super) const SHOWN: usize = 8;

/// What `create` needs.
#[derive(Debug, Clone, Copy)]
pub struct NewWorktree<'a> {
    /// The name (directory and `wt/<name>` branch).
    pub name: &'a str,
    /// The task to bind it to.
    pub task: Option<TaskId>,
    /// The branch or commit to start from (`HEAD` when `None`).
    pub base: Option<&'a str>,
    /// The teammate whose own worktree it is for its whole life.
    pub member: Option<&'a str>,
    /// Who asks (an agent, or `user:<name>`).
    pub by: &'a str,
}

/// How `remove` treats work the worktree holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Removal {
    /// Refuse while anything would be lost.
    KeepWork,
    /// Throw away uncommitted changes and unmerged commits (recorded).
    Discard,
}

/// What a worktree holds that its base does not.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WorkState {
    /// Uncommitted changes, as `git status --porcelain` lists them (untracked files included).
    pub uncommitted: Vec<String>,
    /// Commits on its branch that the base lacks, newest first, `<short hash> <subject>`.
    pub unmerged: Vec<String>,
    /// Where its branch points (`None` when the branch is gone).
    pub tip: Option<String>,
    /// True when its directory is missing.
    pub missing: bool,
}

/// A worktree as `list` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listed {
    /// The record.
    pub record: WorktreeRecord,
    /// What it holds now.
    pub state: WorkState,
}

/// A removal that happened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Removed {
    /// The record, now `removed`.
    pub record: WorktreeRecord,
    /// What was thrown away (empty unless discarded).
    pub lost: WorkState,
}

/// Where a workspace sits in its repository.
#[derive(Debug, Clone)]
pub(super) struct Repo {
    /// The main work tree's top level.
    pub(super) toplevel: PathBuf,
    /// The workspace's path below it (`sub/dir/`, empty at the top).
    prefix: String,
}

/// The worktrees of one workspace, managed for one team.
pub struct Worktrees<'a> {
    workspace: &'a Path,
    troupe_dir: &'a Path,
    store: &'a dyn TeamStore,
}

impl<'a> Worktrees<'a> {
    /// The manager for `workspace` (whose `.troupe` is `troupe_dir`), recording on `store`'s team.
    pub fn new(
        workspace: &'a Path,
        troupe_dir: &'a Path,
        store: &'a dyn TeamStore,
    ) -> Worktrees<'a> {
        Worktrees {
            workspace,
            troupe_dir,
            store,
        }
    }

    fn repo(&self) -> Result<Repo, WorktreeError> {
        let answer = git_ok(
            self.workspace,
            ["rev-parse", "--show-toplevel", "--show-prefix"],
        )?;
        let not_repo = || WorktreeError::NotARepo {
            workspace: self.workspace.to_path_buf(),
        };
        let answer = answer.ok_or_else(not_repo)?;
        let mut lines = answer.lines();
        let toplevel = lines
            .next()
            .filter(|l| !l.is_empty())
            .ok_or_else(not_repo)?;
        Ok(Repo {
            toplevel: PathBuf::from(toplevel),
            prefix: lines.next().unwrap_or_default().to_string(),
        })
    }

    /// The directory an agent bound to `record` works in: the worktree, at the same place below
    /// its top as the workspace is below the main tree's.
    pub fn tools_dir(&self, record: &WorktreeRecord) -> Result<PathBuf, WorktreeError> {
        let repo = self.repo()?;
        Ok(record.path.join(repo.prefix))
    }

    /// Creates `.troupe/worktrees/<name>` on a new branch `wt/<name>` from the base (`git
    /// worktree add -b`), binds it to the task, records it in the index and the event log.
    pub async fn create(&self, new: &NewWorktree<'_>) -> Result<WorktreeRecord, WorktreeError> {
        validate_name(new.name, self.workspace)?;
        self.repo()?;
        let mut locked = Locked::open(self.troupe_dir)?;
        if let Some(existing) = locked.index.present(new.name) {
            return Err(WorktreeError::Exists {
                name: new.name.to_string(),
                status: existing.status.as_str(),
                path: existing.path.clone(),
            });
        }
        let path = index::worktrees_dir(self.troupe_dir).join(new.name);
        if path.exists() {
            return Err(WorktreeError::PathTaken { path });
        }
        if let Some(id) = new.task {
            self.check_bindable(id, new.name, &locked).await?;
        }
        let (base, base_commit) = self.resolve_base(new.base)?;
        // `.troupe` exists by now (the index lock is in it): keep it out of `git status`.
        if let Err(e) = ensure_troupe_excluded(self.workspace) {
            tracing::warn!(error = %e, "could not add .troupe/ to the repository's info/exclude");
        }
        let branch = branch_of(new.name);
        let args: [&std::ffi::OsStr; 6] = [
            "worktree".as_ref(),
            "add".as_ref(),
            "-b".as_ref(),
            branch.as_ref(),
            path.as_os_str(),
            base_commit.as_ref(),
        ];
        git(self.workspace, args)?;
        let now = now_ms();
        let record = WorktreeRecord {
            name: new.name.to_string(),
            path: path.clone(),
            branch: branch.clone(),
            base,
            base_commit,
            team: self.store.team().to_string(),
            task: new.task,
            member: new.member.map(str::to_string),
            status: WorktreeStatus::Active,
            created_by: new.by.to_string(),
            created_at: now,
            updated_at: now,
        };
        let saved = match new.task {
            Some(id) => self.bind(id, new.name, now).await,
            None => Ok(()),
        }
        .and_then(|()| {
            locked.index.insert(record.clone());
            locked.save()
        });
        if let Err(e) = saved {
            // Brand new and empty: taking it back loses nothing.
            self.undo_create(&path, &branch);
            return Err(e);
        }
        let bound = match (new.task, new.member) {
            (Some(id), _) => format!(", bound to task {id}"),
            (None, Some(m)) => format!(", {m}'s own"),
            (None, None) => String::new(),
        };
        self.record(
            EventKind::WorktreeCreated,
            new.by,
            format!(
                "worktree {} on {} from {}{bound}",
                record.name,
                record.branch,
                record.base.as_deref().unwrap_or(&record.base_commit)
            ),
            json!({"worktree": record.name, "branch": record.branch, "base": record.base,
                   "base_commit": record.base_commit, "task": record.task, "member": record.member}),
        ).await;
        Ok(record)
    }

    /// The teammate's own worktree (named after it): the one it already has, or a new one.
    pub async fn ensure_member(&self, member: &str, by: &str) -> Outcome<WorktreeRecord> {
        let index = index::read(self.troupe_dir)?;
        if let Some(existing) = index.present(member) {
            if existing.member.as_deref() == Some(member) && existing.path.is_dir() {
                return Ok(existing.clone());
            }
            return Err(WorktreeError::Exists {
                name: member.to_string(),
                status: existing.status.as_str(),
                path: existing.path.clone(),
            });
        }
        self.create(&NewWorktree {
            name: member,
            task: None,
            base: None,
            member: Some(member),
            by,
        })
        .await
    }

    /// Removes the worktree and its branch — only when nothing would be lost, unless `removal`
    /// is [`Removal::Discard`]. Unbinds its task and records the removal.
    pub async fn remove(&self, name: &str, removal: Removal, by: &str) -> Outcome<Removed> {
        let repo = self.repo()?;
        let mut locked = Locked::open(self.troupe_dir)?;
        let Some(record) = locked.index.present(name).cloned() else {
            return Err(self.unknown(name, &locked));
        };
        self.check_not_in_use(&record).await?;
        let state = self.state(&repo, &record)?;
        if removal == Removal::KeepWork {
            refuse_losing_work(&repo, &record, &state)?;
        }
        if state.missing {
            git(self.workspace, ["worktree", "prune"])?;
        } else {
            let path = record.path.as_os_str().to_os_string();
            let mut args: Vec<std::ffi::OsString> = vec!["worktree".into(), "remove".into()];
            if removal == Removal::Discard {
                args.push("--force".into());
            }
            args.push(path);
            git(self.workspace, args)?;
        }
        let now = now_ms();
        let mut moved = None;
        if let Some(tip) = &state.tip {
            // Compare-and-delete: a commit that landed after the check keeps the branch.
            let reference = format!("refs/heads/{}", record.branch);
            if git(self.workspace, ["update-ref", "-d", &reference, tip]).is_err() {
                moved = Some(WorktreeError::BranchMoved {
                    name: name.to_string(),
                    branch: record.branch.clone(),
                });
            }
        }
        if let Some(id) = record.task {
            self.unbind(id, name, now).await;
        }
        let mut removed = record.clone();
        if let Some(latest) = locked.index.latest_mut(name) {
            latest.status = WorktreeStatus::Removed;
            latest.updated_at = now;
            removed = latest.clone();
        }
        locked.save()?;
        let (kind, what) = match removal {
            Removal::Discard => (
                EventKind::WorktreeDiscarded,
                format!(
                    "worktree {name} removed with discard: {} uncommitted file(s) and {} unmerged commit(s) thrown away",
                    state.uncommitted.len(),
                    state.unmerged.len()
                ),
            ),
            Removal::KeepWork => (
                EventKind::WorktreeRemoved,
                format!("worktree {name} removed (clean, merged into {})", base_name(&record)),
            ),
        };
        self.record(
            kind,
            by,
            what,
            json!({"worktree": name, "branch": record.branch, "task": record.task,
                   "discarded_files": state.uncommitted, "discarded_commits": state.unmerged}),
        )
        .await;
        if let Some(e) = moved {
            return Err(e);
        }
        let lost = match removal {
            Removal::Discard => state,
            Removal::KeepWork => WorkState::default(),
        };
        Ok(Removed {
            record: removed,
            lost,
        })
    }

    /// Marks the worktree kept: it stays in place, with its branch, after its work is done.
    pub async fn keep(&self, name: &str, by: &str) -> Result<WorktreeRecord, WorktreeError> {
        self.repo()?;
        let mut locked = Locked::open(self.troupe_dir)?;
        if locked.index.present(name).is_none() {
            return Err(self.unknown(name, &locked));
        }
        let now = now_ms();
        let mut kept = None;
        if let Some(record) = locked.index.latest_mut(name) {
            if record.status != WorktreeStatus::Kept {
                record.status = WorktreeStatus::Kept;
                record.updated_at = now;
            }
            kept = Some(record.clone());
        }
        locked.save()?;
        let Some(kept) = kept else {
            return Err(self.unknown(name, &locked));
        };
        self.record(
            EventKind::WorktreeKept,
            by,
            format!("worktree {name} kept, on {}", kept.branch),
            json!({"worktree": name, "branch": kept.branch, "task": kept.task}),
        )
        .await;
        Ok(kept)
    }

    /// The worktrees on disk (active and kept), with what each holds that its base lacks.
    pub fn list(&self) -> Result<Vec<Listed>, WorktreeError> {
        let repo = self.repo()?;
        let index = index::read(self.troupe_dir)?;
        let mut out = Vec::new();
        for record in index
            .worktrees
            .into_iter()
            .filter(|w| w.status.is_present())
        {
            let state = self.state(&repo, &record)?;
            out.push(Listed { record, state });
        }
        Ok(out)
    }

    /// What the worktree holds that would be lost by removing it.
    fn state(&self, repo: &Repo, record: &WorktreeRecord) -> Result<WorkState, WorktreeError> {
        let missing = !record.path.is_dir();
        let uncommitted = if missing {
            Vec::new()
        } else {
            let status = git(
                &record.path,
                ["status", "--porcelain=v1", "--untracked-files=all"],
            )?;
            status.lines().map(str::to_string).collect()
        };
        let reference = format!("refs/heads/{}", record.branch);
        let tip = git_ok(
            &repo.toplevel,
            ["rev-parse", "--verify", "--quiet", &reference],
        )?;
        let unmerged = match &tip {
            None => Vec::new(),
            Some(tip) => {
                let base_exists = match &record.base {
                    Some(base) => git_ok(
                        &repo.toplevel,
                        [
                            "rev-parse",
                            "--verify",
                            "--quiet",
                            &format!("{base}^{{commit}}"),
                        ],
                    )?
                    .is_some(),
                    None => false,
                };
                let log = match (&record.base, base_exists) {
                    (Some(base), true) => git(
                        &repo.toplevel,
                        ["log", "--format=%h %s", tip, "--not", base],
                    )?,
                    // No base branch (or it was deleted): merged means some other branch has it.
                    _ => git(
                        &repo.toplevel,
                        [
                            "log",
                            "--format=%h %s",
                            tip,
                            "--not",
                            &format!("--exclude={}", record.branch),
                            "--branches",
                        ],
                    )?,
                };
                log.lines().map(str::to_string).collect()
            }
        };
        Ok(WorkState {
            uncommitted,
            unmerged,
            tip,
            missing,
        })
    }

    fn resolve_base(&self, base: Option<&str>) -> Result<(Option<String>, String), WorktreeError> {
        let given = base.filter(|b| *b != "HEAD");
        let spec = given.unwrap_or("HEAD");
        let bad = |detail: &str| WorktreeError::BadBase {
            base: spec.to_string(),
            detail: detail.to_string(),
        };
        if spec.starts_with('-') || spec.is_empty() {
            return Err(bad("a base is a branch or commit name, not an option"));
        }
        let commit = git_ok(
            self.workspace,
            [
                "rev-parse",
                "--verify",
                "--quiet",
                "--end-of-options",
                &format!("{spec}^{{commit}}"),
            ],
        )?
        .ok_or_else(|| match given {
            None => bad("HEAD has no commit yet"),
            Some(_) => bad("no branch or commit of that name"),
        })?;
        let branch = match given {
            None => git_ok(
                self.workspace,
                ["symbolic-ref", "--quiet", "--short", "HEAD"],
            )?,
            Some(b) => {
                let local = format!("refs/heads/{b}");
                let remote = format!("refs/remotes/{b}");
                let is_branch =
                    git_ok(self.workspace, ["rev-parse", "--verify", "--quiet", &local])?.is_some()
                        || git_ok(
                            self.workspace,
                            ["rev-parse", "--verify", "--quiet", &remote],
                        )?
                        .is_some();
                is_branch.then(|| b.to_string())
            }
        };
        Ok((branch, commit))
    }

    async fn check_bindable(&self, id: TaskId, name: &str, locked: &Locked) -> Outcome<()> {
        let task = self.store.get_task(id).await?;
        if task.status.is_terminal() {
            return Err(WorktreeError::TaskUnbindable {
                id,
                reason: format!("it is {} already", task.status),
            });
        }
        match task.worktree.as_deref() {
            Some(other) if other != name && locked.index.present(other).is_some() => {
                Err(WorktreeError::TaskUnbindable {
                    id,
                    reason: format!(
                        "it is bound to worktree '{other}' already (remove that one first)"
                    ),
                })
            }
            _ => Ok(()),
        }
    }

    async fn bind(&self, id: TaskId, name: &str, now: u64) -> Result<(), WorktreeError> {
        self.store
            .update_task(id, &mut |t, _| t.set_worktree(Some(name.to_string()), now))
            .await
            .map(|_| ())
            .map_err(|e| match e {
                troupe_store::StoreError::Task(te) => WorktreeError::task(id, &te),
                other => WorktreeError::Store(other),
            })
    }

    async fn unbind(&self, id: TaskId, name: &str, now: u64) {
        let result = self
            .store
            .update_task(id, &mut |t, _| {
                if t.worktree.as_deref() == Some(name) && !t.status.is_terminal() {
                    t.set_worktree(None, now)
                } else {
                    Ok(())
                }
            })
            .await;
        if let Err(e) = result {
            tracing::warn!(error = %e, task = id, "could not unbind the removed worktree from its task");
        }
    }

    /// Refuses removing a live teammate's own worktree, or one whose task is being worked on.
    async fn check_not_in_use(&self, record: &WorktreeRecord) -> Result<(), WorktreeError> {
        if let Some(member) = &record.member {
            let roster = self.store.roster().await?;
            if let Some(m) = roster.get(member).filter(|m| !m.status.is_ended()) {
                return Err(WorktreeError::InUse {
                    name: record.name.clone(),
                    member: member.clone(),
                    status: m.status.as_str(),
                });
            }
        }
        if let Some(id) = record.task {
            if let Ok(task) = self.store.get_task(id).await {
                let working = task.status == troupe_protocol::TaskStatus::InProgress
                    && task.worktree.as_deref() == Some(&record.name);
                if let (true, Some(owner)) = (working, task.owner) {
                    // The owner's own status: an idle teammate holding the task is not "working".
                    let status = self
                        .store
                        .roster()
                        .await
                        .ok()
                        .and_then(|r| r.get(&owner).map(|m| m.status.as_str().to_string()))
                        .unwrap_or_else(|| "not on the roster".to_string());
                    return Err(WorktreeError::TaskInProgress {
                        name: record.name.clone(),
                        task: id,
                        owner,
                        status,
                    });
                }
            }
        }
        Ok(())
    }

    fn undo_create(&self, path: &Path, branch: &str) {
        let args: [&std::ffi::OsStr; 4] = [
            "worktree".as_ref(),
            "remove".as_ref(),
            "--force".as_ref(),
            path.as_os_str(),
        ];
        let removed = git(self.workspace, args);
        let deleted = git(self.workspace, ["branch", "-D", branch]);
        if let Err(e) = removed.and(deleted) {
            tracing::warn!(error = %e, "could not take back a worktree that failed to register");
        }
    }

    fn unknown(&self, name: &str, locked: &Locked) -> WorktreeError {
        WorktreeError::Unknown {
            name: name.to_string(),
            known: locked.index.known(),
        }
    }

    async fn record(&self, kind: EventKind, by: &str, detail: String, data: serde_json::Value) {
        let event = Event::new(kind, Some(by), detail, now_ms()).with_data(data);
        if let Err(e) = self.store.record(&event).await {
            tracing::warn!(error = %e, "could not record a worktree event");
        }
    }
}
