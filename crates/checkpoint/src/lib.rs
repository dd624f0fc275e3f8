//! Checkpoints for `/rewind`: each file a tool changes is saved, as it was before the prompt's
//! first change to it, in the session's own store beside its transcript ([`store`]). The
//! lead's lifecycle hooks see every call: `edit_file`, `write_file` and `notebook_edit` name
//! their file; a bash call is bracketed by `git status` ([`git_snap`]). Only the REPL's lead
//! installs it, so a headless run pays nothing; a call that changes nothing writes nothing.

pub mod git_snap;
pub mod store;

use async_trait::async_trait;
use git_snap::Snapshot;
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use store::Store;
use troupe_agent::{
    BeforeTool, Extension, ExtensionContext, LifecycleHooks, ToolCall, Verdict, WorkspaceSource,
};
use troupe_tools::{ToolOutput, Workspace};

/// The tools that change one file named by their `path`.
const FILE_TOOLS: [&str; 3] = ["edit_file", "write_file", "notebook_edit"];

/// Installs the checkpoint hooks on the lead; [`CheckpointExtension::for_subagents`] gives its
/// subagents hooks that save into the lead's checkpoints (their changes are the prompt's).
pub struct CheckpointExtension {
    /// The lead's hooks for its session now (rebuilt by `/clear` and `/resume`).
    lead: Arc<Mutex<Option<Arc<Checkpoints>>>>,
    /// Whether this is the subagents' side.
    follower: bool,
    /// Whether files are saved (settings `fileCheckpointingEnabled`); without, only the
    /// prompts are recorded, for rewinding the conversation.
    files: bool,
    /// Where the lead's tools work when not in its workspace (a task's worktree).
    source: Option<Arc<dyn WorkspaceSource>>,
}

impl CheckpointExtension {
    /// The lead's extension; `files`: whether files are saved; `source`: where the lead's tools
    /// work, when it may move them.
    pub fn new(files: bool, source: Option<Arc<dyn WorkspaceSource>>) -> CheckpointExtension {
        CheckpointExtension {
            lead: Arc::default(),
            follower: false,
            files,
            source,
        }
    }

    /// The extension for the lead's subagents.
    pub fn for_subagents(&self) -> CheckpointExtension {
        CheckpointExtension {
            lead: self.lead.clone(),
            follower: true,
            files: self.files,
            source: self.source.clone(),
        }
    }
}

impl Extension for CheckpointExtension {
    fn name(&self) -> &str {
        "checkpoints"
    }

    fn lifecycle(&self, cx: &ExtensionContext<'_>) -> Option<Arc<dyn LifecycleHooks>> {
        let mut lead = self.lead.lock().unwrap_or_else(|e| e.into_inner());
        if self.follower {
            return Some(Arc::new(Follower(lead.clone()?)));
        }
        let hooks = Arc::new(Checkpoints {
            store: Store::of_transcript(cx.transcript?),
            workspace: Arc::new(Workspace::new(cx.workspace).ok()?),
            source: self.source.clone(),
            files: self.files,
            state: Mutex::new(State::default()),
        });
        *lead = Some(hooks.clone());
        Some(hooks)
    }
}

/// A subagent's hooks: its calls saved into the lead's checkpoints, under the lead's prompt.
struct Follower(Arc<Checkpoints>);

#[async_trait]
impl LifecycleHooks for Follower {
    async fn before_tool(&self, call: ToolCall<'_>) -> BeforeTool {
        self.0.before_tool(call).await
    }

    async fn after_tool(&self, call: ToolCall<'_>, output: &ToolOutput) -> Verdict {
        self.0.after_tool(call, output).await
    }
}

/// What a file tool's call found before it ran.
enum Pending {
    File(PathBuf, Option<Vec<u8>>),
    Bash(PathBuf, Snapshot),
}

#[derive(Default)]
struct State {
    /// The prompt running, by its number in the store.
    prompt: Option<u64>,
    /// Files already saved for it: their first change is what counts.
    saved: HashSet<PathBuf>,
    /// Calls under way, by tool_use id.
    pending: HashMap<String, Pending>,
    /// The last `git status` snapshot, whose contents the next one reuses.
    last: Option<Snapshot>,
}

struct Checkpoints {
    store: Store,
    workspace: Arc<Workspace>,
    source: Option<Arc<dyn WorkspaceSource>>,
    files: bool,
    state: Mutex<State>,
}

impl Checkpoints {
    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Saves `path`'s content before the running prompt changed it, once per prompt.
    fn save(&self, path: &Path, before: Option<&[u8]>) {
        let mut state = self.state();
        let Some(seq) = state.prompt else { return };
        if !state.saved.insert(path.to_path_buf()) {
            return;
        }
        if let Err(e) = self.store.save_before(seq, path, before) {
            tracing::warn!(error = %e, path = %path.display(), "could not save a checkpoint");
        }
    }

    /// Where the tools work now: the workspace, or the worktree the lead is bound to.
    async fn workspace_now(&self) -> Arc<Workspace> {
        match &self.source {
            Some(source) => match source.binding().await {
                Ok(Some(binding)) => binding.workspace,
                _ => self.workspace.clone(),
            },
            None => self.workspace.clone(),
        }
    }
}

#[async_trait]
impl LifecycleHooks for Checkpoints {
    async fn prompt(&self, prompt: &str) -> Verdict {
        let seq = self.store.begin_prompt(prompt);
        let mut state = self.state();
        state.saved.clear();
        state.pending.clear();
        state.prompt = match seq {
            Ok(seq) => Some(seq),
            Err(e) => {
                tracing::warn!(error = %e, "could not record the prompt's checkpoint");
                None
            }
        };
        Verdict::default()
    }

    async fn before_tool(&self, call: ToolCall<'_>) -> BeforeTool {
        if !self.files || self.state().prompt.is_none() {
            return BeforeTool::default();
        }
        let named = call.input.get("path").and_then(|p| p.as_str());
        let file = named.filter(|_| FILE_TOOLS.contains(&call.name));
        if call.name != "bash" && file.is_none() {
            return BeforeTool::default();
        }
        let workspace = self.workspace_now().await;
        if let Some(path) = file.and_then(|p| workspace.resolve_for_write(p).ok()) {
            if !self.state().saved.contains(&path) {
                let before = std::fs::read(&path).ok();
                let pending = Pending::File(path, before);
                self.state().pending.insert(call.id.to_string(), pending);
            }
        } else if call.name == "bash" {
            let root = workspace.root().to_path_buf();
            let last = self.state().last.take();
            let at = root.clone();
            let snap = tokio::task::spawn_blocking(move || Snapshot::take(&at, last.as_ref()))
                .await
                .ok()
                .flatten();
            if let Some(snap) = snap {
                let mut state = self.state();
                state.last = Some(snap.clone());
                state
                    .pending
                    .insert(call.id.to_string(), Pending::Bash(root, snap));
            }
        }
        BeforeTool::default()
    }

    async fn after_tool(&self, call: ToolCall<'_>, _output: &ToolOutput) -> Verdict {
        let pending = self.state().pending.remove(call.id);
        match pending {
            Some(Pending::File(path, before)) if std::fs::read(&path).ok() != before => {
                self.save(&path, before.as_deref());
            }
            Some(Pending::Bash(root, snap)) => {
                let found = tokio::task::spawn_blocking(move || {
                    let after = Snapshot::take(&root, Some(&snap))?;
                    Some((snap.changes(&after), after))
                })
                .await
                .ok()
                .flatten();
                if let Some((changes, after)) = found {
                    for (path, before) in changes {
                        self.save(&path, before.as_deref());
                    }
                    self.state().last = Some(after);
                }
            }
            Some(Pending::File(..)) | None => {}
        }
        Verdict::default()
    }
}
