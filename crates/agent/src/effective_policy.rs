//! The permission policy an agent runs with: the settings' `permissions` block with the
//! command line's rules added and its mode taking precedence over `defaultMode`.

use crate::permissions::{ModeError, PermissionMode, Policy, RuleError, Rules};
use troupe_settings::Permissions;

/// Permission inputs from the command line, layered over the settings.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PermissionFlags {
    /// `--permission-mode`; `None` lets the settings' `defaultMode` (else `default`) decide.
    pub mode: Option<String>,
    /// `--allowedTools` rules, one rule an entry.
    pub allow: Vec<String>,
    /// Ask rules given on the command line (a process-mode teammate's `--ask-rule`).
    pub ask: Vec<String>,
    /// `--disallowedTools` rules, one rule an entry.
    pub deny: Vec<String>,
}

/// Why the effective policy could not be made; each variant names where the bad value came from.
#[derive(Debug, thiserror::Error)]
pub enum PolicyError {
    /// A mode name that is not one of the four.
    #[error("{origin}: {source}")]
    Mode {
        /// `--permission-mode` or `permissions.defaultMode`.
        origin: &'static str,
        /// The parse error.
        source: ModeError,
    },
    /// A malformed rule.
    #[error("{origin}: {source}")]
    Rule {
        /// `settings permissions` or `command line`.
        origin: &'static str,
        /// The parse error (it quotes the rule).
        source: RuleError,
    },
}

/// Merges the settings' permissions with the command line's: rules accumulate (each rule once),
/// the command line's mode wins over `defaultMode`.
pub fn effective_policy(
    settings: &Permissions,
    flags: &PermissionFlags,
) -> Result<Policy, PolicyError> {
    let mode = match (&flags.mode, &settings.default_mode) {
        (Some(given), _) => given.parse().map_err(|source| PolicyError::Mode {
            origin: "--permission-mode",
            source,
        })?,
        (None, Some(default)) => default.parse().map_err(|source| PolicyError::Mode {
            origin: "permissions.defaultMode",
            source,
        })?,
        (None, None) => PermissionMode::default(),
    };
    let mut rules =
        Rules::parse(&settings.allow, &settings.ask, &settings.deny).map_err(|source| {
            PolicyError::Rule {
                origin: "settings permissions",
                source,
            }
        })?;
    // A process-mode teammate gets the lead's whole policy as flags and also reads the same
    // settings files: a rule the settings already hold is not added twice.
    let fresh = |list: &[String], known: &[String]| -> Vec<String> {
        list.iter()
            .filter(|r| !known.contains(r))
            .cloned()
            .collect()
    };
    let extra = Rules::parse(
        &fresh(&flags.allow, &settings.allow),
        &fresh(&flags.ask, &settings.ask),
        &fresh(&flags.deny, &settings.deny),
    )
    .map_err(|source| PolicyError::Rule {
        origin: "command line",
        source,
    })?;
    rules.extend(extra);
    Ok(Policy::new(mode, rules))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_add_rules_and_their_mode_wins() {
        let settings = Permissions {
            allow: vec!["Bash(ls:*)".into()],
            deny: vec!["Bash(rm:*)".into()],
            default_mode: Some("acceptEdits".into()),
            ..Permissions::default()
        };
        let policy = effective_policy(&settings, &PermissionFlags::default()).unwrap();
        assert_eq!(policy.mode, PermissionMode::AcceptEdits);
        assert_eq!(policy.rules.deny.len(), 1);
        let flags = PermissionFlags {
            mode: Some("plan".into()),
            deny: vec!["Bash(rm:*)".into(), "Edit".into()],
            ..PermissionFlags::default()
        };
        let policy = effective_policy(&settings, &flags).unwrap();
        assert_eq!(policy.mode, PermissionMode::Plan);
        let deny: Vec<&str> = policy.rules.deny.iter().map(|r| r.as_str()).collect();
        assert_eq!(deny, ["Bash(rm:*)", "Edit"]);
        assert_eq!(policy.rules.allow.len(), 1);
    }

    #[test]
    fn a_bad_rule_names_where_it_came_from() {
        let settings = Permissions {
            deny: vec!["Bash(rm".into()],
            ..Permissions::default()
        };
        let err = effective_policy(&settings, &PermissionFlags::default()).unwrap_err();
        assert!(
            err.to_string().starts_with("settings permissions: "),
            "{err}"
        );
        let flags = PermissionFlags {
            mode: Some("yolo".into()),
            ..PermissionFlags::default()
        };
        let err = effective_policy(&Permissions::default(), &flags).unwrap_err();
        assert!(err.to_string().contains("--permission-mode"), "{err}");
    }
}
