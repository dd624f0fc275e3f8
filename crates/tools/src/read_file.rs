//! The `read_file` tool: a text file's lines, numbered like `cat -n`, a window at a time; a
//! notebook's cells; an image as an image block.

use crate::guard::GuardError;
use crate::notebook::{self, Notebook};
use crate::output::{truncate_line, truncate_middle, DEFAULT_LINE_LIMIT};
use crate::{image_file, image_fit};
use crate::{parse_input, schema_of, Effect, Tool, ToolContext, ToolOutput, Workspace};
use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use std::io::{self, BufRead, BufReader, Read};
use std::path::Path;
use std::sync::Arc;

/// Lines returned when the call names no limit.
pub const DEFAULT_LIMIT: usize = 2_000;

/// Bytes of numbered text returned at most in one call; the rest is reached with `offset`.
pub const READ_BUDGET: usize = 100_000;

/// How much of the start of a file is checked for NUL bytes to call it binary.
const BINARY_SNIFF: usize = 8 * 1024;

/// Input of the `read_file` tool.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ReadFileInput {
    /// File to read, relative to the workspace root.
    pub path: String,
    /// First line to show, 1-based (default 1).
    pub offset: Option<usize>,
    /// How many lines to show (default 2000).
    pub limit: Option<usize>,
}

/// Reads text files with line numbers.
#[derive(Debug, Default, Clone, Copy)]
pub struct ReadFileTool;

const DESCRIPTION: &str = "Reads a text file in the workspace and returns its lines numbered like \
`cat -n` (number, tab, text). By default up to 2000 lines from the start; use offset (1-based \
line) and limit to read further in large files. Lines longer than 2000 characters are cut. \
A Jupyter notebook (.ipynb) is shown as its cells (index, id, type, source) with their outputs. \
A PNG, JPEG, GIF or WebP image is returned as an image you can see. Other binary files and \
directories are refused. Read a file before editing it.";

#[async_trait]
impl Tool for ReadFileTool {
    fn name(&self) -> &str {
        "read_file"
    }

    fn description(&self) -> &str {
        DESCRIPTION
    }

    fn input_schema(&self) -> Value {
        schema_of::<ReadFileInput>()
    }

    fn built_schema(&self) -> Option<&'static str> {
        Some(crate::tool_schemas::READ_FILE)
    }

    fn effect(&self, _input: &Value) -> Effect {
        Effect::ReadOnly
    }

    fn reads_only(&self, _input: &Value) -> bool {
        true
    }

    async fn call(&self, input: Value, ctx: &ToolContext) -> ToolOutput {
        let input: ReadFileInput = match parse_input(self.name(), input) {
            Ok(input) => input,
            Err(output) => return output,
        };
        let path = match ctx.workspace.resolve(&input.path) {
            Ok(path) => path,
            Err(GuardError::NotFound { .. }) => {
                return ToolOutput::error(format!(
                    "File not found: {}. Use glob to find files by name (for example pattern \
                     \"**/{}\").",
                    input.path,
                    file_name_hint(&input.path)
                ))
            }
            Err(err) => return err.into(),
        };
        let shown = ctx.workspace.display(&path);
        let offset = input.offset.unwrap_or(1).max(1);
        let limit = input.limit.unwrap_or(DEFAULT_LIMIT);
        if limit == 0 {
            return ToolOutput::error("limit must be at least 1");
        }
        let workspace = Arc::clone(&ctx.workspace);
        let read = tokio::task::spawn_blocking(move || {
            if notebook::is_notebook(&path) {
                if let Some(cells) = read_notebook(&workspace, &path)? {
                    return Ok(Listing::Text(cells));
                }
            }
            read_numbered(&workspace, &path, offset, limit)
        })
        .await;
        match read {
            Ok(Ok(Listing::Text(text))) => ToolOutput::ok(text),
            Ok(Ok(Listing::Empty)) => ToolOutput::ok(format!("({shown} is empty)")),
            Ok(Ok(Listing::PastEnd { lines })) => ToolOutput::error(format!(
                "offset {offset} is past the end of {shown}, which has {lines} lines"
            )),
            Ok(Ok(Listing::Directory)) => ToolOutput::error(format!(
                "{shown} is a directory, not a file; use glob to list files in it"
            )),
            Ok(Ok(Listing::Image(fitted, size))) => ToolOutput::ok(format!(
                "Image {shown} ({}, {}{}), attached below.",
                fitted.image.media_type,
                image_file::human_size(size),
                fitted.note().map(|n| format!(", {n}")).unwrap_or_default()
            ))
            .with_images(vec![fitted.image]),
            Ok(Ok(Listing::ImageTooLarge { size })) => ToolOutput::error(format!(
                "{shown} is an image of {}; troupe reads images up to {} to downscale them for \
                 the model. Make a smaller copy (for example `convert {shown} -resize 25% \
                 small.png`) and read that.",
                image_file::human_size(size),
                image_file::human_size(image_fit::MAX_SOURCE_BYTES as u64)
            )),
            Ok(Ok(Listing::BadImage(why))) => ToolOutput::error(format!(
                "{shown} looks like an image but cannot be sent: {why}"
            )),
            Ok(Ok(Listing::Binary)) => ToolOutput::error(format!(
                "{shown} looks like a binary file (it contains NUL bytes); read_file shows text, \
                 notebooks and PNG, JPEG, GIF or WebP images only"
            )),
            Ok(Err(err)) => ToolOutput::error(format!("Cannot read {shown}: {err}")),
            Err(err) => ToolOutput::error(format!("Reading {shown} failed: {err}")),
        }
    }
}

/// The last path component, for the glob suggestion.
fn file_name_hint(path: &str) -> String {
    Path::new(path)
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_else(|| path.to_owned())
}

/// What a read produced.
#[derive(Debug)]
enum Listing {
    /// Numbered lines, with a note when more remain.
    Text(String),
    /// The file has no content.
    Empty,
    /// The offset is beyond the last line.
    PastEnd { lines: usize },
    /// The path is a directory.
    Directory,
    /// The file contains NUL bytes near its start.
    Binary,
    /// An image the model can see (downscaled when it was past the limits), and its size in
    /// bytes as read.
    Image(image_fit::Fitted, u64),
    /// An image too large to read.
    ImageTooLarge { size: u64 },
    /// An image that could not be made ready (it did not decode).
    BadImage(String),
}

/// Reads lines `offset..offset+limit` of a file, numbered, within the byte budget; the file is
/// opened beneath the workspace root's handle.
fn read_numbered(
    workspace: &Workspace,
    path: &Path,
    offset: usize,
    limit: usize,
) -> io::Result<Listing> {
    let file = match workspace.open_read(path) {
        Ok(file) => file,
        Err(err) if err.kind() == io::ErrorKind::IsADirectory => return Ok(Listing::Directory),
        Err(err) => return Err(err),
    };
    let size = file.metadata()?.len();
    let mut reader = BufReader::with_capacity(64 * 1024, file);
    let start = reader.fill_buf()?;
    if start.is_empty() {
        return Ok(Listing::Empty);
    }
    if let Some(media_type) = image_file::sniff(start) {
        if size > image_fit::MAX_SOURCE_BYTES as u64 {
            return Ok(Listing::ImageTooLarge { size });
        }
        let mut bytes = Vec::with_capacity(size as usize);
        reader
            .take(image_fit::MAX_SOURCE_BYTES as u64 + 1)
            .read_to_end(&mut bytes)?;
        if bytes.len() > image_fit::MAX_SOURCE_BYTES {
            return Ok(Listing::ImageTooLarge {
                size: bytes.len() as u64,
            });
        }
        return Ok(match image_fit::fit(media_type, &bytes) {
            Ok(fitted) => Listing::Image(fitted, size),
            Err(why) => Listing::BadImage(why),
        });
    }
    if start[..start.len().min(BINARY_SNIFF)].contains(&0) {
        return Ok(Listing::Binary);
    }
    // The lines shown, numbered once the widest number is known: the numbers are padded to
    // that width only, so a short file's listing costs no padding on every later request.
    let mut shown: Vec<(usize, String)> = Vec::new();
    let mut size = 0;
    let mut line = Vec::new();
    let mut number = 0;
    let mut stopped_at = None;
    loop {
        line.clear();
        if reader.read_until(b'\n', &mut line)? == 0 {
            break;
        }
        number += 1;
        if number < offset {
            continue;
        }
        if number >= offset + limit || size >= READ_BUDGET {
            stopped_at = Some(number);
            break;
        }
        let text = String::from_utf8_lossy(&line);
        let text = text.trim_end_matches('\n').trim_end_matches('\r');
        let text = truncate_line(text, DEFAULT_LINE_LIMIT);
        size += text.len() + 8;
        shown.push((number, text));
    }
    let width = shown.last().map_or(1, |(n, _)| n.to_string().len());
    let mut out = String::with_capacity(size);
    for (n, text) in &shown {
        out.push_str(&format!("{n:>width$}\t{text}\n"));
    }
    let Some(next) = stopped_at else {
        if number < offset {
            return Ok(Listing::PastEnd { lines: number });
        }
        return Ok(Listing::Text(out));
    };
    // Count what is left so the note can say how much more there is.
    let remaining = 1 + count_lines(&mut reader)?;
    let total = next - 1 + remaining;
    out.push_str(&format!(
        "... {remaining} more lines (file has {total}); continue with offset={next}\n"
    ));
    Ok(Listing::Text(out))
}

/// A notebook's cells as text; `None` when the file does not parse as one (it is then shown
/// as plain text).
fn read_notebook(workspace: &Workspace, path: &Path) -> io::Result<Option<String>> {
    let mut text = String::new();
    if workspace
        .open_read(path)?
        .read_to_string(&mut text)
        .is_err()
    {
        return Ok(None);
    }
    Ok(Notebook::parse(&text)
        .ok()
        .map(|notebook| truncate_middle(&notebook.render(), READ_BUDGET)))
}

/// Counts the lines left in a reader (a last line without a newline counts).
fn count_lines(reader: &mut impl Read) -> io::Result<usize> {
    let mut count = 0;
    let mut buf = [0u8; 64 * 1024];
    let mut last = b'\n';
    loop {
        let n = reader.read(&mut buf)?;
        if n == 0 {
            break;
        }
        count += buf[..n].iter().filter(|b| **b == b'\n').count();
        last = buf[n - 1];
    }
    Ok(count + usize::from(last != b'\n'))
}
