//! `--file PATH` (repeatable): each file's text, or a folder's listing, attached to the first
//! prompt as an `@path` mention attaches it. Claude Code's other form, `file_id:path` (a file
//! of Anthropic's Files API to download), is accepted with a note: troupe has no file API.

use anyhow::{bail, Result};
use std::path::Path;

/// The attachment blocks of `specs`, paths relative to `dir`; notes on stderr for file ids.
/// A path that names nothing is an error (before any model call).
pub fn blocks(specs: &[String], dir: &Path) -> Result<Vec<String>> {
    let mut blocks = Vec::new();
    for spec in specs {
        let path = dir.join(spec);
        if let Some(block) = crate::repl_input::attachment(spec, &path) {
            blocks.push(block);
        } else if is_file_id(spec) {
            eprintln!("troupe: note: --file {spec}: troupe has no file API; the file is not downloaded (give a path to attach it)");
        } else {
            bail!("--file {spec}: no such file or folder (a prompt right after --file's paths needs `--` before it)");
        }
    }
    Ok(blocks)
}

/// `prompt` with `blocks` after it, as `@path` attachments follow their prompt.
pub fn attached(prompt: String, blocks: &[String]) -> String {
    blocks
        .iter()
        .fold(prompt, |out, block| format!("{out}\n\n{block}"))
}

/// Whether `spec` is Claude Code's `file_id:relative_path` form.
fn is_file_id(spec: &str) -> bool {
    spec.split_once(':')
        .is_some_and(|(id, path)| id.starts_with("file_") && !path.is_empty() && !id.contains('/'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_attach_file_ids_are_skipped_and_a_missing_path_is_an_error() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(dir.path().join("a.txt"), "alpha\n").unwrap_or_else(|e| panic!("{e}"));
        let specs = ["a.txt".to_string(), "file_abc:doc.txt".to_string()];
        let blocks = blocks(&specs, dir.path()).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(blocks, ["<file path=\"a.txt\">\nalpha\n\n</file>"]);
        assert_eq!(
            attached("look".into(), &blocks),
            "look\n\n<file path=\"a.txt\">\nalpha\n\n</file>"
        );
        let err = super::blocks(&["gone.txt".to_string()], dir.path()).err();
        assert!(err.is_some_and(|e| e.to_string().contains("--file gone.txt")));
    }
}
