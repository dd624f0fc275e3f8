//! The permission policy an agent runs with: the settings' `permissions` block with the
//! command line's rules added and its mode taking precedence over `defaultMode`. A settings
//! rule troupe cannot read is left out (see [`policy_warnings`]), never an error: settings
//! written for Claude Code must load. `disableBypassPermissionsMode` refuses bypassPermissions
//! on the command line and turns a `defaultMode` of it into `default`.

use crate::permissions::{ModeError, PermissionMode, Policy, Rule, RuleError, Rules};
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
    /// `--permission-mode bypassPermissions` (or `--dangerously-skip-permissions`) while the
    /// settings say `disableBypassPermissionsMode: "disable"`.
    #[error("bypassPermissions is disabled by the settings (permissions.disableBypassPermissionsMode: \"disable\"); choose another --permission-mode")]
    BypassDisabled,
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
    let mode = match (mode, settings.bypass_disabled(), &flags.mode) {
        (PermissionMode::BypassPermissions, true, Some(_)) => {
            return Err(PolicyError::BypassDisabled)
        }
        (PermissionMode::BypassPermissions, true, None) => PermissionMode::default(),
        (mode, _, _) => mode,
    };
    let readable = |list: &[String]| -> Vec<String> {
        list.iter()
            .filter(|r| Rule::parse(r).is_ok())
            .cloned()
            .collect()
    };
    let mut rules = Rules::parse(
        &readable(&settings.allow),
        &readable(&settings.ask),
        &readable(&settings.deny),
    )
    .map_err(|source| PolicyError::Rule {
        origin: "settings permissions",
        source,
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

/// What [`effective_policy`] leaves out of the settings' `permissions`, one line each: a rule
/// troupe cannot read, a `defaultMode` of bypassPermissions the settings forbid.
pub fn policy_warnings(settings: &Permissions) -> Vec<String> {
    let lists = [
        ("allow", &settings.allow),
        ("ask", &settings.ask),
        ("deny", &settings.deny),
    ];
    let mut warnings: Vec<String> = lists
        .into_iter()
        .flat_map(|(list, rules)| rules.iter().map(move |rule| (list, rule)))
        .filter_map(|(list, rule)| {
            let err = Rule::parse(rule).err()?;
            Some(format!(
                "settings permissions.{list}: {err}; troupe leaves this rule out"
            ))
        })
        .collect();
    if settings.bypass_disabled() && settings.default_mode.as_deref() == Some("bypassPermissions") {
        warnings.push(
            "settings permissions.defaultMode bypassPermissions is disabled by permissions.disableBypassPermissionsMode; troupe uses default"
                .to_string(),
        );
    }
    warnings
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
    fn a_settings_rule_troupe_cannot_read_is_left_out_with_a_warning() {
        let settings = Permissions {
            allow: vec!["Bash(git -C :* status:*)".into(), "Bash(ls:*)".into()],
            deny: vec!["Bash(rm".into()],
            ..Permissions::default()
        };
        let policy = effective_policy(&settings, &PermissionFlags::default()).unwrap();
        let allow: Vec<&str> = policy.rules.allow.iter().map(|r| r.as_str()).collect();
        assert_eq!(allow, ["Bash(ls:*)"]);
        assert!(policy.rules.deny.is_empty());
        let warnings = policy_warnings(&settings);
        assert_eq!(warnings.len(), 2, "{warnings:?}");
        assert!(
            warnings[0].starts_with(
                "settings permissions.allow: permission rule `Bash(git -C :* status:*)`"
            ),
            "{warnings:?}"
        );
        assert!(warnings[1].contains("`Bash(rm`"), "{warnings:?}");
    }

    #[test]
    fn disabled_bypass_is_refused_on_the_command_line_and_dropped_from_settings() {
        let settings = Permissions {
            default_mode: Some("bypassPermissions".into()),
            disable_bypass_permissions_mode: Some("disable".into()),
            ..Permissions::default()
        };
        let policy = effective_policy(&settings, &PermissionFlags::default()).unwrap();
        assert_eq!(policy.mode, PermissionMode::Default);
        assert_eq!(policy_warnings(&settings).len(), 1);
        let flags = PermissionFlags {
            mode: Some("bypassPermissions".into()),
            ..PermissionFlags::default()
        };
        let err = effective_policy(&settings, &flags).unwrap_err();
        assert!(
            err.to_string().contains("disableBypassPermissionsMode"),
            "{err}"
        );
    }

    #[test]
    fn a_bad_command_line_rule_names_where_it_came_from() {
        let flags = PermissionFlags {
            deny: vec!["Bash(rm".into()],
            ..PermissionFlags::default()
        };
        let err = effective_policy(&Permissions::default(), &flags).unwrap_err();
        assert!(err.to_string().starts_with("command line: "), "{err}");
        let flags = PermissionFlags {
            mode: Some("yolo".into()),
            ..PermissionFlags::default()
        };
        let err = effective_policy(&Permissions::default(), &flags).unwrap_err();
        assert!(err.to_string().contains("--permission-mode"), "{err}");
    }
}
