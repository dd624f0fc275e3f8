//! Precedence: deny beats ask, ask beats allow, allow beats the mode's default.

use super::*;

#[test]
fn deny_beats_allow_even_in_bypass_mode() {
    let policy = policy(
        PermissionMode::BypassPermissions,
        &["Bash", "Edit"],
        &[],
        &["Bash(git push:*)", "Edit(.github/**)"],
    );
    assert_eq!(bash(&policy, "git push origin main"), Kind::Deny);
    assert_eq!(bash(&policy, "git pull"), Kind::Allow);
    assert_eq!(
        file(&policy, "write_file", Effect::Edit, ".github/ci.yml"),
        Kind::Deny
    );
    assert_eq!(
        file(&policy, "write_file", Effect::Edit, "src/a.rs"),
        Kind::Allow
    );
    let Decision::Deny { reason } = call(
        &policy,
        "bash",
        Effect::Execute,
        json!({"command": "git push"}),
    ) else {
        panic!("should deny");
    };
    assert!(reason.contains("`Bash(git push:*)`"), "{reason}");
}

#[test]
fn ask_beats_allow_and_the_mode_and_deny_beats_ask() {
    let asking = policy(
        PermissionMode::BypassPermissions,
        &["Bash(git:*)"],
        &["Bash(git push:*)"],
        &[],
    );
    assert_eq!(bash(&asking, "git push"), Kind::Ask);
    assert_eq!(bash(&asking, "git fetch"), Kind::Allow);
    let read_ask = policy(PermissionMode::AcceptEdits, &[], &["Read(./.env)"], &[]);
    assert_eq!(
        file(&read_ask, "read_file", Effect::ReadOnly, ".env"),
        Kind::Ask
    );
    let both = policy(
        PermissionMode::Default,
        &[],
        &["Bash(rm:*)"],
        &["Bash(rm -rf:*)"],
    );
    assert_eq!(bash(&both, "rm -rf /"), Kind::Deny);
    assert_eq!(bash(&both, "rm x"), Kind::Ask);
}

#[test]
fn allow_rules_beat_the_mode_default() {
    let policy = policy(
        PermissionMode::AcceptEdits,
        &["Bash(cargo test:*)"],
        &[],
        &[],
    );
    assert_eq!(bash(&policy, "cargo test -p x"), Kind::Allow);
    assert_eq!(bash(&policy, "cargo publish"), Kind::Ask);
}
