//! A hook's `if`: a permission rule (`Bash(git commit:*)`, `Edit(src/**)`) the tool call must
//! match for the hook to run. It is matched by the permission engine itself: the rule, as a
//! deny rule of an otherwise open policy, would refuse the call. So every spelling the engine
//! knows counts (`/usr/bin/git commit`, `sudo git commit`), and a command line the analysis
//! cannot pin down matches, which runs a guarding hook rather than skipping it.

use serde_json::Value;
use std::path::Path;
use troupe_agent::permissions::{CallInfo, Decision, PermissionMode, Policy, Rules};
use troupe_tools::Effect;

/// Whether the tool call `tool` with `input` matches the rule `condition`. A rule that does not
/// parse matches every call (the hook runs, and troupe says why once).
pub(crate) fn matches(condition: &str, tool: &str, input: &Value, project_dir: &Path) -> bool {
    let rules = match Rules::parse(&[], &[], &[condition.to_string()]) {
        Ok(rules) => rules,
        Err(err) => {
            tracing::warn!(condition, error = %err, "a hook's `if` is not a permission rule; the hook runs on every call");
            return true;
        }
    };
    let policy = Policy::new(PermissionMode::BypassPermissions, rules);
    let call = CallInfo {
        tool,
        effect: effect_of(tool),
        input,
        workspace_root: project_dir,
    };
    matches!(policy.decide(&call), Decision::Deny { .. })
}

/// What a tool does, as far as rule matching goes.
fn effect_of(tool: &str) -> Effect {
    match tool {
        "write_file" | "edit_file" | "notebook_edit" => Effect::Edit,
        "read_file" | "glob" | "grep" => Effect::ReadOnly,
        _ => Effect::Execute,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_rule_matches_the_calls_the_permission_engine_would_match() {
        let root = Path::new("/work/ws");
        let bash = |command: &str| json!({ "command": command });
        let commit = "Bash(git commit:*)";
        assert!(matches(commit, "bash", &bash("git commit -m x"), root));
        assert!(matches(
            commit,
            "bash",
            &bash("cd sub && git commit -q"),
            root
        ));
        assert!(!matches(commit, "bash", &bash("git status"), root));
        assert!(!matches(commit, "bash", &bash("ls"), root));
        assert!(!matches(commit, "write_file", &json!({"path": "a"}), root));
        let edit = "Edit(src/**)";
        assert!(matches(
            edit,
            "write_file",
            &json!({"path": "src/a.rs"}),
            root
        ));
        assert!(!matches(
            edit,
            "write_file",
            &json!({"path": "docs/a.md"}),
            root
        ));
        assert!(matches("Bash(((", "bash", &bash("ls"), root));
    }
}
