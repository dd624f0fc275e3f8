//! The YAML front matter of Claude Code's Markdown definitions (`SKILL.md`, agent files): the
//! small subset they use — `key: value` lines, `key: [a, b]` and `- item` lists, quoted
//! strings, `#` comments — between `---` lines at the top of the file.

use std::collections::BTreeMap;

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
}

impl Document {
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
    let mut lines = text.lines().enumerate();
    match lines.next() {
        Some((_, first)) if first.trim_end() == "---" => {}
        _ => return Err("line 1: expected front matter starting with `---`".to_string()),
    }
    let mut fields = BTreeMap::new();
    let mut list_key: Option<String> = None;
    let mut body_start = None;
    for (i, line) in lines.by_ref() {
        let n = i + 1;
        if line.trim_end() == "---" {
            body_start = Some(i + 1);
            break;
        }
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
        } else if let Some(inner) = value.strip_prefix('[') {
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
    let Some(start) = body_start else {
        return Err("the front matter has no closing `---`".to_string());
    };
    let body = text.lines().skip(start).collect::<Vec<_>>().join("\n");
    Ok(Document {
        fields,
        body: body.trim().to_string(),
    })
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
