//! File rules: globs matched against workspace-relative and absolute paths.

use super::*;

#[test]
fn edit_globs_match_workspace_relative_paths() {
    let policy = allowing(&["Edit(src/**)"]);
    for allowed in [
        "src/main.rs",
        "src/a/b/c.rs",
        "./src/x.rs",
        "/work/ws/src/x.rs",
        "docs/../src/x.rs",
    ] {
        assert_eq!(
            file(&policy, "write_file", Effect::Edit, allowed),
            Kind::Allow,
            "{allowed}"
        );
    }
    for asked in [
        "docs/x.md",
        "src/../secret",
        "other/src/x.rs",
        "/elsewhere/src/x.rs",
        "../ws2/src/x",
    ] {
        assert_eq!(
            file(&policy, "edit_file", Effect::Edit, asked),
            Kind::Ask,
            "{asked}"
        );
    }
}

#[test]
fn single_star_stays_within_one_directory() {
    let policy = allowing(&["Edit(src/*.rs)"]);
    check_files(
        &policy,
        &[
            ("edit_file", Effect::Edit, "src/lib.rs", Kind::Allow),
            ("edit_file", Effect::Edit, "src/a/lib.rs", Kind::Ask),
        ],
    );
}

#[test]
fn a_directory_pattern_covers_what_is_inside_it() {
    let policy = allowing(&["Edit(build)", "Edit(./docs/)"]);
    check_files(
        &policy,
        &[
            ("write_file", Effect::Edit, "build/out/x", Kind::Allow),
            ("write_file", Effect::Edit, "crates/a/build/x", Kind::Allow),
            ("write_file", Effect::Edit, "docs/guide.md", Kind::Allow),
            ("write_file", Effect::Edit, "crates/docs/x.md", Kind::Ask),
        ],
    );
}

#[test]
fn read_rules_anchor_like_gitignore() {
    let anchored = policy(PermissionMode::Default, &[], &[], &["Read(./.env)"]);
    check_files(
        &anchored,
        &[
            ("read_file", Effect::ReadOnly, ".env", Kind::Deny),
            ("read_file", Effect::ReadOnly, "./.env", Kind::Deny),
            ("read_file", Effect::ReadOnly, "/work/ws/.env", Kind::Deny),
            ("read_file", Effect::ReadOnly, "app/.env", Kind::Allow),
            ("read_file", Effect::ReadOnly, ".env.example", Kind::Allow),
        ],
    );

    let anywhere = policy(
        PermissionMode::Default,
        &[],
        &[],
        &["Read(.env)", "Read(*.pem)"],
    );
    check_files(
        &anywhere,
        &[
            ("read_file", Effect::ReadOnly, "app/.env", Kind::Deny),
            ("read_file", Effect::ReadOnly, "a/b/key.pem", Kind::Deny),
            ("read_file", Effect::ReadOnly, "/other/.env", Kind::Deny),
            (
                "read_file",
                Effect::ReadOnly,
                "a/b/key.pem.txt",
                Kind::Allow,
            ),
        ],
    );
}

#[test]
fn absolute_patterns_use_a_double_slash() {
    let policy = policy(
        PermissionMode::BypassPermissions,
        &[],
        &[],
        &["Read(//etc/**)"],
    );
    check_files(
        &policy,
        &[
            ("read_file", Effect::ReadOnly, "/etc/passwd", Kind::Deny),
            ("read_file", Effect::ReadOnly, "etc/passwd", Kind::Allow),
        ],
    );
    let slash = policy_with_deny("Read(/etc/**)");
    check_files(
        &slash,
        &[
            ("read_file", Effect::ReadOnly, "etc/passwd", Kind::Deny),
            ("read_file", Effect::ReadOnly, "/etc/passwd", Kind::Allow),
        ],
    );
}

#[test]
fn read_rules_also_cover_glob_and_grep() {
    let policy = policy_with_deny("Read(secrets/**)");
    check_files(
        &policy,
        &[
            ("grep", Effect::ReadOnly, "secrets/keys", Kind::Deny),
            ("glob", Effect::ReadOnly, "./secrets/old", Kind::Deny),
            ("grep", Effect::ReadOnly, "src", Kind::Allow),
        ],
    );
    // Without a path, grep searches the root, which the rule does not name.
    assert_eq!(
        kind(&call(&policy, "grep", Effect::ReadOnly, json!({}))),
        Kind::Allow
    );
    // Read rules are not edit rules.
    assert_eq!(
        file(&policy, "write_file", Effect::Edit, "secrets/keys"),
        Kind::Allow
    );
}

#[test]
fn both_spellings_of_tool_names_work_in_rules() {
    for rule in ["Edit", "write_file", "edit_file", "Write"] {
        let policy = allowing(&[rule]);
        assert_eq!(
            file(&policy, "write_file", Effect::Edit, "a.rs"),
            Kind::Allow,
            "{rule}"
        );
        assert_eq!(
            file(&policy, "edit_file", Effect::Edit, "a.rs"),
            Kind::Allow,
            "{rule}"
        );
        assert_eq!(bash(&policy, "make"), Kind::Ask, "{rule}");
    }
    for rule in ["Bash(ls:*)", "bash(ls:*)"] {
        assert_eq!(bash(&allowing(&[rule]), "ls -l"), Kind::Allow, "{rule}");
    }
    for rule in ["edit_file(src/**)", "Edit(src/**)"] {
        let policy = allowing(&[rule]);
        assert_eq!(
            file(&policy, "write_file", Effect::Edit, "src/a"),
            Kind::Allow,
            "{rule}"
        );
        assert_eq!(
            file(&policy, "write_file", Effect::Edit, "lib/a"),
            Kind::Ask,
            "{rule}"
        );
    }
    for rule in ["read_file", "Read"] {
        let policy = policy_with_deny(rule);
        assert_eq!(
            file(&policy, "read_file", Effect::ReadOnly, "a"),
            Kind::Deny,
            "{rule}"
        );
    }
    assert_eq!(rule_name("bash"), "Bash");
    assert_eq!(rule_name("read_file"), "Read");
    assert_eq!(rule_name("glob"), "Glob");
    assert_eq!(rule_name("grep"), "Grep");
    assert_eq!(rule_name("mcp__a__b"), "mcp__a__b");
}

#[test]
fn a_file_rule_without_a_path_in_the_call_matches_only_tool_wide_rules() {
    let policy = policy(
        PermissionMode::Default,
        &["Edit(src/**)"],
        &[],
        &["Edit(secret)"],
    );
    assert_eq!(
        kind(&call(&policy, "write_file", Effect::Edit, json!({}))),
        Kind::Ask
    );
}

#[test]
fn git_commands_that_print_committed_files_are_refused_under_a_read_rule() {
    let policy = policy_with_deny("Read(secrets/**)");
    for command in [
        "git show HEAD",
        "git log -p",
        "git grep foo HEAD",
        "git diff HEAD~1 HEAD",
        "git archive HEAD",
        "git cat-file -p 1234abcd",
        "cd src && git -C .. log --patch",
    ] {
        let decision = call(
            &policy,
            "bash",
            Effect::ReadOnly,
            json!({ "command": command }),
        );
        let Decision::Deny { reason } = decision else {
            panic!("{command}: {decision:?}");
        };
        assert!(
            reason.contains("`Read(secrets/**)`") && reason.contains("object store"),
            "{command}: {reason}"
        );
    }
    for command in ["git log --oneline", "git status", "git show --stat HEAD"] {
        assert_eq!(bash(&policy, command), Kind::Allow, "{command}");
    }
    // Without a path-specific Read rule, git reads its store as before.
    for rule in ["Bash(rm:*)", "Read"] {
        let other = policy_with_deny(rule);
        assert_eq!(bash(&other, "git show HEAD"), Kind::Allow, "{rule}");
    }
}
