//! Why a call was allowed, which decides its sandbox: classified read-only runs read-only, a rule
//! or a person's yes runs workspace-write, bypassPermissions runs unconfined.

use super::*;

fn grant(policy: &Policy, effect: Effect, command: &str) -> Decision {
    call(policy, "bash", effect, json!({ "command": command }))
}

#[test]
fn a_read_only_call_is_classified_in_every_mode_but_bypass() {
    for mode in [
        PermissionMode::Default,
        PermissionMode::AcceptEdits,
        PermissionMode::Plan,
    ] {
        let policy = policy(mode, &[], &[], &[]);
        assert_eq!(
            grant(&policy, Effect::ReadOnly, "ls"),
            Decision::Allow(Grant::Classified),
            "{mode}"
        );
    }
    let bypass = policy(PermissionMode::BypassPermissions, &[], &[], &[]);
    assert_eq!(
        grant(&bypass, Effect::ReadOnly, "ls"),
        Decision::Allow(Grant::Bypass)
    );
}

#[test]
fn an_allow_rule_grants_by_rule_even_for_a_read_only_call() {
    let policy = policy(PermissionMode::Default, &["Bash(git:*)"], &[], &[]);
    assert_eq!(
        grant(&policy, Effect::Execute, "git commit -m x"),
        Decision::Allow(Grant::Rule)
    );
    assert_eq!(
        grant(&policy, Effect::ReadOnly, "git status"),
        Decision::Allow(Grant::Rule)
    );
    assert_eq!(
        grant(&policy, Effect::ReadOnly, "ls"),
        Decision::Allow(Grant::Classified)
    );
}

#[test]
fn accept_edits_grants_edits_by_mode_and_bypass_everything_by_bypass() {
    let accept = policy(PermissionMode::AcceptEdits, &[], &[], &[]);
    assert_eq!(
        call(&accept, "write_file", Effect::Edit, json!({"path": "a.rs"})),
        Decision::Allow(Grant::Mode)
    );
    let bypass = policy(PermissionMode::BypassPermissions, &[], &[], &[]);
    assert_eq!(
        grant(&bypass, Effect::Execute, "rm -rf build"),
        Decision::Allow(Grant::Bypass)
    );
}

#[test]
fn grants_map_to_sandboxes() {
    assert_eq!(Grant::Classified.sandbox(), Sandbox::ReadOnly);
    assert_eq!(Grant::Rule.sandbox(), Sandbox::WorkspaceWrite);
    assert_eq!(Grant::Mode.sandbox(), Sandbox::WorkspaceWrite);
    assert_eq!(Grant::Person.sandbox(), Sandbox::WorkspaceWrite);
    assert_eq!(Grant::Bypass.sandbox(), Sandbox::Unsandboxed);
}
