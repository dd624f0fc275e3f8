//! Protected files: git's files, settings, `.mcp.json` and hook scripts are written only when an
//! allow rule names the exact file (or in bypassPermissions), whatever the path pattern or mode.

use super::*;
use std::os::unix::fs::symlink;
use std::path::PathBuf;

const PROTECTED: [&str; 10] = [
    ".git/config",
    ".git/hooks/pre-commit",
    "./.git/config",
    "src/../.git/config",
    "/work/ws/.git/config",
    ".git",
    ".troupe/settings.json",
    ".claude/settings.local.json",
    ".mcp.json",
    "nested/project/.claude/settings.json",
];

fn write(policy: &Policy, path: &str) -> Kind {
    file(policy, "write_file", Effect::Edit, path)
}

#[test]
fn accept_edits_asks_before_writing_a_protected_file() {
    let policy = policy(PermissionMode::AcceptEdits, &[], &[], &[]);
    for path in PROTECTED
        .into_iter()
        .chain([".GIT/config", ".troupe/settings.local.json"])
    {
        assert_eq!(write(&policy, path), Kind::Ask, "{path}");
        assert_eq!(
            file(&policy, "edit_file", Effect::Edit, path),
            Kind::Ask,
            "{path}"
        );
    }
    for ordinary in [
        "src/main.rs",
        ".gitignore",
        ".github/workflows/ci.yml",
        "git/config",
    ] {
        assert_eq!(write(&policy, ordinary), Kind::Allow, "{ordinary}");
    }
    // Reading them is not writing them.
    assert_eq!(
        file(&policy, "read_file", Effect::ReadOnly, ".git/config"),
        Kind::Allow
    );
}

#[test]
fn a_path_pattern_alone_never_allows_a_protected_file() {
    for rules in [
        &["Edit"][..],
        &["Edit(**)"],
        &["Edit(.git/**)"],
        &["Edit(*.json)"],
        &["Edit(.git/conf*)"],
        &["Edit(config)"],
    ] {
        for mode in [PermissionMode::Default, PermissionMode::AcceptEdits] {
            let policy = policy(mode, rules, &[], &[]);
            assert_eq!(write(&policy, ".git/config"), Kind::Ask, "{rules:?} {mode}");
            assert_eq!(write(&policy, ".mcp.json"), Kind::Ask, "{rules:?} {mode}");
        }
    }
    let policy = allowing(&["Edit(**)"]);
    assert_eq!(write(&policy, "src/main.rs"), Kind::Allow);
}

#[test]
fn an_allow_rule_naming_the_exact_file_allows_it_and_only_it() {
    for rule in [
        "Edit(.git/config)",
        "Edit(./.git/config)",
        "Edit(/.git/config)",
        "Edit(//work/ws/.git/config)",
        "Write(.git/config)",
    ] {
        for mode in [PermissionMode::Default, PermissionMode::AcceptEdits] {
            let policy = policy(mode, &[rule], &[], &[]);
            assert_eq!(write(&policy, ".git/config"), Kind::Allow, "{rule} {mode}");
            assert_eq!(
                write(&policy, ".git/hooks/pre-commit"),
                Kind::Ask,
                "{rule} {mode}"
            );
        }
    }
    // An absolute path spelled with one slash names the file too; acceptEdits then allows it.
    let policy = policy(
        PermissionMode::AcceptEdits,
        &["Edit(/work/ws/.git/config)"],
        &[],
        &[],
    );
    assert_eq!(write(&policy, ".git/config"), Kind::Allow);
    let policy = allowing(&["Edit(.mcp.json)", "Edit(.claude/settings.json)"]);
    assert_eq!(write(&policy, ".mcp.json"), Kind::Allow);
    assert_eq!(write(&policy, ".claude/settings.json"), Kind::Allow);
    assert_eq!(write(&policy, "sub/.mcp.json"), Kind::Ask);
}

#[test]
fn bypass_still_allows_protected_files_but_deny_rules_and_plan_mode_hold() {
    let bypass = policy(PermissionMode::BypassPermissions, &[], &[], &[]);
    for path in PROTECTED {
        assert_eq!(write(&bypass, path), Kind::Allow, "{path}");
    }
    let plan = policy(PermissionMode::Plan, &["Edit(.git/config)"], &[], &[]);
    assert_eq!(write(&plan, ".git/config"), Kind::Deny);
    let denied = policy_with_deny("Edit(.git/**)");
    assert_eq!(write(&denied, ".git/config"), Kind::Deny);
}

#[test]
fn the_refusal_says_the_file_is_protected_and_how_to_allow_it() {
    let policy = policy(PermissionMode::AcceptEdits, &["Edit(**)"], &[], &[]);
    let Decision::Ask { reason } = call(
        &policy,
        "write_file",
        Effect::Edit,
        json!({"path": "./.git/config"}),
    ) else {
        panic!("should ask");
    };
    assert!(
        reason.contains("`.git/config`, a protected file"),
        "{reason}"
    );
    let message = headless(
        &policy,
        "write_file",
        Effect::Edit,
        json!({"path": "./.git/config"}),
    );
    assert!(message.starts_with(&reason), "{message}");
    assert!(
        message.contains("--allowedTools \"Edit(.git/config)\""),
        "{message}"
    );
    assert!(message.contains("bypassPermissions"), "{message}");
}

/// A real workspace, so the check can see through symlinks.
struct RealWorkspace {
    _dir: tempfile::TempDir,
    root: PathBuf,
}

impl RealWorkspace {
    fn new() -> RealWorkspace {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join(".git/hooks")).unwrap();
        std::fs::write(root.join(".git/config"), "[core]\n").unwrap();
        RealWorkspace { _dir: dir, root }
    }

    fn decide(&self, policy: &Policy, path: &str) -> Decision {
        policy.decide(&CallInfo {
            tool: "write_file",
            effect: Effect::Edit,
            input: &json!({ "path": path }),
            workspace_root: &self.root,
        })
    }
}

#[test]
fn a_symlinked_directory_or_file_does_not_hide_a_protected_file() {
    let ws = RealWorkspace::new();
    symlink(".git", ws.root.join("cfg")).unwrap();
    symlink(ws.root.join(".git/hooks"), ws.root.join("hooks")).unwrap();
    symlink(".git/config", ws.root.join("innocent.txt")).unwrap();
    std::fs::create_dir(ws.root.join("src")).unwrap();
    let policy = policy(PermissionMode::AcceptEdits, &["Edit(**)"], &[], &[]);
    for path in [
        "cfg/config",
        "./cfg/../cfg/config",
        "hooks/post-checkout",
        "innocent.txt",
    ] {
        let decision = ws.decide(&policy, path);
        let Decision::Ask { reason } = &decision else {
            panic!("{path}: {decision:?}");
        };
        assert!(reason.contains("protected file"), "{reason}");
    }
    let Decision::Ask { reason } = ws.decide(&policy, "cfg/config") else {
        panic!("should ask");
    };
    assert!(reason.contains("`.git/config`"), "{reason}");
    // Naming the real file allows the write, by whichever path it comes.
    let named = policy_in(PermissionMode::AcceptEdits, &["Edit(.git/config)"]);
    assert!(matches!(
        ws.decide(&named, "cfg/config"),
        Decision::Allow(_)
    ));
    assert!(matches!(
        ws.decide(&policy, "src/new.rs"),
        Decision::Allow(_)
    ));
}

#[test]
fn a_worktree_git_file_and_extra_protected_paths_are_protected() {
    let ws = RealWorkspace::new();
    std::fs::create_dir_all(ws.root.join("wt/scripts")).unwrap();
    std::fs::write(ws.root.join("wt/.git"), "gitdir: ../.git/worktrees/wt\n").unwrap();
    let mut policy = policy_in(PermissionMode::AcceptEdits, &[]);
    assert!(matches!(
        ws.decide(&policy, "wt/.git"),
        Decision::Ask { .. }
    ));
    assert!(matches!(
        ws.decide(&policy, "wt/scripts/hook.sh"),
        Decision::Allow(_)
    ));
    policy.protected = ProtectedPaths::new([
        PathBuf::from("wt/scripts/hook.sh"),
        ws.root.join("wt/scripts/other.sh"),
    ]);
    for path in [
        "wt/scripts/hook.sh",
        "wt/scripts/other.sh",
        "wt/../wt/scripts/hook.sh",
    ] {
        let decision = ws.decide(&policy, path);
        let Decision::Ask { reason } = &decision else {
            panic!("{path}: {decision:?}");
        };
        assert!(reason.contains("hook script"), "{reason}");
    }
}

fn policy_in(mode: PermissionMode, allow: &[&str]) -> Policy {
    policy(mode, allow, &[], &[])
}

#[test]
fn the_hook_scripts_settings_name_are_protected_paths() {
    let settings: troupe_settings::Settings = serde_json::from_str(
        r#"{"hooks": {
            "PreToolUse": [{"matcher": "Bash", "hooks": [
                {"type": "command", "command": "\"$CLAUDE_PROJECT_DIR\"/.claude/hooks/check.sh --strict"},
                {"type": "command", "command": "python3 ${TROUPE_PROJECT_DIR}/tools/gate.py | jq ."}
            ]}],
            "SessionStart": [{"hooks": [{"type": "command", "command": "scripts/start.sh && echo ok"}]}]
        }}"#,
    )
    .unwrap();
    let protected = ProtectedPaths::from_hooks(&settings.hooks);
    let paths: Vec<String> = protected
        .paths()
        .iter()
        .map(|p| p.display().to_string())
        .collect();
    for expected in [
        ".claude/hooks/check.sh",
        "tools/gate.py",
        "scripts/start.sh",
    ] {
        assert!(paths.iter().any(|p| p == expected), "{expected}: {paths:?}");
    }
    for program in ["python3", "jq", "echo", "ok", "--strict", "."] {
        assert!(!paths.iter().any(|p| p == program), "{program}: {paths:?}");
    }
    // And the permission layer asks before a write to one.
    let ws = RealWorkspace::new();
    let mut policy = policy_in(PermissionMode::AcceptEdits, &[]);
    assert!(matches!(
        ws.decide(&policy, "tools/gate.py"),
        Decision::Allow(_)
    ));
    policy.protected = protected;
    assert!(matches!(
        ws.decide(&policy, "tools/gate.py"),
        Decision::Ask { .. }
    ));
}
