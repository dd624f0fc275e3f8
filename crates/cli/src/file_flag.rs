//! `--file PATH` (repeatable): each file's text, or a folder's listing, attached to the first
//! prompt as an `@path` mention attaches it (an image file as an image). Claude Code's other
//! form, `file_id:path` (a file of Anthropic's Files API to download), is accepted with a note:
//! troupe has no file API.

use anyhow::{anyhow, bail, Result};
use std::path::Path;
use troupe_protocol::ImageData;

/// What `--file` attaches to the first prompt.
#[derive(Debug, Default)]
pub struct Files {
    /// The text blocks (files, folders' listings), in order.
    pub blocks: Vec<String>,
    /// The images, fitted to the providers' limits.
    pub images: Vec<ImageData>,
}

/// The attachments of `specs`, paths relative to `dir`; notes on stderr for file ids and
/// downscaled images. A path that names nothing, or an image that cannot be sent, is an error
/// (before any model call).
pub fn files(specs: &[String], dir: &Path) -> Result<Files> {
    let mut files = Files::default();
    for spec in specs {
        let path = dir.join(spec);
        if let Some(media_type) = troupe_tools::image_file::sniff_file(&path) {
            let fitted = crate::prompt_images::load(&path, media_type)
                .map_err(|why| anyhow!("--file {spec}: {why}"))?;
            if let Some(note) = fitted.note() {
                eprintln!("troupe: note: --file {spec}: {note}");
            }
            files.images.push(fitted.image);
        } else if let Some(block) = crate::repl_input::attachment(spec, &path) {
            files.blocks.push(block);
        } else if is_file_id(spec) {
            eprintln!("troupe: note: --file {spec}: troupe has no file API; the file is not downloaded (give a path to attach it)");
        } else {
            bail!("--file {spec}: no such file or folder (a prompt right after --file's paths needs `--` before it)");
        }
    }
    Ok(files)
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
        std::fs::write(dir.path().join("dot.gif"), b"GIF89a\x01\0\x01\0\0\0\0;")
            .unwrap_or_else(|e| panic!("{e}"));
        let specs = [
            "a.txt".to_string(),
            "file_abc:doc.txt".to_string(),
            "dot.gif".to_string(),
        ];
        let Files { blocks, images } = files(&specs, dir.path()).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(images.len(), 1);
        assert_eq!(images[0].media_type, "image/gif");
        assert_eq!(blocks, ["<file path=\"a.txt\">\nalpha\n\n</file>"]);
        assert_eq!(
            attached("look".into(), &blocks),
            "look\n\n<file path=\"a.txt\">\nalpha\n\n</file>"
        );
        let err = files(&["gone.txt".to_string()], dir.path()).err();
        assert!(err.is_some_and(|e| e.to_string().contains("--file gone.txt")));
    }
}
