//! Unit tests of the permission policy, one file per concept; the helpers below are shared.

use super::*;
use serde_json::json;

mod bash_rules;
mod grants;
mod headless;
mod modes;
mod parsing;
mod paths;
mod precedence;
mod protected;
mod tools;

const ROOT: &str = "/work/ws";

/// The shape of a decision, so tables can compare without the wording.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Allow,
    Ask,
    Deny,
}

fn kind(decision: &Decision) -> Kind {
    match decision {
        Decision::Allow(_) => Kind::Allow,
        Decision::Ask { .. } => Kind::Ask,
        Decision::Deny { .. } => Kind::Deny,
    }
}

fn strings(rules: &[&str]) -> Vec<String> {
    rules.iter().map(|rule| rule.to_string()).collect()
}

fn policy(mode: PermissionMode, allow: &[&str], ask: &[&str], deny: &[&str]) -> Policy {
    match Rules::parse(&strings(allow), &strings(ask), &strings(deny)) {
        Ok(rules) => Policy::new(mode, rules),
        Err(error) => panic!("test rules should parse: {error}"),
    }
}

fn allowing(allow: &[&str]) -> Policy {
    policy(PermissionMode::Default, allow, &[], &[])
}

fn call(policy: &Policy, tool: &str, effect: Effect, input: Value) -> Decision {
    policy.decide(&CallInfo {
        tool,
        effect,
        input: &input,
        workspace_root: Path::new(ROOT),
    })
}

fn bash(policy: &Policy, command: &str) -> Kind {
    kind(&call(
        policy,
        "bash",
        Effect::Execute,
        json!({ "command": command }),
    ))
}

fn file(policy: &Policy, tool: &str, effect: Effect, path: &str) -> Kind {
    kind(&call(policy, tool, effect, json!({ "path": path })))
}

/// Asserts how `policy` judges a file tool's call on each path: (tool, effect, path, expected),
/// naming the case that fails.
#[track_caller]
fn check_files(policy: &Policy, cases: &[(&str, Effect, &str, Kind)]) {
    for &(tool, effect, path, expected) in cases {
        assert_eq!(
            file(policy, tool, effect, path),
            expected,
            "{tool} on {path}"
        );
    }
}

fn headless(policy: &Policy, tool: &str, effect: Effect, input: Value) -> String {
    policy.headless_refusal(&CallInfo {
        tool,
        effect,
        input: &input,
        workspace_root: Path::new(ROOT),
    })
}

/// The commands the shell analysis finds in `command`, as lines.
fn parts(command: &str) -> Vec<String> {
    troupe_tools::shell::analyze(command)
        .commands
        .iter()
        .map(troupe_tools::shell::Command::line)
        .collect()
}

fn policy_with_deny(rule: &str) -> Policy {
    policy(PermissionMode::BypassPermissions, &[], &[], &[rule])
}
