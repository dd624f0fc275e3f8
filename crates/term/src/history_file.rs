//! The prompt history on disk, in the format the REPL has always used (rustyline's): a `#V2`
//! header, then one entry per line with newlines and backslashes escaped. Files without the
//! header (the first version) hold one entry per line as written.

use std::path::Path;

/// The header of the escaped format.
const V2: &str = "#V2";

/// The entries of the history file at `path`, oldest first (none when it is missing or not
/// readable: a lost history is not worth refusing to start over).
pub fn load(path: &Path) -> Vec<String> {
    match std::fs::read_to_string(path) {
        Ok(text) => parse(&text),
        Err(_) => Vec::new(),
    }
}

/// Parses the file's text.
fn parse(text: &str) -> Vec<String> {
    let mut lines = text.lines();
    let v2 = match lines.clone().next() {
        Some(V2) => {
            lines.next();
            true
        }
        _ => false,
    };
    lines
        .filter(|l| !l.is_empty())
        .map(|l| if v2 { unescape(l) } else { l.to_string() })
        .collect()
}

fn unescape(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match (c, chars.clone().next()) {
            ('\\', Some('n')) => {
                out.push('\n');
                chars.next();
            }
            ('\\', Some('\\')) => {
                out.push('\\');
                chars.next();
            }
            (c, _) => out.push(c),
        }
    }
    out
}

/// The file's text for `entries`.
fn render(entries: &[String]) -> String {
    let mut text = format!("{V2}\n");
    for entry in entries {
        text.push_str(&entry.replace('\\', "\\\\").replace('\n', "\\n"));
        text.push('\n');
    }
    text
}

/// Writes `entries` to `path` atomically (its folder made if missing).
pub fn save(path: &Path, entries: &[String]) -> std::io::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    troupe_durable::atomic::write_atomic_with(
        path,
        render(entries).as_bytes(),
        troupe_store::Durability::OsBuffered,
    )
    .map_err(std::io::Error::other)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_with_newlines_and_backslashes_round_trip() {
        let entries = vec![
            "plain".to_string(),
            "two\nlines".into(),
            "back\\slash \\n".into(),
        ];
        assert_eq!(parse(&render(&entries)), entries);
    }

    #[test]
    fn a_first_version_file_is_read_as_written() {
        assert_eq!(parse("one\ntwo \\n\n\n"), ["one", "two \\n"]);
    }

    #[test]
    fn saves_atomically_into_a_new_folder() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(".troupe/history");
        save(&path, &["a\nb".to_string()]).unwrap();
        assert_eq!(load(&path), ["a\nb"]);
    }
}
