//! The workspace path guard: every path a tool touches is resolved here and must stay inside the
//! workspace root, with symlinks followed before the check — and is then opened beneath a
//! directory handle of the root, so the kernel refuses a path that was swapped to lead outside
//! after the check (see the `beneath` module).

use crate::beneath::{self, Failure, Parents, Previous};
use crate::ToolOutput;
use std::fs::{File, Metadata};
use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

mod cwd;
pub use cwd::CwdChange;

/// Why a path was refused or could not be resolved.
#[derive(Debug, thiserror::Error)]
pub enum GuardError {
    /// The workspace root itself could not be opened.
    #[error("cannot open workspace root {path}: {source}")]
    Root {
        /// The root as given.
        path: PathBuf,
        /// What the file system said.
        source: io::Error,
    },
    /// The workspace root is not a directory.
    #[error("workspace root {0} is not a directory")]
    RootNotDir(PathBuf),
    /// An empty path was given.
    #[error("empty path (workspace is {root})")]
    Empty {
        /// The workspace root.
        root: PathBuf,
    },
    /// The path lies outside the workspace.
    #[error("path `{path}` is outside the workspace {root}")]
    Escapes {
        /// The path as given.
        path: String,
        /// The workspace root.
        root: PathBuf,
    },
    /// The path looks inside but a symlink on the way points outside the workspace.
    #[error("path `{path}` resolves through a symlink to {target}, outside the workspace {root}")]
    SymlinkEscapes {
        /// The path as given.
        path: String,
        /// Where the symlink leads.
        target: PathBuf,
        /// The workspace root.
        root: PathBuf,
    },
    /// A new path goes up (`..`) out of a directory that does not exist yet, which cannot be
    /// checked safely.
    #[error("path `{path}` uses `..` after a directory that does not exist (workspace is {root})")]
    ParentOfMissing {
        /// The path as given.
        path: String,
        /// The workspace root.
        root: PathBuf,
    },
    /// The path does not exist (only for reads).
    #[error("path `{path}` does not exist (workspace is {root})")]
    NotFound {
        /// The path as given.
        path: String,
        /// The workspace root.
        root: PathBuf,
    },
    /// The path was inside when checked, but led outside when opened: a directory on the way was
    /// replaced (by a symlink) in between.
    #[error(
        "path `{path}` led outside the workspace {root} when it was opened (something on the way \
         was replaced by a symlink after the path was checked); refused"
    )]
    Changed {
        /// The path as shown to the model.
        path: String,
        /// The workspace root.
        root: PathBuf,
    },
    /// The kernel cannot open a path beneath a directory handle, so containment cannot be
    /// enforced: every file tool fails closed.
    #[error(
        "cannot open `{path}` safely: this system lacks openat2 (Linux 5.6 or later), which troupe \
         needs to keep file tools inside the workspace {root}; refused"
    )]
    Unsupported {
        /// The path as shown to the model.
        path: String,
        /// The workspace root.
        root: PathBuf,
    },
    /// Any other file-system failure while resolving.
    #[error("cannot resolve path `{path}`: {source}")]
    Io {
        /// The path as given.
        path: String,
        /// What the file system said.
        source: io::Error,
    },
}

impl From<GuardError> for ToolOutput {
    fn from(err: GuardError) -> Self {
        ToolOutput::error(err.to_string())
    }
}

/// The directory an agent works in; every tool path is resolved against it and kept inside it —
/// or inside one of the directories added to it (`--add-dir`, `additionalDirectories`), which
/// tools reach by absolute path.
///
/// It holds an open handle of the root (one file descriptor, shared by clones), and one of each
/// added directory, which every file tool opens its paths beneath; making one costs a `realpath`
/// and an `open` per directory.
#[derive(Debug, Clone)]
pub struct Workspace {
    root: PathBuf,
    handle: Arc<OwnedFd>,
    added: Arc<Vec<AddedDir>>,
    /// Where commands start, relative to the root (empty: the root).
    start: PathBuf,
    /// Where the last bash call ended (`cd` persists), shared by the clones of one agent's
    /// workspace; `None`: the start.
    cwd: cwd::Cell,
}

/// A directory added to a workspace: its canonical path and the handle paths in it are opened
/// beneath.
#[derive(Debug)]
struct AddedDir {
    path: PathBuf,
    handle: OwnedFd,
}

/// Two workspaces are the same when they have the same root, whichever handle they hold.
impl PartialEq for Workspace {
    fn eq(&self, other: &Self) -> bool {
        self.root == other.root
    }
}

impl Eq for Workspace {}

impl Workspace {
    /// Opens a workspace, canonicalizing its root so later containment checks compare real paths,
    /// and opening the root directory as the handle files are opened beneath.
    pub fn new(root: impl AsRef<Path>) -> Result<Self, GuardError> {
        let given = root.as_ref();
        let root = given.canonicalize().map_err(|source| GuardError::Root {
            path: given.to_path_buf(),
            source,
        })?;
        if !root.is_dir() {
            return Err(GuardError::RootNotDir(root));
        }
        let handle = beneath::open_root(&root).map_err(|source| GuardError::Root {
            path: given.to_path_buf(),
            source,
        })?;
        Ok(Workspace {
            root,
            handle: Arc::new(handle),
            added: Arc::new(Vec::new()),
            start: PathBuf::new(),
            cwd: cwd::Cell::default(),
        })
    }

    /// The same workspace with `dirs` added: tools may also use paths inside them (by absolute
    /// path), each opened beneath a handle of its directory. A directory inside the root, or
    /// given twice, adds nothing.
    pub fn with_added_dirs(mut self, dirs: &[PathBuf]) -> Result<Self, GuardError> {
        let mut added: Vec<AddedDir> = Vec::new();
        for given in dirs {
            let path = given.canonicalize().map_err(|source| GuardError::Root {
                path: given.clone(),
                source,
            })?;
            if !path.is_dir() {
                return Err(GuardError::RootNotDir(path));
            }
            let known = path.starts_with(&self.root)
                || self.added.iter().chain(&added).any(|d| d.path == path);
            if known {
                continue;
            }
            let handle = beneath::open_root(&path).map_err(|source| GuardError::Root {
                path: given.clone(),
                source,
            })?;
            added.push(AddedDir { path, handle });
        }
        if !added.is_empty() {
            let mut all: Vec<AddedDir> = Vec::new();
            for d in self.added.iter() {
                let handle = d.handle.try_clone().map_err(|source| GuardError::Root {
                    path: d.path.clone(),
                    source,
                })?;
                all.push(AddedDir {
                    path: d.path.clone(),
                    handle,
                });
            }
            all.extend(added);
            self.added = Arc::new(all);
        }
        Ok(self)
    }

    /// The same workspace with the directories added to `other` (a workspace this one stands in
    /// for, such as a git worktree bound for a round), sharing their handles, and its commands
    /// starting in the same folder relative to the root.
    pub fn with_added_dirs_of(mut self, other: &Workspace) -> Workspace {
        self.added = other.added.clone();
        self.start = other.start.clone();
        self
    }

    /// The same workspace with its commands starting in `dir` when that is a folder inside the
    /// root (as Claude Code starts bash where it was started); anywhere else leaves the root.
    pub fn with_start(mut self, dir: &Path) -> Workspace {
        self.cwd = cwd::Cell::default();
        if dir == self.root {
            self.start = PathBuf::new();
            return self;
        }
        self.start = dir
            .canonicalize()
            .ok()
            .and_then(|d| d.strip_prefix(&self.root).ok().map(Path::to_path_buf))
            .unwrap_or_default();
        self
    }

    /// Where commands start: the folder given to [`Workspace::with_start`] (the same relative
    /// folder in a worktree standing in for the workspace) while it exists, else the root.
    pub fn start_dir(&self) -> PathBuf {
        let dir = self.root.join(&self.start);
        if self.start.as_os_str().is_empty() || !dir.is_dir() {
            return self.root.clone();
        }
        dir
    }

    /// The canonical workspace root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The canonical directories added to the workspace, in the order they were given.
    pub fn added_dirs(&self) -> impl Iterator<Item = &Path> {
        self.added.iter().map(|d| d.path.as_path())
    }

    /// The root a canonical path lies in, with its handle: the workspace root first.
    fn root_of(&self, real: &Path) -> Option<(&Path, BorrowedFd<'_>)> {
        if real.starts_with(&self.root) {
            return Some((&self.root, self.handle.as_fd()));
        }
        self.added
            .iter()
            .find(|d| real.starts_with(&d.path))
            .map(|d| (d.path.as_path(), d.handle.as_fd()))
    }

    /// Whether `path`, with `.` and `..` applied textually, stays under the root or an added
    /// directory (only to choose an error message).
    fn lexically_inside_any(&self, path: &Path) -> bool {
        lexically_inside(path, &self.root)
            || self.added.iter().any(|d| lexically_inside(path, &d.path))
    }

    /// Resolves an existing path (relative to the root, or absolute inside it), following symlinks.
    pub fn resolve(&self, path: &str) -> Result<PathBuf, GuardError> {
        let joined = self.join(path)?;
        match joined.canonicalize() {
            Ok(real) => self.check_inside(path, &joined, real),
            Err(err) if is_missing(&err) => {
                // Report an escape in preference to "not found": it is the more useful message.
                self.resolve_for_write(path)?;
                Err(GuardError::NotFound {
                    path: path.to_owned(),
                    root: self.root.clone(),
                })
            }
            Err(source) => Err(GuardError::Io {
                path: path.to_owned(),
                source,
            }),
        }
    }

    /// Resolves a path that may not exist yet: the deepest existing ancestor is canonicalized
    /// (following symlinks) and the missing components are appended; `..` among those is refused.
    pub fn resolve_for_write(&self, path: &str) -> Result<PathBuf, GuardError> {
        let joined = self.join(path)?;
        let components: Vec<Component<'_>> = joined.components().collect();
        for existing in (1..=components.len()).rev() {
            let ancestor: PathBuf = components[..existing].iter().collect();
            let real = match ancestor.canonicalize() {
                Ok(real) => real,
                Err(err) if is_missing(&err) => continue,
                Err(source) => {
                    return Err(GuardError::Io {
                        path: path.to_owned(),
                        source,
                    })
                }
            };
            let missing = &components[existing..];
            if missing.is_empty() {
                return self.check_inside(path, &joined, real);
            }
            return self.append_missing(path, &joined, real, missing);
        }
        // The file-system root always exists, so this is only reached for odd inputs.
        Err(GuardError::Escapes {
            path: path.to_owned(),
            root: self.root.clone(),
        })
    }

    /// Opens a resolved file (a path [`Workspace::resolve`] returned) for reading, beneath the
    /// root handle: a directory is an `IsADirectory` error, anything else not a regular file is
    /// refused, and a path that now leads outside is a [`GuardError::Changed`] error.
    pub fn open_read(&self, resolved: &Path) -> io::Result<File> {
        let (handle, relative) = self.relative(resolved)?;
        beneath::open_for_reading(handle, relative)
            .map_err(|failure| self.failure(resolved, failure))
    }

    /// The metadata of a resolved path (symlinks followed, beneath the root handle), without
    /// opening it for reading.
    pub fn metadata(&self, resolved: &Path) -> io::Result<Metadata> {
        let (handle, relative) = self.relative(resolved)?;
        beneath::open_path(handle, relative)
            .map_err(|failure| self.failure(resolved, failure))?
            .metadata()
    }

    /// Replaces the file at a resolved path (from [`Workspace::resolve_for_write`]) with
    /// `content` atomically: the temporary file is created in the target's directory, which is
    /// opened (and, with [`Parents::Create`], made) beneath the root handle, and renamed over the
    /// target there. Says what stood there before.
    pub fn write_atomic(
        &self,
        resolved: &Path,
        content: &[u8],
        parents: Parents,
    ) -> io::Result<Previous> {
        let (handle, relative) = self.relative(resolved)?;
        let (Some(name), Some(dir)) = (relative.file_name(), relative.parent()) else {
            return Err(io::Error::new(
                io::ErrorKind::IsADirectory,
                "it is the workspace root (or an added directory), a directory",
            ));
        };
        beneath::open_dir(handle, dir, parents)
            .and_then(|dir| beneath::replace(dir.as_fd(), name, content))
            .map_err(|failure| self.failure(resolved, failure))
    }

    /// The handle of the root (or added directory) a resolved path lies in, and the part of the
    /// path below it.
    fn relative<'p>(&self, resolved: &'p Path) -> io::Result<(BorrowedFd<'_>, &'p Path)> {
        let escapes = || {
            io::Error::new(
                io::ErrorKind::PermissionDenied,
                GuardError::Escapes {
                    path: resolved.display().to_string(),
                    root: self.root.clone(),
                },
            )
        };
        let (root, handle) = self.root_of(resolved).ok_or_else(escapes)?;
        let relative = resolved.strip_prefix(root).map_err(|_| escapes())?;
        Ok((handle, relative))
    }

    /// Words a failure of an operation beneath the root for the model.
    fn failure(&self, resolved: &Path, failure: Failure) -> io::Error {
        let path = self.display(resolved);
        let root = self.root.clone();
        match failure {
            Failure::Escaped => io::Error::new(
                io::ErrorKind::PermissionDenied,
                GuardError::Changed { path, root },
            ),
            Failure::Unsupported => io::Error::new(
                io::ErrorKind::Unsupported,
                GuardError::Unsupported { path, root },
            ),
            Failure::Io(err) => err,
        }
    }

    /// A path for messages: relative to the root when inside it, `.` for the root itself.
    pub fn display(&self, path: &Path) -> String {
        match path.strip_prefix(&self.root) {
            Ok(rel) if rel.as_os_str().is_empty() => ".".to_owned(),
            Ok(rel) => rel.display().to_string(),
            Err(_) => path.display().to_string(),
        }
    }

    /// Joins a relative path onto the root; absolute paths are taken as they are.
    fn join(&self, path: &str) -> Result<PathBuf, GuardError> {
        if path.is_empty() {
            return Err(GuardError::Empty {
                root: self.root.clone(),
            });
        }
        let given = Path::new(path);
        Ok(if given.is_absolute() {
            given.to_path_buf()
        } else {
            self.root.join(given)
        })
    }

    /// Appends the not-yet-existing tail of a path to its canonical existing ancestor.
    fn append_missing(
        &self,
        path: &str,
        joined: &Path,
        mut real: PathBuf,
        missing: &[Component<'_>],
    ) -> Result<PathBuf, GuardError> {
        for (index, component) in missing.iter().enumerate() {
            match component {
                Component::Normal(name) => {
                    real.push(name);
                    // Only the first missing component can exist at all: as a dangling symlink,
                    // which a write would follow to wherever it points.
                    if index == 0 && real.symlink_metadata().is_ok() {
                        let target = std::fs::read_link(&real).unwrap_or_else(|_| real.clone());
                        return Err(GuardError::SymlinkEscapes {
                            path: path.to_owned(),
                            target,
                            root: self.root.clone(),
                        });
                    }
                }
                Component::CurDir => {}
                Component::ParentDir | Component::RootDir | Component::Prefix(_) => {
                    return Err(if self.lexically_inside_any(joined) {
                        GuardError::ParentOfMissing {
                            path: path.to_owned(),
                            root: self.root.clone(),
                        }
                    } else {
                        GuardError::Escapes {
                            path: path.to_owned(),
                            root: self.root.clone(),
                        }
                    });
                }
            }
        }
        self.check_inside(path, joined, real)
    }

    /// Accepts a resolved path inside the root; otherwise says whether a symlink led outside.
    fn check_inside(
        &self,
        path: &str,
        joined: &Path,
        real: PathBuf,
    ) -> Result<PathBuf, GuardError> {
        if self.root_of(&real).is_some() {
            return Ok(real);
        }
        if self.lexically_inside_any(joined) {
            Err(GuardError::SymlinkEscapes {
                path: path.to_owned(),
                target: real,
                root: self.root.clone(),
            })
        } else {
            Err(GuardError::Escapes {
                path: path.to_owned(),
                root: self.root.clone(),
            })
        }
    }
}

/// True for the errors that mean "some component is missing", as opposed to real failures.
fn is_missing(err: &io::Error) -> bool {
    matches!(
        err.kind(),
        io::ErrorKind::NotFound | io::ErrorKind::NotADirectory
    )
}

/// Whether `path`, with `.` and `..` applied textually, stays under `root`. Used only to choose
/// the error message; the security decision is always made on canonical paths.
fn lexically_inside(path: &Path, root: &Path) -> bool {
    let mut normal = PathBuf::new();
    for component in path.components() {
        match component {
            Component::ParentDir => {
                normal.pop();
            }
            Component::CurDir => {}
            other => normal.push(other),
        }
    }
    normal.starts_with(root)
}

/// The grep and glob tools' walks open each directory beneath the root handle (refusing one
/// that now leads outside) and look at its entries in that handle without following a link.
impl troupe_search::Tree for Workspace {
    fn open_dir(&self, resolved: &Path) -> io::Result<std::os::fd::OwnedFd> {
        let (handle, relative) = self.relative(resolved)?;
        beneath::open_dir(handle, relative, Parents::MustExist)
            .map_err(|failure| self.failure(resolved, failure))
    }

    fn display(&self, path: &Path) -> String {
        Workspace::display(self, path)
    }
}
