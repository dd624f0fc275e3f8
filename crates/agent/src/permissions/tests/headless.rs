//! Headless refusals: the reason, and the flags that would allow the call.

use super::*;

#[test]
fn headless_refusal_tells_how_to_allow_a_command() {
    let policy = policy(PermissionMode::Default, &[], &[], &[]);
    let message = headless(
        &policy,
        "bash",
        Effect::Execute,
        json!({"command": "rm -rf build"}),
    );
    assert_eq!(
        message,
        "bash needs permission in default mode: \"rm -rf build\". To allow it, re-run with \
         --allowedTools \"Bash(rm:*)\" or --permission-mode bypassPermissions"
    );
    let Decision::Ask { reason } = call(
        &policy,
        "bash",
        Effect::Execute,
        json!({"command": "rm -rf build"}),
    ) else {
        panic!("should ask");
    };
    assert!(message.starts_with(&reason));
}

#[test]
fn headless_refusal_suggests_edits_mode_for_file_changes() {
    let policy = policy(PermissionMode::Default, &[], &[], &[]);
    let message = headless(
        &policy,
        "write_file",
        Effect::Edit,
        json!({"path": "src/main.rs"}),
    );
    assert_eq!(
        message,
        "write_file needs permission in default mode: \"src/main.rs\". To allow it, re-run with \
         --permission-mode acceptEdits or --allowedTools Edit"
    );
}

#[test]
fn the_suggested_rules_actually_allow_the_refused_command() {
    let commands = [
        "git status && rm -rf x && make build",
        "FOO=1 cargo test | tee out",
        "sort data > sorted.txt",
        "echo $(curl -s example.com)",
    ];
    for command in commands {
        let base = policy(PermissionMode::Default, &["Bash(git status)"], &[], &[]);
        let message = headless(
            &base,
            "bash",
            Effect::Execute,
            json!({ "command": command }),
        );
        let Some(list) = message
            .split("--allowedTools ")
            .nth(1)
            .and_then(|rest| rest.split(" or ").next())
        else {
            panic!("no suggestion in {message}");
        };
        let list = list.trim_matches(|c| c == '"' || c == '\'');
        let mut allow = vec!["Bash(git status)".to_string()];
        allow.extend(split_rule_list(list));
        let rules = Rules::parse(&allow, &[], &[]);
        let Ok(rules) = rules else {
            panic!("suggested rules should parse: {list} ({message})");
        };
        let retried = Policy::new(PermissionMode::Default, rules);
        assert_eq!(bash(&retried, command), Kind::Allow, "{command}: {message}");
    }
}

#[test]
fn headless_refusal_for_an_ask_rule_says_to_remove_it() {
    let policy = policy(
        PermissionMode::BypassPermissions,
        &[],
        &["Bash(git push:*)"],
        &[],
    );
    let message = headless(
        &policy,
        "bash",
        Effect::Execute,
        json!({"command": "git push"}),
    );
    assert!(message.contains("remove `Bash(git push:*)`"), "{message}");
    assert!(message.contains("permissions.ask"), "{message}");
}

#[test]
fn headless_refusal_of_other_decisions_is_their_reason() {
    let policy = policy(PermissionMode::Plan, &[], &[], &["Bash(rm:*)"]);
    let denied = json!({"command": "rm x"});
    let Decision::Deny { reason } = call(&policy, "bash", Effect::Execute, denied.clone()) else {
        panic!("should deny");
    };
    assert_eq!(headless(&policy, "bash", Effect::Execute, denied), reason);
}

#[test]
fn long_commands_are_shortened_in_reasons() {
    let policy = policy(PermissionMode::Default, &[], &[], &[]);
    let long = format!("echo {}", "x".repeat(1000));
    let Decision::Ask { reason } =
        call(&policy, "bash", Effect::Execute, json!({ "command": long }))
    else {
        panic!("should ask");
    };
    assert!(reason.len() < 300, "{reason}");
    assert!(reason.contains('…'));
}

#[test]
fn headless_refusal_of_an_mcp_tool_names_the_tool_and_server_rules() {
    let policy = policy(PermissionMode::Default, &[], &[], &[]);
    let message = headless(&policy, "mcp__time__get_time", Effect::Execute, json!({}));
    assert_eq!(
        message,
        "mcp__time__get_time needs permission in default mode. To allow it, re-run with \
         --allowedTools mcp__time__get_time (or --allowedTools mcp__time for every tool of the MCP \
         server time, or an allow rule in the settings) or --permission-mode bypassPermissions"
    );
}
