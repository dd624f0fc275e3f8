//! Permission modes: spelling, and what each mode does with each effect.

use super::*;

#[test]
fn modes_parse_display_and_serialize_in_claude_code_spelling() {
    let spelled = ["default", "acceptEdits", "plan", "bypassPermissions"];
    for (mode, text) in PermissionMode::ALL.into_iter().zip(spelled) {
        assert_eq!(text.parse::<PermissionMode>(), Ok(mode));
        assert_eq!(mode.to_string(), text);
        assert_eq!(serde_json::to_value(mode).ok(), Some(json!(text)));
        assert_eq!(
            serde_json::from_value::<PermissionMode>(json!(text)).ok(),
            Some(mode)
        );
    }
    assert_eq!(PermissionMode::default(), PermissionMode::Default);
}

#[test]
fn unknown_mode_is_an_error_naming_it() {
    let error = "bypass".parse::<PermissionMode>().err();
    assert_eq!(
        error.as_ref().map(|e| e.given.as_str()),
        Some("bypass"),
        "{error:?}"
    );
    let message = error.map(|e| e.to_string()).unwrap_or_default();
    assert!(message.contains("`bypass`") && message.contains("acceptEdits"));
    assert!(serde_json::from_value::<PermissionMode>(json!("Plan")).is_err());
}

#[test]
fn every_mode_times_every_effect_without_rules() {
    use Effect::*;
    use PermissionMode::*;
    let table = [
        (Default, ReadOnly, Kind::Allow),
        (Default, Coordinate, Kind::Allow),
        (Default, Edit, Kind::Ask),
        (Default, Execute, Kind::Ask),
        (AcceptEdits, ReadOnly, Kind::Allow),
        (AcceptEdits, Coordinate, Kind::Allow),
        (AcceptEdits, Edit, Kind::Allow),
        (AcceptEdits, Execute, Kind::Ask),
        (Plan, ReadOnly, Kind::Allow),
        (Plan, Coordinate, Kind::Allow),
        (Plan, Edit, Kind::Deny),
        (Plan, Execute, Kind::Deny),
        (BypassPermissions, ReadOnly, Kind::Allow),
        (BypassPermissions, Coordinate, Kind::Allow),
        (BypassPermissions, Edit, Kind::Allow),
        (BypassPermissions, Execute, Kind::Allow),
    ];
    for (mode, effect, expected) in table {
        let policy = policy(mode, &[], &[], &[]);
        for (tool, input) in [
            ("bash", json!({"command": "make"})),
            ("write_file", json!({"path": "src/a.rs"})),
            ("mcp__srv__tool", json!({})),
        ] {
            let got = kind(&call(&policy, tool, effect, input));
            assert_eq!(got, expected, "{mode} × {effect:?} for {tool}");
        }
    }
}

#[test]
fn plan_mode_refusal_says_why() {
    let policy = policy(PermissionMode::Plan, &[], &[], &[]);
    let decision = call(
        &policy,
        "edit_file",
        Effect::Edit,
        json!({"path": "src/lib.rs"}),
    );
    let Decision::Deny { reason } = decision else {
        panic!("plan mode should deny an edit, got {decision:?}");
    };
    assert!(
        reason.starts_with("plan mode allows read-only tools only"),
        "{reason}"
    );
    assert!(reason.contains("src/lib.rs"), "{reason}");
}

#[test]
fn plan_mode_is_not_opened_by_allow_or_ask_rules() {
    let policy = policy(
        PermissionMode::Plan,
        &["Edit", "Bash"],
        &["Bash(make:*)"],
        &[],
    );
    assert_eq!(
        file(&policy, "write_file", Effect::Edit, "a.rs"),
        Kind::Deny
    );
    assert_eq!(bash(&policy, "make"), Kind::Deny);
    // A bash command the tool judged read-only still runs, and only read-only: the allow rule
    // does not widen its sandbox in plan mode.
    let read_only = call(&policy, "bash", Effect::ReadOnly, json!({"command": "ls"}));
    assert_eq!(read_only, Decision::Allow(Grant::Classified));
}
