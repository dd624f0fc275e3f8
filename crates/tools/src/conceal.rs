//! [`Concealed`]: the paths no search may reveal. A `Read` deny rule on `./.env` refuses
//! `read_file .env`, but `grep` and `glob` over the whole workspace never name the file: they
//! ask this first, for every entry they walk (a directory it covers is not entered). The sandbox
//! asks it too, to cover those paths for a call's processes (`sandbox::hide`).

use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Says whether a path (first) must be left out of a search in the workspace at a root (second).
type Hides = dyn Fn(&Path, &Path) -> bool + Send + Sync;

/// Says, for a workspace root, the directories under which every concealed path lies.
type Bases = dyn Fn(&Path) -> Vec<PathBuf> + Send + Sync;

/// A test on paths that searches leave out; empty by default. Cheap to clone.
#[derive(Clone, Default)]
pub struct Concealed {
    hides: Option<Arc<Hides>>,
    bases: Option<Arc<Bases>>,
}

impl Concealed {
    /// Leaves out what `hides(path, workspace_root)` says yes to.
    pub fn new(hides: impl Fn(&Path, &Path) -> bool + Send + Sync + 'static) -> Concealed {
        Concealed {
            hides: Some(Arc::new(hides)),
            bases: None,
        }
    }

    /// The same test, with `bases(workspace_root)` naming the directories every concealed path
    /// lies under (so the sandbox walks only those to find them).
    pub fn with_bases(
        mut self,
        bases: impl Fn(&Path) -> Vec<PathBuf> + Send + Sync + 'static,
    ) -> Concealed {
        self.bases = Some(Arc::new(bases));
        self
    }

    /// Whether `path` (absolute) must not be revealed by a search in the workspace at `root`.
    pub fn hides(&self, path: &Path, root: &Path) -> bool {
        self.hides.as_ref().is_some_and(|hides| hides(path, root))
    }

    /// Whether anything is concealed at all.
    pub fn is_empty(&self) -> bool {
        self.hides.is_none()
    }

    /// The directories to walk to find every concealed path of the workspace at `root`: the
    /// bases given, else the root.
    pub fn bases(&self, root: &Path) -> Vec<PathBuf> {
        match &self.bases {
            Some(bases) => bases(root),
            None => vec![root.to_path_buf()],
        }
    }
}

impl PartialEq for Concealed {
    fn eq(&self, other: &Concealed) -> bool {
        match (&self.hides, &other.hides) {
            (None, None) => true,
            (Some(a), Some(b)) => Arc::ptr_eq(a, b),
            _ => false,
        }
    }
}

impl Eq for Concealed {}

impl std::fmt::Debug for Concealed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.hides {
            Some(_) => f.write_str("Concealed(rules)"),
            None => f.write_str("Concealed(nothing)"),
        }
    }
}
