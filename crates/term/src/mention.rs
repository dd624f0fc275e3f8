//! `@` mentions in a prompt: `@path`, `@"path with spaces"` and `@path\ with\ spaces` — an
//! `@` that starts a word (an e-mail address is no mention). The REPL attaches the files they
//! name; Tab completes them (quoting a path with a blank); the editor notes one that names
//! nothing.

use std::path::{Path, PathBuf};

/// One `@` mention.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mention {
    /// The path as written, quotes and escapes undone (trailing punctuation kept).
    pub raw: String,
    /// Where the `@` is, in bytes.
    pub start: usize,
    /// Where the mention ends, in bytes.
    pub end: usize,
    /// Whether it is quoted (`@"…"`), and whether its closing quote is there.
    pub quoted: bool,
    pub closed: bool,
}

impl Mention {
    /// The path it names: an unquoted one without the punctuation that ends a sentence
    /// (`see @notes.txt,` names `notes.txt`).
    pub fn name(&self) -> &str {
        match self.quoted {
            true => &self.raw,
            false => self
                .raw
                .trim_end_matches([',', '.', ';', ':', ')', '?', '!']),
        }
    }
}

/// Every mention in `text`, in order.
pub fn mentions(text: &str) -> Vec<Mention> {
    let mut found = Vec::new();
    let mut chars = text.char_indices().peekable();
    let mut prev: Option<char> = None;
    while let Some((start, c)) = chars.next() {
        let at_word_start = prev.is_none_or(char::is_whitespace);
        prev = Some(c);
        if c != '@' || !at_word_start {
            continue;
        }
        let mut raw = String::new();
        let quoted = chars.peek().is_some_and(|&(_, c)| c == '"');
        let mut closed = false;
        let mut end = text.len();
        if quoted {
            chars.next();
            for (i, c) in chars.by_ref() {
                if c == '"' {
                    closed = true;
                    end = i + 1;
                    break;
                }
                raw.push(c);
            }
            prev = Some('"');
        } else {
            while let Some(&(i, c)) = chars.peek() {
                if c.is_whitespace() {
                    end = i;
                    break;
                }
                chars.next();
                match c {
                    '\\' => match chars.next() {
                        Some((_, escaped)) => raw.push(escaped),
                        None => raw.push('\\'),
                    },
                    c => raw.push(c),
                }
                prev = Some(c);
            }
        }
        found.push(Mention {
            raw,
            start,
            end,
            quoted,
            closed,
        });
    }
    found
}

/// Where `name` is: absolute, or relative to `dir`.
pub fn resolve(name: &str, dir: &Path) -> PathBuf {
    let path = Path::new(name);
    match path.is_absolute() {
        true => path.to_path_buf(),
        false => dir.join(path),
    }
}

/// The names of `prompt`'s mentions that name nothing in `dir` (each once, in order).
pub fn missing(prompt: &str, dir: &Path) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for mention in mentions(prompt) {
        let name = mention.name();
        if name.is_empty() || out.iter().any(|n| n == name) {
            continue;
        }
        if std::fs::metadata(resolve(name, dir)).is_err() {
            out.push(name.to_string());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(text: &str) -> Vec<String> {
        mentions(text)
            .iter()
            .map(|m| m.name().to_string())
            .collect()
    }

    #[test]
    fn quoted_escaped_and_plain_mentions() {
        assert_eq!(
            names(r#"read @"notes with spaces.md", @my\ file.txt and @src. mail me@x.org"#),
            ["notes with spaces.md", "my file.txt", "src"]
        );
        let open = &mentions("see @\"half typ")[0];
        assert_eq!(
            (open.raw.as_str(), open.quoted, open.closed),
            ("half typ", true, false)
        );
        assert_eq!(open.end, "see @\"half typ".len());
        let plain = &mentions("@a.rs b")[0];
        assert_eq!((plain.start, plain.end, plain.quoted), (0, 5, false));
        assert!(names("no mention@here").is_empty());
    }

    #[test]
    fn missing_names_what_is_not_there() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a b.txt"), "").unwrap();
        let prompt = r#"@"a b.txt" @a\ b.txt @nope.md, @nope.md @"gone too""#;
        assert_eq!(missing(prompt, dir.path()), ["nope.md", "gone too"]);
    }
}
