//! The `edit_file` tool: exact string replacement in a text file, written atomically.

use crate::{parse_input, schema_of, Effect, Parents, Tool, ToolContext, ToolOutput, Workspace};
use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use std::io::{self, Read};
use std::path::Path;
use std::sync::Arc;

/// Input of the `edit_file` tool.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct EditFileInput {
    /// File to edit, relative to the workspace root.
    pub path: String,
    /// The exact text to replace, including whitespace and indentation.
    pub old_string: String,
    /// The text to put in its place (must differ from old_string).
    pub new_string: String,
    /// Replace every occurrence instead of requiring exactly one (default false).
    pub replace_all: Option<bool>,
}

/// Replaces exact text in files.
#[derive(Debug, Default, Clone, Copy)]
pub struct EditFileTool;

const DESCRIPTION: &str = "Edits a text file by replacing old_string with new_string. old_string \
must match the file exactly (whitespace and indentation included) and, unless replace_all is \
true, occur exactly once: include enough surrounding lines to make it unique. Read the file with \
read_file first. The write is atomic.";

/// Why an edit was refused; each variant becomes a message the model can act on.
#[derive(Debug)]
enum Refusal {
    Io(io::Error),
    NotText,
    NotFound { crlf_hint: bool },
    Ambiguous(usize),
}

#[async_trait]
impl Tool for EditFileTool {
    fn name(&self) -> &str {
        "edit_file"
    }

    fn description(&self) -> &str {
        DESCRIPTION
    }

    fn input_schema(&self) -> Value {
        schema_of::<EditFileInput>()
    }

    fn built_schema(&self) -> Option<&'static str> {
        Some(crate::tool_schemas::EDIT_FILE)
    }

    fn effect(&self, _input: &Value) -> Effect {
        Effect::Edit
    }

    async fn call(&self, input: Value, ctx: &ToolContext) -> ToolOutput {
        let input: EditFileInput = match parse_input(self.name(), input) {
            Ok(input) => input,
            Err(output) => return output,
        };
        if input.old_string.is_empty() {
            return ToolOutput::error(
                "old_string is empty; to create a file or replace all of it use write_file",
            );
        }
        if input.old_string == input.new_string {
            return ToolOutput::error("old_string and new_string are identical; nothing to change");
        }
        let path = match ctx.workspace.resolve(&input.path) {
            Ok(path) => path,
            Err(err) => return err.into(),
        };
        let shown = ctx.workspace.display(&path);
        let replace_all = input.replace_all.unwrap_or(false);
        let workspace = Arc::clone(&ctx.workspace);
        let edited = tokio::task::spawn_blocking(move || {
            edit(
                &workspace,
                &path,
                &input.old_string,
                &input.new_string,
                replace_all,
            )
        })
        .await;
        match edited {
            Ok(Ok((count, line))) => {
                let noun = if count == 1 {
                    "occurrence"
                } else {
                    "occurrences"
                };
                ToolOutput::ok(format!(
                    "Edited {shown}: replaced {count} {noun} (first at line {line})"
                ))
            }
            Ok(Err(Refusal::NotFound { crlf_hint })) => {
                let hint = if crlf_hint {
                    " The file uses CRLF line endings; old_string must contain \\r\\n too."
                } else {
                    ""
                };
                ToolOutput::error(format!(
                    "old_string was not found in {shown}. It must match exactly, including \
                     whitespace and indentation; use read_file to see the current text.{hint}"
                ))
            }
            Ok(Err(Refusal::Ambiguous(count))) => ToolOutput::error(format!(
                "old_string occurs {count} times in {shown}; include more surrounding lines to \
                 make it unique, or set replace_all to true to replace every occurrence"
            )),
            Ok(Err(Refusal::NotText)) => ToolOutput::error(format!(
                "{shown} is not UTF-8 text; edit_file edits text only"
            )),
            Ok(Err(Refusal::Io(err))) => ToolOutput::error(format!("Cannot edit {shown}: {err}")),
            Err(err) => ToolOutput::error(format!("Editing {shown} failed: {err}")),
        }
    }
}

/// Performs the replacement; returns how many were made and the 1-based line of the first. The
/// file is read and rewritten beneath the workspace root's handle.
fn edit(
    workspace: &Workspace,
    path: &Path,
    old: &str,
    new: &str,
    replace_all: bool,
) -> Result<(usize, usize), Refusal> {
    let mut bytes = Vec::new();
    workspace
        .open_read(path)
        .and_then(|mut file| file.read_to_end(&mut bytes))
        .map_err(Refusal::Io)?;
    let text = String::from_utf8(bytes).map_err(|_| Refusal::NotText)?;
    let count = text.matches(old).count();
    let Some(first) = text.find(old) else {
        let crlf_hint = text.contains("\r\n")
            && !old.contains("\r\n")
            && text.contains(&old.replace('\n', "\r\n"));
        return Err(Refusal::NotFound { crlf_hint });
    };
    if count > 1 && !replace_all {
        return Err(Refusal::Ambiguous(count));
    }
    let line = 1 + text[..first].matches('\n').count();
    let updated = if replace_all {
        text.replace(old, new)
    } else {
        text.replacen(old, new, 1)
    };
    workspace
        .write_atomic(path, updated.as_bytes(), Parents::MustExist)
        .map_err(Refusal::Io)?;
    Ok((count, line))
}
