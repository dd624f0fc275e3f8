//! Gitignore-style path patterns for `Read(…)` and `Edit(…)` rules, and the call paths they match.

use globset::{Glob, GlobBuilder, GlobSet, GlobSetBuilder};
use std::path::{Component, Path, PathBuf};

/// Where a path pattern is rooted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Anchor {
    /// `./x`, `/x`, or a pattern with a slash in it: relative to the workspace root.
    Workspace,
    /// `//x`: an absolute path on the machine.
    Absolute,
    /// A bare name such as `.env` or `*.pem`: matches at any depth, as in `.gitignore`.
    AnyDepth,
}

/// A compiled path pattern.
#[derive(Debug, Clone)]
pub struct PathPattern {
    anchor: Anchor,
    globs: GlobSet,
    /// The pattern's leading components without glob characters (`secrets` for `secrets/**`).
    literal: String,
}

impl PathPattern {
    /// Compiles a rule specifier such as `./.env`, `src/**`, `*.pem` or `//etc/hosts`.
    pub fn parse(spec: &str) -> Result<PathPattern, globset::Error> {
        let (anchor, body) = if let Some(rest) = spec.strip_prefix("//") {
            (Anchor::Absolute, format!("/{rest}"))
        } else if let Some(rest) = spec.strip_prefix('/') {
            (Anchor::Workspace, rest.to_string())
        } else if spec.starts_with("./") {
            (Anchor::Workspace, strip_dot_slashes(spec).to_string())
        } else if spec.trim_end_matches('/').contains('/') {
            (Anchor::Workspace, spec.to_string())
        } else {
            (Anchor::AnyDepth, format!("**/{spec}"))
        };
        // `dir/` names a directory; like a plain name, it also covers everything inside.
        let body = body.trim_end_matches('/');
        let literal = match anchor {
            Anchor::AnyDepth => String::new(),
            Anchor::Workspace | Anchor::Absolute => body
                .split('/')
                .take_while(|part| !part.contains(['*', '?', '[', ']', '{', '}', '\\']))
                .collect::<Vec<_>>()
                .join("/"),
        };
        let mut set = GlobSetBuilder::new();
        set.add(glob(body)?);
        set.add(glob(&format!("{body}/**"))?);
        Ok(PathPattern {
            anchor,
            globs: set.build()?,
            literal,
        })
    }

    /// The directory every path the pattern covers lies under, for a workspace at `root`: its
    /// literal leading components (the root itself for a pattern at any depth).
    pub fn base(&self, root: &Path) -> PathBuf {
        match self.anchor {
            Anchor::AnyDepth => root.to_path_buf(),
            Anchor::Workspace => normalise(&root.join(&self.literal)),
            Anchor::Absolute if self.literal.is_empty() => PathBuf::from("/"),
            Anchor::Absolute => normalise(Path::new(&self.literal)),
        }
    }

    /// Whether the pattern covers `path`.
    pub fn matches(&self, path: &CallPath) -> bool {
        match (self.anchor, &path.relative) {
            (Anchor::Workspace, Some(relative)) => self.globs.is_match(relative),
            (Anchor::Workspace, None) => false,
            (Anchor::AnyDepth, Some(relative)) => self.globs.is_match(relative),
            (Anchor::Absolute, _) | (Anchor::AnyDepth, None) => self.globs.is_match(&path.absolute),
        }
    }
}

fn glob(pattern: &str) -> Result<Glob, globset::Error> {
    // As in `.gitignore`, `*` stays within one path component and only `**` crosses `/`.
    GlobBuilder::new(pattern).literal_separator(true).build()
}

fn strip_dot_slashes(mut spec: &str) -> &str {
    while let Some(rest) = spec.strip_prefix("./") {
        spec = rest.trim_start_matches('/');
    }
    spec
}

/// The path a file tool call touches, in the forms rules are matched against.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallPath {
    /// Relative to the workspace root with `/` separators (`""` is the root itself); `None` when
    /// the path lies outside the workspace.
    pub relative: Option<String>,
    /// The absolute (or root-joined) path, normalised without touching the file system.
    pub absolute: String,
}

impl CallPath {
    /// Resolves `raw` (relative to `workspace_root` unless absolute), folding `.` and `..`.
    pub fn resolve(raw: &str, workspace_root: &Path) -> CallPath {
        let root = normalise(workspace_root);
        let joined = normalise(&root.join(raw));
        let relative = joined
            .strip_prefix(&root)
            .ok()
            .filter(|inside| !inside.starts_with(".."))
            .map(slash_path);
        CallPath {
            relative,
            absolute: slash_path(&joined),
        }
    }
}

impl CallPath {
    /// The path `raw` really leads to, symlinks followed (a path that does not exist yet: its
    /// deepest existing ancestor resolved, the rest appended), against the canonical root; `None`
    /// when that is the path as named, or nothing of it can be resolved.
    pub fn resolve_real(raw: &str, workspace_root: &Path) -> Option<CallPath> {
        let root = workspace_root
            .canonicalize()
            .unwrap_or_else(|_| workspace_root.to_path_buf());
        let joined = workspace_root.join(raw);
        let real = real_path(&joined)?;
        let named = normalise(&joined);
        if real == named && root == normalise(workspace_root) {
            return None;
        }
        Some(CallPath::resolve(&real.to_string_lossy(), &root))
    }
}

/// `path` with every symlink that exists followed; missing trailing components are kept.
fn real_path(path: &Path) -> Option<PathBuf> {
    let mut existing = path.to_path_buf();
    let mut rest: Vec<std::ffi::OsString> = Vec::new();
    loop {
        if let Ok(real) = existing.canonicalize() {
            let mut out = real;
            for part in rest.iter().rev() {
                out.push(part);
            }
            return Some(normalise(&out));
        }
        let name = existing.file_name()?.to_os_string();
        rest.push(name);
        if !existing.pop() {
            return None;
        }
    }
}

/// Folds `.` and `..` lexically; symlinks are the workspace guard's business, not this one's.
fn normalise(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                if out.file_name().is_some() {
                    out.pop();
                } else if !out.has_root() {
                    // Above a relative root: keep the `..` so the path stays outside.
                    out.push("..");
                }
            }
            Component::Prefix(_) | Component::RootDir | Component::Normal(_) => {
                out.push(component.as_os_str())
            }
        }
    }
    out
}

fn slash_path(path: &Path) -> String {
    let parts: Vec<String> = path
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    let joined = parts.join("/");
    // The root component renders as "/" and would double the separator.
    match joined.strip_prefix("//") {
        Some(rest) => format!("/{rest}"),
        None => joined,
    }
}
