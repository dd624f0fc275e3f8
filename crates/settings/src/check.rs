//! The look at one settings document before it is typed: every key is either troupe's,
//! honoured, known and not honoured (a warning from the table in `claude_keys`), or unknown (a
//! warning naming the file and the nearest known key); and the values Claude Code accepts
//! that troupe's types would not (an `env` number, a fractional hook timeout, a mode troupe
//! lacks) are put in a form troupe reads, or left out with a warning.

use crate::claude_keys::{self, schema, TROUPE_KEYS, TROUPE_SANDBOX_KEYS};
use crate::{HookMatcher, PERMISSION_MODES};
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::fmt;

/// Something a settings file says that troupe does not do as written; never an error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Warning {
    /// The key it is about, dotted (`sandbox.excludedCommands`).
    pub key: String,
    /// The file (or `--settings`) when the warning is about that file; `None` for a key
    /// troupe does not honour, which is said once whichever files set it.
    pub origin: Option<String>,
    /// The warning, one line, the file named in it when there is one.
    pub text: String,
}

impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl Warning {
    fn unhonoured(key: &str) -> Option<Warning> {
        claude_keys::unhonoured(key).map(|u| Warning {
            key: key.to_string(),
            origin: None,
            text: format!("settings {}", u.warning()),
        })
    }

    fn about(origin: &str, key: &str, text: String) -> Warning {
        Warning {
            key: key.to_string(),
            origin: Some(origin.to_string()),
            text: format!("{origin}: {text}"),
        }
    }

    fn unknown<'a>(origin: &str, key: &str, known: impl Iterator<Item = &'a str>) -> Warning {
        let leaf = key.rsplit('.').next().unwrap_or(key);
        let text = match nearest(leaf, known) {
            Some(near) => format!("unknown settings key `{key}` (did you mean `{near}`?); ignored"),
            None => format!("unknown settings key `{key}`; ignored"),
        };
        Warning::about(origin, key, text)
    }
}

/// Checks `document` (one settings file, `origin` naming it), repairing in place what Claude
/// Code accepts and troupe's types would not; the warnings, in the order of the keys.
pub(crate) fn document(document: &mut Value, origin: &str) -> Vec<Warning> {
    let mut warnings = Vec::new();
    let Some(map) = document.as_object_mut() else {
        return warnings;
    };
    for (key, value) in map.iter_mut() {
        match key.as_str() {
            "permissions" => permissions(value, origin, &mut warnings),
            "sandbox" => sandbox(value, origin, &mut warnings),
            "env" => env(value),
            "hooks" => hook_timeouts(value),
            _ => top_level(key, origin, &mut warnings),
        }
    }
    warnings
}

fn top_level(key: &str, origin: &str, warnings: &mut Vec<Warning>) {
    if TROUPE_KEYS.contains(&key) || claude_keys::honoured(key) {
        return;
    }
    if let Some(warning) = Warning::unhonoured(key) {
        warnings.push(warning);
        return;
    }
    let known = schema().keys.iter().map(String::as_str);
    warnings.push(Warning::unknown(
        origin,
        key,
        known.chain(TROUPE_KEYS.iter().copied()),
    ));
}

fn permissions(value: &mut Value, origin: &str, warnings: &mut Vec<Warning>) {
    let Some(map) = value.as_object_mut() else {
        return;
    };
    for key in map.keys() {
        let dotted = format!("permissions.{key}");
        if claude_keys::honoured(&dotted) {
            continue;
        }
        match Warning::unhonoured(&dotted) {
            Some(warning) => warnings.push(warning),
            None => {
                let known = schema().permissions.iter().map(String::as_str);
                warnings.push(Warning::unknown(origin, &dotted, known));
            }
        }
    }
    default_mode(map, origin, warnings);
}

/// A `defaultMode` troupe has no such mode for is left out (the mode is then `default`, or a
/// lower settings layer's), with a warning.
fn default_mode(map: &mut Map<String, Value>, origin: &str, warnings: &mut Vec<Warning>) {
    let Some(Value::String(mode)) = map.get("defaultMode") else {
        return;
    };
    if PERMISSION_MODES.contains(&mode.as_str()) {
        return;
    }
    let text = match schema().default_mode.contains(mode) {
        true => format!(
            "`permissions.defaultMode` `{mode}` is not honoured yet: troupe has no such mode and uses `default`"
        ),
        false => format!(
            "`permissions.defaultMode` `{mode}` is not a permission mode ({}); troupe uses `default`",
            PERMISSION_MODES.join(", ")
        ),
    };
    warnings.push(Warning::about(origin, "permissions.defaultMode", text));
    map.remove("defaultMode");
}

fn sandbox(value: &mut Value, origin: &str, warnings: &mut Vec<Warning>) {
    let Some(map) = value.as_object() else {
        return;
    };
    for (key, value) in map {
        let dotted = format!("sandbox.{key}");
        let troupes = TROUPE_SANDBOX_KEYS.contains(&key.as_str()) && !value.is_object();
        if troupes || claude_keys::honoured(&dotted) {
            continue;
        }
        match Warning::unhonoured(&dotted) {
            Some(warning) => warnings.push(warning),
            None => {
                let known = schema().sandbox.iter().map(String::as_str);
                let known = known.chain(TROUPE_SANDBOX_KEYS.iter().copied());
                warnings.push(Warning::unknown(origin, &dotted, known));
            }
        }
    }
}

/// Claude Code takes numbers and booleans as `env` values; they become strings. A `null`
/// sets nothing.
fn env(value: &mut Value) {
    let Some(map) = value.as_object_mut() else {
        return;
    };
    map.retain(|_, v| !v.is_null());
    for value in map.values_mut() {
        if !value.is_string() {
            *value = Value::String(value.to_string());
        }
    }
}

/// Claude Code's hook timeouts are numbers of seconds, fractions included: rounded up.
fn hook_timeouts(value: &mut Value) {
    let hooks = value
        .as_object_mut()
        .into_iter()
        .flat_map(|events| events.values_mut())
        .filter_map(Value::as_array_mut)
        .flatten()
        .filter_map(|entry| entry.get_mut("hooks"))
        .filter_map(Value::as_array_mut)
        .flatten();
    for hook in hooks {
        let Some(timeout) = hook.get_mut("timeout") else {
            continue;
        };
        if let Some(seconds) = timeout.as_f64().filter(|s| s.fract() != 0.0 && *s > 0.0) {
            *timeout = Value::from(seconds.ceil() as u64);
        }
    }
}

/// What troupe's hooks do with a `hooks` setting: `fires` says which events troupe fires,
/// `runs` which hook types it runs. One warning per event troupe does not fire and per hook
/// type it does not run, naming it; an event Claude Code does not have either is named as
/// unknown, with the nearest one.
pub fn hook_warnings(
    hooks: &BTreeMap<String, Vec<HookMatcher>>,
    origin: &str,
    fires: &dyn Fn(&str) -> bool,
    runs: &dyn Fn(&str) -> bool,
) -> Vec<Warning> {
    let mut warnings = Vec::new();
    for (event, matchers) in hooks {
        let key = format!("hooks.{event}");
        if !fires(event) {
            warnings.push(match schema().hooks.contains(event) {
                true => Warning {
                    key: key.clone(),
                    origin: None,
                    text: format!(
                        "settings `{key}` is not honoured yet: troupe does not fire {event}; its hooks never run"
                    ),
                },
                false => {
                    Warning::unknown(origin, &key, schema().hooks.iter().map(String::as_str))
                }
            });
            continue;
        }
        for hook in matchers.iter().flat_map(|m| &m.hooks) {
            if runs(&hook.kind) {
                continue;
            }
            let warning = Warning {
                key: format!("{key}.type.{}", hook.kind),
                origin: None,
                text: format!(
                    "settings `{key}`: troupe does not run `{}` hooks yet; skipped",
                    hook.kind
                ),
            };
            if !warnings.contains(&warning) {
                warnings.push(warning);
            }
        }
    }
    warnings
}

/// `hooks` with only the hooks whose type `runs` says troupe runs.
pub fn runnable_hooks(
    hooks: &BTreeMap<String, Vec<HookMatcher>>,
    runs: &dyn Fn(&str) -> bool,
) -> BTreeMap<String, Vec<HookMatcher>> {
    let mut kept = BTreeMap::new();
    for (event, matchers) in hooks {
        let matchers: Vec<HookMatcher> = matchers
            .iter()
            .map(|m| HookMatcher {
                matcher: m.matcher.clone(),
                hooks: m.hooks.iter().filter(|h| runs(&h.kind)).cloned().collect(),
            })
            .filter(|m| !m.hooks.is_empty())
            .collect();
        if !matchers.is_empty() {
            kept.insert(event.clone(), matchers);
        }
    }
    kept
}

/// The known name closest to `given`, when one is close enough to be a misspelling.
pub fn nearest<'a>(given: &str, known: impl Iterator<Item = &'a str>) -> Option<&'a str> {
    let lower = given.to_ascii_lowercase();
    let limit = (given.chars().count() / 3).clamp(1, 3);
    known
        .map(|k| (edit_distance(&lower, &k.to_ascii_lowercase()), k))
        .filter(|(d, _)| *d <= limit)
        .min_by_key(|(d, _)| *d)
        .map(|(_, k)| k)
}

/// Levenshtein distance, by characters.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let above = row[j + 1];
            row[j + 1] = (diagonal + usize::from(ca != *cb))
                .min(row[j] + 1)
                .min(above + 1);
            diagonal = above;
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_misspelling_finds_the_key_it_was_meant_to_be() {
        let keys = ["permissions", "env", "hooks", "model"];
        assert_eq!(nearest("permisions", keys.into_iter()), Some("permissions"));
        assert_eq!(nearest("Hooks", keys.into_iter()), Some("hooks"));
        assert_eq!(nearest("enc", keys.into_iter()), Some("env"));
        assert_eq!(nearest("somethingElse", keys.into_iter()), None);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
    }
}
