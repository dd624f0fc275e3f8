//! Following the directory an extension binds the tools to ([`WorkspaceSource`]): asked before
//! every model call; when the answer changes, the tools' context is rebuilt — workspace (the
//! file tools' root and path guard, bash's cwd and writable root) and the sandbox's extra
//! writable roots — and the model is told where its tools now work.

use crate::extension::{WorkspaceBinding, WorkspaceSource};
use std::path::PathBuf;
use std::sync::Arc;
use troupe_tools::ToolContext;

/// What identifies a binding: the same root and roots mean nothing changed.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Key {
    root: PathBuf,
    writable_roots: Vec<PathBuf>,
}

impl Key {
    fn of(binding: &WorkspaceBinding) -> Key {
        Key {
            root: binding.workspace.root().to_path_buf(),
            writable_roots: binding.writable_roots.clone(),
        }
    }
}

/// A change of where the tools work.
pub(crate) struct Rebound {
    /// The tools' context from now on.
    pub(crate) ctx: ToolContext,
    /// What to tell the model, when the directory itself changed (not only the sandbox roots).
    pub(crate) note: Option<String>,
}

/// The loop's side of workspace bindings.
pub(crate) struct Binder {
    sources: Vec<Arc<dyn WorkspaceSource>>,
    /// The context the agent was built with; every binding starts from it.
    base: ToolContext,
    /// The binding in force; `None` while the tools work in the built workspace.
    current: Option<Key>,
}

impl Binder {
    /// A binder over `sources` (the first that names a binding wins), starting unbound.
    pub(crate) fn new(sources: Vec<Arc<dyn WorkspaceSource>>, base: ToolContext) -> Binder {
        Binder {
            sources,
            base,
            current: None,
        }
    }

    /// Asks the sources where the next round's tools work; `Some` when that changed.
    pub(crate) async fn follow(&mut self, agent: &str) -> Option<Rebound> {
        if self.sources.is_empty() {
            return None;
        }
        let mut found = None;
        for source in &self.sources {
            match source.binding().await {
                Ok(Some(binding)) => {
                    found = Some(binding);
                    break;
                }
                Ok(None) => {}
                Err(e) => {
                    // Moving the tools on a guess would be worse than staying a round longer.
                    tracing::warn!(agent, error = %e, "cannot tell where the tools work; they stay where they are");
                    return None;
                }
            }
        }
        let key = found.as_ref().map(Key::of);
        if key == self.current {
            return None;
        }
        let before = match &self.current {
            Some(k) => k.root.clone(),
            None => self.base.workspace.root().to_path_buf(),
        };
        self.current = key;
        let (ctx, note) = match found {
            Some(binding) => {
                let mut ctx = self.base.clone();
                let mut config = (*self.base.sandbox_config).clone();
                config.writable_roots.extend(binding.writable_roots);
                // The directories added to the agent's workspace stay reachable from the bound one.
                ctx.workspace = Arc::new(
                    (*binding.workspace)
                        .clone()
                        .with_added_dirs_of(&self.base.workspace),
                );
                ctx.sandbox_config = Arc::new(config);
                (ctx, binding.note)
            }
            None => (
                self.base.clone(),
                format!(
                    "Your tools work in {} again: bash runs there and file paths resolve inside it.",
                    self.base.workspace.root().display()
                ),
            ),
        };
        let moved = ctx.workspace.root() != before;
        Some(Rebound {
            ctx,
            note: moved.then_some(note),
        })
    }
}
