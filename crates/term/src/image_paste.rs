//! Image files pasted as paths, as terminals paste a file dragged onto them: an absolute or `~`
//! path (possibly quoted, its blanks escaped with `\`, or a `file://` URL) that names an
//! existing PNG, JPEG, GIF or WebP file stands in the line as `[Image #N]`, and the prompt
//! that holds it is sent with the image, as Claude Code does. The numbers are kept for the
//! session; numbering starts past the numbers the history already holds.

use std::collections::HashMap;
use std::ops::Range;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};

/// How every placeholder starts.
const PREFIX: &str = "[Image #";

/// The longest paste whose paths are looked at, in bytes.
const MAX_PASTE: usize = 8 * 1024;

/// The images pasted this session, by number; shared by the editor (which numbers them) and
/// the REPL (which attaches them when a prompt names them).
#[derive(Debug, Clone, Default)]
pub struct PastedImages(Arc<Mutex<Numbered>>);

/// One pasted image.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Pasted {
    /// An image file's path, read when the prompt is sent.
    File(PathBuf),
    /// An image copied to the clipboard: its bytes, kept for the session.
    Copied {
        /// Its type (`image/png`, …).
        media_type: &'static str,
        /// The image.
        bytes: Arc<[u8]>,
    },
}

#[derive(Debug, Default)]
struct Numbered {
    images: HashMap<usize, Pasted>,
    next: usize,
}

impl PastedImages {
    /// Numbers past those named in `history`.
    pub fn start_past(&self, history: &[String]) {
        let highest = history
            .iter()
            .flat_map(|entry| numbers(entry).into_iter().map(|(_, n)| n))
            .max()
            .unwrap_or(0);
        let mut numbered = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        numbered.next = numbered.next.max(highest);
    }

    /// Keeps `image` and returns its placeholder.
    pub fn add(&self, image: Pasted) -> String {
        let mut numbered = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        numbered.next += 1;
        let n = numbered.next;
        numbered.images.insert(n, image);
        format!("{PREFIX}{n}]")
    }

    /// The images of the placeholders in `line` pasted this session, in the order they appear
    /// (each once).
    pub fn named_in(&self, line: &str) -> Vec<Pasted> {
        let numbered = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let mut seen = Vec::new();
        let mut out = Vec::new();
        for (_, n) in numbers(line) {
            if let Some(image) = numbered.images.get(&n) {
                if !seen.contains(&n) {
                    seen.push(n);
                    out.push(image.clone());
                }
            }
        }
        out
    }

    /// `text` as pasted with each image path in it replaced by a placeholder. A paste longer
    /// than a few paths (a log, a listing) is left as it is.
    pub fn replace_paths(&self, text: &str) -> String {
        if text.len() > MAX_PASTE {
            return text.to_string();
        }
        let found = image_paths(text);
        if found.is_empty() {
            return text.to_string();
        }
        let mut out = String::with_capacity(text.len());
        let mut at = 0;
        for (range, path) in found {
            out.push_str(&text[at..range.start]);
            out.push_str(&self.add(Pasted::File(path)));
            at = range.end;
        }
        out.push_str(&text[at..]);
        out
    }
}

/// Where each `[Image #N]` of `line` is, with its number.
fn numbers(line: &str) -> Vec<(usize, usize)> {
    line.match_indices(PREFIX)
        .filter_map(|(i, _)| {
            let rest = &line[i + PREFIX.len()..];
            let digits = rest.len() - rest.trim_start_matches(|c: char| c.is_ascii_digit()).len();
            let n = rest[..digits].parse().ok()?;
            rest[digits..].starts_with(']').then_some((i, n))
        })
        .collect()
}

/// The words of `text` (shell-like: quotes and `\` escapes undone) that are absolute or `~`
/// paths to existing image files, with where each is in `text`.
pub fn image_paths(text: &str) -> Vec<(Range<usize>, PathBuf)> {
    words(text)
        .into_iter()
        .filter_map(|(range, word)| Some((range, image_file(&word)?)))
        .collect()
}

/// The file `word` names when it is an absolute, `~` or `file://` path to an image file.
fn image_file(word: &str) -> Option<PathBuf> {
    let decoded;
    let word = match word.strip_prefix("file://") {
        Some(url) => {
            decoded = percent_decoded(url)?;
            decoded.as_str()
        }
        None => word,
    };
    let path = match word.strip_prefix("~/") {
        Some(rest) => std::env::var_os("HOME").map(PathBuf::from)?.join(rest),
        None if word.starts_with('/') => PathBuf::from(word),
        None => return None,
    };
    troupe_tools::image_file::sniff_file(&path).map(|_| path)
}

/// A `file://` URL's path with its `%XX` escapes undone; `None` when they do not make UTF-8.
fn percent_decoded(url: &str) -> Option<String> {
    percent_encoding::percent_decode_str(url)
        .decode_utf8()
        .ok()
        .map(|s| s.into_owned())
}

/// Shell-like words: blanks separate them, `'…'` and `"…"` quote, `\` escapes the next
/// character. Each with its byte range in `text`.
fn words(text: &str) -> Vec<(Range<usize>, String)> {
    let mut out = Vec::new();
    let mut chars = text.char_indices().peekable();
    while let Some(&(start, c)) = chars.peek() {
        if c.is_whitespace() {
            chars.next();
            continue;
        }
        let mut word = String::new();
        let mut end = text.len();
        let mut quote: Option<char> = None;
        while let Some(&(i, c)) = chars.peek() {
            match (quote, c) {
                (None, c) if c.is_whitespace() => {
                    end = i;
                    break;
                }
                (None, '\'' | '"') => quote = Some(c),
                (Some(q), c) if c == q => quote = None,
                (None, '\\') => {
                    chars.next();
                    if let Some(&(_, next)) = chars.peek() {
                        word.push(next);
                    }
                }
                (_, c) => word.push(c),
            }
            chars.next();
        }
        out.push((start..end, word));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const PNG: &[u8] = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR";

    #[test]
    fn pasted_image_paths_become_numbered_placeholders() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let spaced = dir.path().join("my shot.png");
        let plain = dir.path().join("b.png");
        std::fs::write(&spaced, PNG).unwrap_or_default();
        std::fs::write(&plain, PNG).unwrap_or_default();
        std::fs::write(dir.path().join("notes.txt"), "text").unwrap_or_default();
        let images = PastedImages::default();
        images.start_past(&["old [Image #4] entry".to_string()]);
        let d = dir.path().display();
        let pasted = format!("'{d}/my shot.png' {d}/b.png {d}/notes.txt {d}/gone.png");
        let line = images.replace_paths(&pasted);
        assert_eq!(
            line,
            format!("[Image #5] [Image #6] {d}/notes.txt {d}/gone.png")
        );
        let escaped = format!(r"look {}\ shot.png", dir.path().join("my").display());
        assert_eq!(images.replace_paths(&escaped), "look [Image #7]");
        assert_eq!(
            images.named_in("see [Image #6], [Image #5] and [Image #6] [Image #4]"),
            vec![Pasted::File(plain), Pasted::File(spaced.clone())]
        );
        assert_eq!(
            images.replace_paths(&format!("file://{d}/my%20shot.png")),
            "[Image #8]"
        );
        assert_eq!(images.replace_paths("relative.png"), "relative.png");
    }
}
