//! `${VAR}` and `${VAR:-default}` in configuration values, as Claude Code expands them in
//! `.mcp.json`: a secret stays in the environment, not in a committed file.

/// Why a value could not be expanded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ExpandError {
    /// `${NAME}` names a variable that is not set and gives no default.
    #[error("${{{name}}} is not set (write ${{{name}:-default}} to give a default)")]
    Unset {
        /// The variable.
        name: String,
    },
    /// `${` without its closing `}`.
    #[error("`${{` without a closing `}}` in {text:?}")]
    Unterminated {
        /// The value as written.
        text: String,
    },
    /// `${}` or a name with characters no variable name has.
    #[error("`${{{name}}}` is not a variable name")]
    BadName {
        /// What stood between the braces.
        name: String,
    },
}

/// Expands every `${NAME}` and `${NAME:-default}` in `text` with `lookup`; an empty variable is
/// as good as unset where a default is given (the shell's `:-`). `$NAME` without braces and a
/// lone `$` stay as written.
pub fn expand(text: &str, lookup: &dyn Fn(&str) -> Option<String>) -> Result<String, ExpandError> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else {
            return Err(ExpandError::Unterminated { text: text.into() });
        };
        let inner = &after[..end];
        let (name, default) = match inner.split_once(":-") {
            Some((name, default)) => (name, Some(default)),
            None => (inner, None),
        };
        if !is_name(name) {
            return Err(ExpandError::BadName { name: inner.into() });
        }
        let value = lookup(name);
        match (value, default) {
            (Some(value), Some(default)) if value.is_empty() => out.push_str(default),
            (Some(value), _) => out.push_str(&value),
            (None, Some(default)) => out.push_str(default),
            (None, None) => return Err(ExpandError::Unset { name: name.into() }),
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// Whether `name` can be an environment variable's name (`[A-Za-z_][A-Za-z0-9_]*`).
fn is_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(name: &str) -> Option<String> {
        match name {
            "TOKEN" => Some("s3cret".into()),
            "EMPTY" => Some(String::new()),
            _ => None,
        }
    }

    #[test]
    fn variables_and_defaults_expand() {
        assert_eq!(expand("Bearer ${TOKEN}", &env).unwrap(), "Bearer s3cret");
        assert_eq!(expand("${MISSING:-x}/${TOKEN}", &env).unwrap(), "x/s3cret");
        assert_eq!(expand("${EMPTY:-fallback}", &env).unwrap(), "fallback");
        assert_eq!(expand("${EMPTY}", &env).unwrap(), "");
        assert_eq!(expand("${MISSING:-}", &env).unwrap(), "");
        assert_eq!(
            expand("$TOKEN and $ stay", &env).unwrap(),
            "$TOKEN and $ stay"
        );
    }

    #[test]
    fn problems_are_named() {
        assert_eq!(
            expand("${MISSING}", &env).unwrap_err(),
            ExpandError::Unset {
                name: "MISSING".into()
            }
        );
        let unset = expand("a ${MISSING} b", &env).unwrap_err().to_string();
        assert!(unset.contains("${MISSING} is not set"), "{unset}");
        assert!(matches!(
            expand("${TOKEN", &env),
            Err(ExpandError::Unterminated { .. })
        ));
        assert!(matches!(
            expand("${1X}", &env),
            Err(ExpandError::BadName { .. })
        ));
        assert!(matches!(
            expand("${}", &env),
            Err(ExpandError::BadName { .. })
        ));
    }
}
