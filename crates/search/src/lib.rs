//! The walks behind the `grep` and `glob` tools: `ignore`'s parallel walker over a tree, each
//! file looked at beneath a directory handle, and for grep `grep-searcher` on every file.
//!
//! A crate of its own so that its code, and the generic code of the search crates it
//! instantiates (the walker's visitors, the searcher with its sink), is built at opt-level 3
//! while the rest of a release build is optimised for size (docs/decisions). The tools
//! themselves (inputs, the answer's wording) stay in `troupe-tools`.
//!
//! Must not know: tools, the model, agents. Where a file may be opened is the [`Tree`]'s
//! decision.

pub mod glob;
pub mod grep;
pub mod walk;

use std::io;
use std::os::fd::OwnedFd;
use std::path::Path;

/// The tree being searched: opens its directories (beneath the workspace root, refusing one
/// that now leads outside) and shows its paths.
pub trait Tree: Sync {
    /// Opens the directory `dir` for looking at its entries (`openat` on the handle).
    fn open_dir(&self, dir: &Path) -> io::Result<OwnedFd>;
    /// `path` as the answer shows it.
    fn display(&self, path: &Path) -> String;
}
