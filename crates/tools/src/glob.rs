//! The `glob` tool: files matching a glob pattern, newest first, honouring .gitignore; the
//! tree is walked on every core (`troupe_search::glob`).

use crate::{parse_input, schema_of, Concealed, Effect, Tool, ToolContext, ToolOutput, Workspace};
use async_trait::async_trait;
use globset::GlobBuilder;
use ignore::WalkBuilder;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use troupe_search::glob::newest_files;
use troupe_search::walk::{Hidden, KeepFile};

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

    fn built_schema(&self) -> Option<&'static str> {
        Some(crate::tool_schemas::GLOB)
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
            let keep = troupe_search::glob::matching(&walk_base, matcher);
            let builder = walker_keeping(&walk_base, &workspace, concealed, Some(keep));
            newest_files(builder, &*workspace, MAX_RESULTS)
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

/// A gitignore-aware walker over `base` ([`troupe_search::walk::walker`]) that never enters
/// `.git` or `.troupe` and neither lists nor enters what `concealed` covers.
///
/// The walker lists directories by path, so glob and grep never trust an entry: each is
/// opened beneath the workspace root's handle before it is reported or read, and one that now
/// leads outside is dropped.
pub(crate) fn walker(base: &Path, workspace: &Workspace, concealed: Concealed) -> WalkBuilder {
    walker_keeping(base, workspace, concealed, None)
}

/// [`walker`], yielding only the files `keep` takes, if given.
pub(crate) fn walker_keeping(
    base: &Path,
    workspace: &Workspace,
    concealed: Concealed,
    keep: Option<KeepFile>,
) -> WalkBuilder {
    let root = workspace.root().to_path_buf();
    let hidden = (!concealed.is_empty())
        .then(|| Box::new(move |path: &Path| concealed.hides(path, &root)) as Hidden);
    troupe_search::walk::walker(base, SKIPPED_DIRS, keep, hidden)
}
