//! [`Concealed`]: the paths no search may reveal. A `Read` deny rule on `./.env` refuses
//! `read_file .env`, but `grep` and `glob` over the whole workspace never name the file: they
//! ask this first, for every entry they walk (a directory it covers is not entered).

use std::path::Path;
use std::sync::Arc;

/// Says whether a path (first) must be left out of a search in the workspace at a root (second).
type Hides = dyn Fn(&Path, &Path) -> bool + Send + Sync;

/// A test on paths that searches leave out; empty by default. Cheap to clone.
#[derive(Clone, Default)]
pub struct Concealed(Option<Arc<Hides>>);

impl Concealed {
    /// Leaves out what `hides(path, workspace_root)` says yes to.
    pub fn new(hides: impl Fn(&Path, &Path) -> bool + Send + Sync + 'static) -> Concealed {
        Concealed(Some(Arc::new(hides)))
    }

    /// Whether `path` (absolute) must not be revealed by a search in the workspace at `root`.
    pub fn hides(&self, path: &Path, root: &Path) -> bool {
        self.0.as_ref().is_some_and(|hides| hides(path, root))
    }
}

impl std::fmt::Debug for Concealed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0 {
            Some(_) => f.write_str("Concealed(rules)"),
            None => f.write_str("Concealed(nothing)"),
        }
    }
}
