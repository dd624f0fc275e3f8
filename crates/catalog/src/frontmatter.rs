//! The YAML front matter of Claude Code's Markdown definitions (`SKILL.md`, agent files,
//! commands) between `---` lines at the top of the file.
//!
//! The block is read as YAML (`yaml-rust2`): block scalars (`|`, `>`), quoting, `#` comments
//! and nested maps as real files use them. Claude Code also loads files that are not valid
//! YAML — most often an unquoted `description: Use when: …` — so a block YAML refuses is read
//! again line by line (`key: value`, `key: [a, b]`, `- item` lists), and only a block neither
//! reading accepts is an error.

use std::collections::BTreeMap;
use yaml_rust2::{Yaml, YamlLoader};

/// A front-matter value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Value {
    /// A scalar, unquoted.
    Text(String),
    /// A list of scalars.
    List(Vec<String>),
}

impl Value {
    /// The value as a list: a list as is, a scalar split on commas (Claude Code accepts
    /// `tools: Read, Grep`).
    pub fn as_list(&self) -> Vec<String> {
        match self {
            Value::List(items) => items.clone(),
            Value::Text(text) => text
                .split(',')
                .map(|s| s.trim().to_string())
                .filter(|s| !s.is_empty())
                .collect(),
        }
    }
}

/// A parsed definition: its front matter and the body after it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Document {
    /// The front-matter keys.
    pub fields: BTreeMap<String, Value>,
    /// The Markdown after the closing `---`, trimmed.
    pub body: String,
    /// Each top-level key's value as written on its own line (unquoted), for hints shown as
    /// written: `argument-hint: [file] [mode]` is a list to YAML, text to the person.
    raw: BTreeMap<String, String>,
}

impl Document {
    /// A file without front matter: all of it is the body.
    pub fn without_front_matter(text: &str) -> Document {
        Document {
            fields: BTreeMap::new(),
            body: text.trim().to_string(),
            raw: BTreeMap::new(),
        }
    }

    /// A top-level value as written on its key's line, if not empty.
    pub fn raw(&self, key: &str) -> Option<&str> {
        self.raw
            .get(key)
            .map(String::as_str)
            .filter(|v| !v.is_empty())
    }

    /// A scalar field, if present and not empty.
    pub fn text(&self, key: &str) -> Option<&str> {
        match self.fields.get(key) {
            Some(Value::Text(t)) if !t.is_empty() => Some(t),
            _ => None,
        }
    }
}

/// Splits `text` into front matter and body. Errors name the line (1-based) and say what is
/// wrong.
pub fn parse(text: &str) -> Result<Document, String> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut lines = text.lines();
    match lines.next() {
        Some(first) if first.trim_end() == "---" => {}
        _ => return Err("line 1: expected front matter starting with `---`".to_string()),
    }
    let block: Vec<&str> = lines
        .by_ref()
        .take_while(|l| l.trim_end() != "---")
        .collect();
    // `take_while` consumed the closing line too, when there was one.
    if text.lines().nth(1 + block.len()).is_none() {
        return Err("the front matter has no closing `---`".to_string());
    }
    let body = lines.collect::<Vec<_>>().join("\n");
    let fields = match from_yaml(&block.join("\n")) {
        Some(fields) => fields,
        None => lenient(&block)?,
    };
    let raw = block
        .iter()
        .filter(|line| !line.starts_with([' ', '\t', '-', '#']))
        .filter_map(|line| line.split_once(':'))
        .map(|(key, value)| (key.trim().to_string(), unquote(value)))
        .collect();
    Ok(Document {
        fields,
        body: body.trim().to_string(),
        raw,
    })
}

/// The block read as YAML, when it is a YAML mapping (or empty).
fn from_yaml(block: &str) -> Option<BTreeMap<String, Value>> {
    let docs = YamlLoader::load_from_str(block).ok()?;
    let mut fields = BTreeMap::new();
    match docs.into_iter().next() {
        None | Some(Yaml::Null) => {}
        Some(Yaml::Hash(map)) => {
            for (key, value) in map {
                let Some(key) = scalar(&key) else { continue };
                let value = match value {
                    Yaml::Array(items) => Value::List(items.iter().filter_map(scalar).collect()),
                    Yaml::Null => Value::Text(String::new()),
                    other => match scalar(&other) {
                        Some(text) => Value::Text(text),
                        // A nested map (`metadata:`): nothing troupe reads.
                        None => continue,
                    },
                };
                fields.insert(key, value);
            }
        }
        // A scalar or a list at the top: not front matter as Claude Code writes it.
        Some(_) => return None,
    }
    Some(fields)
}

/// A YAML scalar as text (`true`, `3`, `1.5` as written).
fn scalar(value: &Yaml) -> Option<String> {
    match value {
        Yaml::String(s) | Yaml::Real(s) => Some(s.trim_end_matches('\n').to_string()),
        Yaml::Integer(i) => Some(i.to_string()),
        Yaml::Boolean(b) => Some(b.to_string()),
        _ => None,
    }
}

/// The block read line by line, as Claude Code reads files YAML refuses.
fn lenient(block: &[&str]) -> Result<BTreeMap<String, Value>, String> {
    let mut fields = BTreeMap::new();
    let mut list_key: Option<String> = None;
    for (i, line) in block.iter().enumerate() {
        let n = i + 2;
        let trimmed = line.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        if let Some(item) = trimmed.strip_prefix("- ") {
            let Some(key) = &list_key else {
                return Err(format!("line {n}: a list item without a key above it"));
            };
            if let Some(Value::List(items)) = fields.get_mut(key) {
                items.push(unquote(item));
            }
            continue;
        }
        let Some((key, value)) = trimmed.split_once(':') else {
            return Err(format!(
                "line {n}: expected `key: value`, found `{trimmed}`"
            ));
        };
        let key = key.trim().to_string();
        let value = value.trim();
        if value.is_empty() {
            fields.insert(key.clone(), Value::List(Vec::new()));
            list_key = Some(key);
        } else if let Some(inner) = value.strip_prefix('[').filter(|i| !i.contains("] [")) {
            let Some(inner) = inner.strip_suffix(']') else {
                return Err(format!("line {n}: `[` without a closing `]`"));
            };
            let items = inner
                .split(',')
                .map(unquote)
                .filter(|s| !s.is_empty())
                .collect();
            fields.insert(key, Value::List(items));
            list_key = None;
        } else {
            fields.insert(key, Value::Text(unquote(value)));
            list_key = None;
        }
    }
    Ok(fields)
}

fn unquote(s: &str) -> String {
    let s = s.trim();
    for q in ['"', '\''] {
        if let Some(inner) = s.strip_prefix(q).and_then(|r| r.strip_suffix(q)) {
            return inner.to_string();
        }
    }
    s.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scalars_lists_and_body() {
        let doc = parse(
            "---\nname: pdf\ndescription: \"Fill PDF forms: fast\"\nallowed-tools: [Read, 'Bash']\ntools:\n  - read_file\n  - grep\n# a comment\n---\n\n# PDF\nSteps.\n",
        )
        .unwrap();
        assert_eq!(doc.text("name"), Some("pdf"));
        assert_eq!(doc.text("description"), Some("Fill PDF forms: fast"));
        assert_eq!(doc.fields["allowed-tools"].as_list(), ["Read", "Bash"]);
        assert_eq!(doc.fields["tools"].as_list(), ["read_file", "grep"]);
        assert_eq!(doc.body, "# PDF\nSteps.");
        assert_eq!(Value::Text("Read, Grep".into()).as_list(), ["Read", "Grep"]);
    }

    #[test]
    fn errors_name_the_line() {
        assert_eq!(
            parse("# no front matter").unwrap_err(),
            "line 1: expected front matter starting with `---`"
        );
        assert!(parse("---\nname: x\n").unwrap_err().contains("no closing"));
        assert!(parse("---\nname x\n---\n")
            .unwrap_err()
            .starts_with("line 2:"));
        assert!(parse("---\n- orphan\n---\n")
            .unwrap_err()
            .starts_with("line 2:"));
    }
}
