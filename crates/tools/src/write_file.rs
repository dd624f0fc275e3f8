//! The `write_file` tool, and the atomic write (temp file, fsync, rename) the edit tools share.

use crate::{parse_input, schema_of, Effect, Tool, ToolContext, ToolOutput};
use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::Path;

/// Input of the `write_file` tool.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct WriteFileInput {
    /// File to write, relative to the workspace root (or absolute inside it).
    pub path: String,
    /// The complete new content of the file.
    pub content: String,
}

/// Creates or overwrites whole files.
#[derive(Debug, Default, Clone, Copy)]
pub struct WriteFileTool;

const DESCRIPTION: &str = "Writes a file in the workspace, creating it (and missing parent \
directories) or replacing its whole content. The write is atomic: readers see the old or the new \
file, never half of one. To change part of an existing file prefer edit_file.";

#[async_trait]
impl Tool for WriteFileTool {
    fn name(&self) -> &str {
        "write_file"
    }

    fn description(&self) -> &str {
        DESCRIPTION
    }

    fn input_schema(&self) -> Value {
        schema_of::<WriteFileInput>()
    }

    fn effect(&self, _input: &Value) -> Effect {
        Effect::Edit
    }

    async fn call(&self, input: Value, ctx: &ToolContext) -> ToolOutput {
        let input: WriteFileInput = match parse_input(self.name(), input) {
            Ok(input) => input,
            Err(output) => return output,
        };
        let path = match ctx.workspace.resolve_for_write(&input.path) {
            Ok(path) => path,
            Err(err) => return err.into(),
        };
        let shown = ctx.workspace.display(&path);
        let bytes = input.content.len();
        let written = tokio::task::spawn_blocking(move || {
            if path.is_dir() {
                return Err(io::Error::other("it is a directory"));
            }
            let previous = fs::metadata(&path).ok().map(|meta| meta.len());
            if let Some(parent) = path.parent() {
                fs::create_dir_all(parent)?;
            }
            write_atomic(&path, input.content.as_bytes())?;
            Ok(previous)
        })
        .await;
        match written {
            Ok(Ok(None)) => ToolOutput::ok(format!("Created {shown} ({bytes} bytes)")),
            Ok(Ok(Some(old))) => ToolOutput::ok(format!(
                "Overwrote {shown} ({bytes} bytes; it had {old} bytes)"
            )),
            Ok(Err(err)) => ToolOutput::error(format!("Cannot write {shown}: {err}")),
            Err(err) => ToolOutput::error(format!("Writing {shown} failed: {err}")),
        }
    }
}

/// Replaces `path` with `content` atomically: a temp file in the same directory is written,
/// fsynced and renamed over it. An existing file's permissions are kept (a script stays
/// executable). The parent directory must exist.
pub fn write_atomic(path: &Path, content: &[u8]) -> io::Result<()> {
    let dir = path
        .parent()
        .ok_or_else(|| io::Error::other("path has no parent directory"))?;
    let name = path
        .file_name()
        .ok_or_else(|| io::Error::other("path has no file name"))?;
    let temp = dir.join(format!(
        ".{}.{}.tmp",
        name.to_string_lossy(),
        ulid::Ulid::new()
    ));
    let result = write_then_rename(path, &temp, content);
    if result.is_err() {
        // Best effort: the temp file is ours and useless now.
        let _ = fs::remove_file(&temp);
    }
    result
}

/// The steps of [`write_atomic`]; any failure leaves the temp file for the caller to remove.
fn write_then_rename(path: &Path, temp: &Path, content: &[u8]) -> io::Result<()> {
    let mut file = OpenOptions::new().write(true).create_new(true).open(temp)?;
    file.write_all(content)?;
    if let Ok(meta) = fs::metadata(path) {
        file.set_permissions(meta.permissions())?;
    }
    file.sync_all()?;
    drop(file);
    fs::rename(temp, path)?;
    // Make the rename itself durable; not every platform lets a directory be fsynced.
    if let Some(dir) = path.parent() {
        if let Ok(dir) = File::open(dir) {
            let _ = dir.sync_all();
        }
    }
    Ok(())
}
