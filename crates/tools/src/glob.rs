//! The `glob` tool: files matching a glob pattern, newest first, honouring .gitignore; the
//! tree is walked on every core (`parallel_walk`).

use crate::parallel_walk::Visit;
use crate::{parse_input, schema_of, Concealed, Effect, Tool, ToolContext, ToolOutput, Workspace};
use async_trait::async_trait;
use globset::GlobBuilder;
use ignore::WalkBuilder;
use rustix::fs::FileType;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use std::os::fd::AsFd;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

/// Most paths one call returns.
pub const MAX_RESULTS: usize = 1_000;

/// Directories never searched: git's internals and troupe's own state.
pub(crate) const SKIPPED_DIRS: &[&str] = &[".git", ".troupe"];

/// Input of the `glob` tool.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct GlobInput {
    /// Glob pattern matched against paths relative to the search directory, e.g. `**/*.rs` or
    /// `src/*.{ts,tsx}`; `*` does not cross `/`, `**` does.
    pub pattern: String,
    /// Directory to search, relative to the workspace root (default: the root).
    pub path: Option<String>,
}

/// Finds files by name pattern.
#[derive(Debug, Default, Clone, Copy)]
pub struct GlobTool;

const DESCRIPTION: &str = "Finds files whose path matches a glob pattern (`**/*.rs`, \
`src/**/test_*.py`, `*.{json,toml}`), searching the workspace or the given directory. Files \
ignored by .gitignore are skipped. Returns paths relative to the workspace root, most recently \
modified first.";

#[async_trait]
impl Tool for GlobTool {
    fn name(&self) -> &str {
        "glob"
    }

    fn description(&self) -> &str {
        DESCRIPTION
    }

    fn input_schema(&self) -> Value {
        schema_of::<GlobInput>()
    }

    fn effect(&self, _input: &Value) -> Effect {
        Effect::ReadOnly
    }

    fn reads_only(&self, _input: &Value) -> bool {
        true
    }

    async fn call(&self, input: Value, ctx: &ToolContext) -> ToolOutput {
        let input: GlobInput = match parse_input(self.name(), input) {
            Ok(input) => input,
            Err(output) => return output,
        };
        let base = match search_root(&ctx.workspace, input.path.as_deref()) {
            Ok(base) => base,
            Err(output) => return output,
        };
        if !base.is_dir() {
            return ToolOutput::error(format!(
                "{} is not a directory; glob searches directories",
                ctx.workspace.display(&base)
            ));
        }
        let pattern = input.pattern.trim_start_matches("./").to_owned();
        let matcher = match GlobBuilder::new(&pattern).literal_separator(true).build() {
            Ok(glob) => glob.compile_matcher(),
            Err(err) => return ToolOutput::error(format!("Invalid glob pattern: {err}")),
        };
        let walk_base = base.clone();
        let workspace = Arc::clone(&ctx.workspace);
        let concealed = ctx.concealed.clone();
        let found = tokio::task::spawn_blocking(move || {
            let builder = walker(&walk_base, &workspace, concealed);
            let (mut found, _) = crate::parallel_walk::files(builder, || {
                // Each directory is opened beneath the root handle once (the walker hands a thread a directory's files together), and its
                // files are looked at in that handle without following a link: a name the walker
                // listed through a directory swapped for a symlink meanwhile is dropped.
                let mut dirs = crate::parallel_walk::DirHandle::default();
                let (walk_base, matcher, workspace) = (&walk_base, &matcher, &workspace);
                move |entry: ignore::DirEntry| {
                    let matches = entry
                        .path()
                        .strip_prefix(walk_base)
                        .is_ok_and(|rel| matcher.is_match(rel));
                    let (Some(dir), Some(name)) = (entry.path().parent(), entry.path().file_name())
                    else {
                        return Visit::Skip;
                    };
                    if !matches {
                        return Visit::Skip;
                    }
                    let Some(handle) = dirs.open(workspace, dir) else {
                        return Visit::Skip;
                    };
                    match Workspace::entry_metadata(handle.as_fd(), name) {
                        Ok(stat)
                            if FileType::from_raw_mode(stat.st_mode) == FileType::RegularFile =>
                        {
                            let modified = SystemTime::UNIX_EPOCH
                                + Duration::new(
                                    u64::try_from(stat.st_mtime).unwrap_or(0),
                                    u32::try_from(stat.st_mtime_nsec).unwrap_or(0),
                                );
                            Visit::Keep((modified, entry.into_path()))
                        }
                        _ => Visit::Skip,
                    }
                }
            });
            // Newest first; ties by path so the order is stable.
            found.sort_by(|a: &(SystemTime, PathBuf), b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
            found
        })
        .await;
        let found = match found {
            Ok(found) => found,
            Err(err) => return ToolOutput::error(format!("Search failed: {err}")),
        };
        if found.is_empty() {
            return ToolOutput::ok(format!(
                "No files match `{pattern}` under {}",
                ctx.workspace.display(&base)
            ));
        }
        let mut out: Vec<String> = found
            .iter()
            .take(MAX_RESULTS)
            .map(|(_, path)| ctx.workspace.display(path))
            .collect();
        if found.len() > MAX_RESULTS {
            out.push(format!(
                "(showing the {MAX_RESULTS} newest of {} matches; narrow the pattern or path)",
                found.len()
            ));
        }
        ToolOutput::ok(out.join("\n"))
    }
}

/// Resolves an optional search directory; absent or empty means the workspace root.
pub(crate) fn search_root(
    workspace: &Workspace,
    path: Option<&str>,
) -> Result<PathBuf, ToolOutput> {
    match path {
        None | Some("") => Ok(workspace.root().to_path_buf()),
        Some(path) => workspace.resolve(path).map_err(ToolOutput::from),
    }
}

/// A gitignore-aware walker over `base` that also sees dot-files but never enters `.git` or
/// `.troupe`, and does not need a git repository for .gitignore to count.
///
/// It never follows symlinks (`follow_links(false)`: a symlink is yielded as a symlink and not
/// descended into), but it lists directories by path, so a directory swapped for a symlink
/// mid-walk can still be listed through it. That is why glob and grep never trust an entry: each
/// is opened beneath the workspace root's handle before it is reported or read, and one that
/// now leads outside is dropped. What `concealed` covers is neither listed nor entered.
pub(crate) fn walker(base: &Path, workspace: &Workspace, concealed: Concealed) -> WalkBuilder {
    let mut builder = WalkBuilder::new(base);
    let root = workspace.root().to_path_buf();
    builder
        .hidden(false)
        .require_git(false)
        .follow_links(false)
        .filter_entry(move |entry| {
            let skipped = entry.depth() > 0
                && entry.file_type().is_some_and(|t| t.is_dir())
                && SKIPPED_DIRS
                    .iter()
                    .any(|dir| entry.file_name() == std::ffi::OsStr::new(dir));
            !skipped && !concealed.hides(entry.path(), &root)
        });
    builder
}
