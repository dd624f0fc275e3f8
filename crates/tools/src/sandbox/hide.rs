//! The paths a confined call must not read: those a path-specific `Read` deny rule covers
//! ([`Concealed`]), found by a bounded walk before the call and covered in its mount namespace
//! (see [`super::mounts`]) at every confined level.
//!
//! The walk starts at the rules' literal bases (`secrets` for `./secrets/**`, the workspace for
//! a bare `*.pem`), does not follow symlinks (a link into a hidden tree reads the covered tree)
//! and does not enter a directory it hides. A walk that would pass [`MAX_ENTRIES`] entries, or
//! find more than [`MAX_HIDDEN`] paths, is not finished: the call does not run, and the error says
//! why, rather than run with a secret left readable.

use super::SandboxError;
use crate::Concealed;
use std::path::{Path, PathBuf};

/// Most entries one walk looks at.
pub const MAX_ENTRIES: usize = 200_000;
/// Most paths one call hides (each is a mount).
pub const MAX_HIDDEN: usize = 2_000;

/// A path to cover, and whether it is a directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hidden {
    /// The path.
    pub path: PathBuf,
    /// A directory (covered by an empty tmpfs) or a file (covered by `/dev/null`).
    pub is_dir: bool,
}

/// Every path under `root`'s concealed bases that `concealed` hides, outermost only.
pub fn find(concealed: &Concealed, root: &Path) -> Result<Vec<Hidden>, SandboxError> {
    let mut out = Vec::new();
    if concealed.is_empty() {
        return Ok(out);
    }
    let mut seen = 0usize;
    let mut stack: Vec<PathBuf> = Vec::new();
    for base in concealed.bases(root) {
        if base == Path::new("/") || base.parent().is_none() {
            return Err(SandboxError::Hide(format!(
                "a Read deny rule covers paths anywhere under {} and troupe cannot list them all",
                base.display()
            )));
        }
        let Ok(meta) = std::fs::symlink_metadata(&base) else {
            continue;
        };
        if concealed.hides(&base, root) {
            if base == root {
                return Err(SandboxError::Hide(format!(
                    "a Read deny rule covers the whole workspace {}, so no command can run in it",
                    root.display()
                )));
            }
            if !meta.file_type().is_symlink() {
                out.push(Hidden {
                    path: base,
                    is_dir: meta.is_dir(),
                });
            }
            continue;
        }
        if meta.is_dir() {
            stack.push(base);
        }
    }
    while let Some(dir) = stack.pop() {
        let entries = std::fs::read_dir(&dir).map_err(|e| {
            SandboxError::Hide(format!(
                "could not list {} to find the paths Read deny rules cover: {e}",
                dir.display()
            ))
        })?;
        for entry in entries.flatten() {
            seen += 1;
            if seen > MAX_ENTRIES {
                return Err(SandboxError::Hide(format!(
                    "more than {MAX_ENTRIES} entries to look through under {} for the paths Read \
                     deny rules cover; narrow the rules (e.g. `Read(./secrets/**)` instead of a \
                     bare name) so troupe can cover them",
                    root.display()
                )));
            }
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            let path = entry.path();
            if kind.is_symlink() {
                continue;
            }
            if concealed.hides(&path, root) {
                out.push(Hidden {
                    path,
                    is_dir: kind.is_dir(),
                });
                if out.len() > MAX_HIDDEN {
                    return Err(SandboxError::Hide(format!(
                        "Read deny rules cover more than {MAX_HIDDEN} separate paths in {}; \
                         deny a directory instead of many files",
                        root.display()
                    )));
                }
            } else if kind.is_dir() {
                stack.push(path);
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_walk_finds_the_outermost_hidden_paths_and_skips_symlinks() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join("secrets/deep")).unwrap();
        std::fs::write(root.join("secrets/deep/key"), "s").unwrap();
        std::fs::create_dir_all(root.join("src")).unwrap();
        std::fs::write(root.join("src/.env"), "s").unwrap();
        std::os::unix::fs::symlink(root.join("secrets"), root.join("link.env")).unwrap();
        let concealed = Concealed::new(|path, root| {
            let rel = path
                .strip_prefix(root)
                .unwrap()
                .to_string_lossy()
                .to_string();
            rel == "secrets" || rel.starts_with("secrets/") || rel.ends_with(".env")
        });
        let mut found = find(&concealed, &root).unwrap();
        found.sort_by(|a, b| a.path.cmp(&b.path));
        assert_eq!(
            found,
            vec![
                Hidden {
                    path: root.join("secrets"),
                    is_dir: true
                },
                Hidden {
                    path: root.join("src/.env"),
                    is_dir: false
                },
            ]
        );
        assert!(find(&Concealed::default(), &root).unwrap().is_empty());
        let everything = Concealed::new(|_, _| true);
        assert!(find(&everything, &root).is_err());
    }
}
