//! The `grep` tool: regex search over files with ripgrep's own crates, gitignore-aware, on
//! every core as ripgrep does (`troupe_search::grep`), the answer sorted by path.

use crate::glob::{search_root, walker};
use crate::output::{truncate_line, DEFAULT_OUTPUT_BUDGET};
use crate::{parse_input, schema_of, Effect, Tool, ToolContext, ToolOutput, Workspace};
use async_trait::async_trait;
use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use ignore::overrides::OverrideBuilder;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use std::path::Path;
use std::sync::Arc;
use troupe_search::grep::{search_tree, FileMatches, Mode, Piece};

/// Longest line (in characters) shown in content mode.
const GREP_LINE_LIMIT: usize = 500;

/// What the search reports.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum OutputMode {
    /// Matching lines as `path:line:text`.
    Content,
    /// Only the paths of files that match.
    #[default]
    FilesWithMatches,
    /// `path:count` of matching lines per file.
    Count,
}

/// Input of the `grep` tool.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct GrepInput {
    /// Regular expression (ripgrep syntax).
    pub pattern: String,
    /// File or directory to search (default: the workspace root).
    pub path: Option<String>,
    /// Only search files matching this glob, e.g. `*.rs` or `src/**/*.{ts,tsx}`.
    pub glob: Option<String>,
    /// `content` (matching lines), `files_with_matches` (default) or `count`.
    pub output_mode: Option<OutputMode>,
    /// Lines of context before and after each match (content mode only).
    pub context: Option<usize>,
    /// Match case-insensitively (default false).
    pub case_insensitive: Option<bool>,
    /// Return at most this many lines (content) or entries (other modes).
    pub head_limit: Option<usize>,
}

/// Searches file contents by regular expression.
#[derive(Debug, Default, Clone, Copy)]
pub struct GrepTool;

const DESCRIPTION: &str = "Searches file contents with a regular expression (ripgrep syntax) in \
the workspace or a given file or directory, skipping .gitignored and binary files. output_mode \
`files_with_matches` (default) lists matching files; `content` shows `path:line:text` lines \
(with `context` lines around, shown as `path-line-text`); `count` shows matches per file. \
Filter files with glob (e.g. `*.rs`) and cap results with head_limit.";

#[async_trait]
impl Tool for GrepTool {
    fn name(&self) -> &str {
        "grep"
    }

    fn description(&self) -> &str {
        DESCRIPTION
    }

    fn input_schema(&self) -> Value {
        schema_of::<GrepInput>()
    }

    fn built_schema(&self) -> Option<&'static str> {
        Some(crate::tool_schemas::GREP)
    }

    fn effect(&self, _input: &Value) -> Effect {
        Effect::ReadOnly
    }

    fn reads_only(&self, _input: &Value) -> bool {
        true
    }

    async fn call(&self, input: Value, ctx: &ToolContext) -> ToolOutput {
        let input: GrepInput = match parse_input(self.name(), input) {
            Ok(input) => input,
            Err(output) => return output,
        };
        let base = match search_root(&ctx.workspace, input.path.as_deref()) {
            Ok(base) => base,
            Err(output) => return output,
        };
        let matcher = match RegexMatcherBuilder::new()
            .case_insensitive(input.case_insensitive.unwrap_or(false))
            .line_terminator(Some(b'\n'))
            .build(&input.pattern)
        {
            Ok(matcher) => matcher,
            Err(err) => {
                return ToolOutput::error(format!("Invalid regex `{}`: {err}", input.pattern))
            }
        };
        let workspace = Arc::clone(&ctx.workspace);
        let concealed = ctx.concealed.clone();
        let searched = tokio::task::spawn_blocking(move || {
            search(&workspace, &base, &input, &matcher, concealed)
        })
        .await;
        match searched {
            Ok(Ok(output)) => output,
            Ok(Err(message)) => ToolOutput::error(message),
            Err(err) => ToolOutput::error(format!("Search failed: {err}")),
        }
    }
}

/// Walks `base` and searches every file, producing the tool's answer.
fn search(
    workspace: &Workspace,
    base: &Path,
    input: &GrepInput,
    matcher: &RegexMatcher,
    concealed: crate::Concealed,
) -> Result<ToolOutput, String> {
    let mode = input.output_mode.unwrap_or_default();
    let context = match mode {
        OutputMode::Content => input.context.unwrap_or(0),
        OutputMode::FilesWithMatches | OutputMode::Count => 0,
    };
    let mut builder = walker(base, workspace, concealed);
    if let Some(glob) = input.glob.as_deref().filter(|g| !g.is_empty()) {
        let mut overrides = OverrideBuilder::new(base);
        overrides
            .add(glob)
            .map_err(|err| format!("Invalid glob `{glob}`: {err}"))?;
        let overrides = overrides
            .build()
            .map_err(|err| format!("Invalid glob `{glob}`: {err}"))?;
        builder.overrides(overrides);
    }
    let limit = input.head_limit.filter(|n| *n > 0).unwrap_or(usize::MAX);
    let (walk_mode, room) = match mode {
        OutputMode::Content => (Mode::Lines { context }, limit),
        OutputMode::FilesWithMatches => (Mode::Files, usize::MAX),
        OutputMode::Count => (Mode::Count, usize::MAX),
    };
    // What the threads hold at most before the walk stops: far more than one answer shows, so
    // the sorted answer is the same as a whole search's unless the search is huge (then it says
    // it was cut short).
    let (found, stopped) = search_tree(builder, workspace, matcher, walk_mode, room, HELD_LIMIT);
    let mut collected = Collected {
        cut_short: stopped,
        ..Collected::default()
    };
    for (_, mut file) in found {
        if collected.entries >= limit || collected.bytes >= DEFAULT_OUTPUT_BUDGET {
            collected.cut_short = true;
            break;
        }
        // head_limit counts across files: this file may show only what is left of it.
        let mut room = usize::MAX;
        if mode == OutputMode::Content {
            room = limit - collected.entries;
            file.pieces.truncate(room);
        }
        collected.add(file, mode, room, context > 0);
    }
    Ok(collected.into_output(&input.pattern, mode))
}

/// The bytes of results the search threads hold at most before the walk stops.
const HELD_LIMIT: usize = 16 * DEFAULT_OUTPUT_BUDGET;

/// Output gathered across files.
#[derive(Debug, Default)]
struct Collected {
    lines: Vec<String>,
    bytes: usize,
    /// Lines (content mode) or files (other modes) produced, counted against head_limit.
    entries: usize,
    files: usize,
    matches: usize,
    cut_short: bool,
}

impl Collected {
    /// Takes one file's results, of which `room` pieces could be shown.
    fn add(&mut self, file: FileMatches, mode: OutputMode, room: usize, separate: bool) {
        if file.matches == 0 {
            return;
        }
        self.files += 1;
        self.matches += file.matches;
        let new_lines = match mode {
            OutputMode::Content => {
                if separate && !self.lines.is_empty() {
                    self.lines.push("--".to_owned());
                }
                self.entries += file.pieces.len();
                if room <= file.pieces.len() {
                    self.cut_short = true;
                }
                let shown = &file.shown;
                file.pieces
                    .iter()
                    .map(|piece| match piece {
                        Piece::Line {
                            separator,
                            number,
                            text,
                        } => format!(
                            "{shown}{separator}{number}{separator}{}",
                            truncate_line(text, GREP_LINE_LIMIT)
                        ),
                        Piece::Break => "--".to_owned(),
                    })
                    .collect()
            }
            OutputMode::FilesWithMatches => {
                self.entries += 1;
                vec![file.shown]
            }
            OutputMode::Count => {
                self.entries += 1;
                vec![format!("{}:{}", file.shown, file.matches)]
            }
        };
        self.bytes += new_lines.iter().map(|l| l.len() + 1).sum::<usize>();
        self.lines.extend(new_lines);
    }

    /// Phrases the results for the model.
    fn into_output(self, pattern: &str, mode: OutputMode) -> ToolOutput {
        if self.files == 0 {
            return ToolOutput::ok(format!("No matches for `{pattern}`"));
        }
        let mut text = self.lines.join("\n");
        if mode == OutputMode::Count {
            text.push_str(&format!(
                "\n({} matching lines in {} files)",
                self.matches, self.files
            ));
        }
        if self.cut_short {
            text.push_str(
                "\n(results cut short by head_limit or the output budget; narrow the search \
                 with path or glob to see the rest)",
            );
        }
        ToolOutput::ok(text)
    }
}
