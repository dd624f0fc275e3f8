//! Bash rules: prefixes, compound commands, substitutions, redirections and wrappers.

use super::*;

#[test]
fn exact_bash_rule_matches_only_that_command() {
    let policy = allowing(&["Bash(git status)"]);
    assert_eq!(bash(&policy, "git status"), Kind::Allow);
    assert_eq!(bash(&policy, "  git status  "), Kind::Allow);
    assert_eq!(bash(&policy, "git status --short"), Kind::Ask);
    assert_eq!(bash(&policy, "git statuses"), Kind::Ask);
    assert_eq!(bash(&policy, "git"), Kind::Ask);
}

#[test]
fn colon_star_is_a_word_prefix() {
    let policy = allowing(&["Bash(npm run test:*)"]);
    assert_eq!(bash(&policy, "npm run test"), Kind::Allow);
    assert_eq!(bash(&policy, "npm run test -- --watch"), Kind::Allow);
    assert_eq!(bash(&policy, "npm run testing"), Kind::Ask);
    assert_eq!(bash(&policy, "npm run build"), Kind::Ask);
    assert_eq!(bash(&policy, "npm run"), Kind::Ask);
}

#[test]
fn trailing_space_star_means_the_same_as_colon_star() {
    let colon = allowing(&["Bash(npm run test:*)"]);
    let space = allowing(&["Bash(npm run test *)"]);
    for command in [
        "npm run test",
        "npm run test --coverage",
        "npm run testing",
        "npm test",
    ] {
        assert_eq!(bash(&colon, command), bash(&space, command), "{command}");
    }
}

#[test]
fn star_without_a_space_is_a_plain_text_prefix() {
    let policy = allowing(&["Bash(ls*)"]);
    assert_eq!(bash(&policy, "ls -la"), Kind::Allow);
    assert_eq!(bash(&policy, "lsof"), Kind::Allow);
    assert_eq!(bash(&policy, "cat x"), Kind::Ask);
}

#[test]
fn star_specifier_and_bare_tool_match_every_command() {
    for rule in ["Bash", "Bash(*)", "bash"] {
        let policy = allowing(&[rule]);
        assert_eq!(bash(&policy, "rm -rf build && make"), Kind::Allow, "{rule}");
        assert_eq!(bash(&policy, "echo 'unterminated"), Kind::Allow, "{rule}");
    }
}

#[test]
fn compound_commands_need_every_part_allowed() {
    let policy = allowing(&["Bash(git status)", "Bash(ls:*)"]);
    for allowed in [
        "git status && ls",
        "git status; ls -la",
        "git status || ls",
        "ls | ls",
        "git status\nls src",
        "ls & git status",
        "ls |& ls",
    ] {
        assert_eq!(bash(&policy, allowed), Kind::Allow, "{allowed:?}");
    }
    for asked in [
        "git status && rm -rf x",
        "ls; rm -rf x",
        "ls || curl evil.sh",
        "ls | sh",
        "ls\nrm x",
        "rm x & ls",
    ] {
        assert_eq!(bash(&policy, asked), Kind::Ask, "{asked:?}");
    }
}

#[test]
fn a_deny_rule_matching_any_part_denies_the_whole_command() {
    let policy = policy(
        PermissionMode::BypassPermissions,
        &["Bash"],
        &[],
        &["Bash(rm:*)"],
    );
    for denied in [
        "rm -rf build",
        "ls && rm -rf build",
        "ls | rm x",
        "echo ok; rm x",
        "echo $(rm -rf x)",
        "echo `rm -rf x`",
        "echo \"$(rm -rf x)\"",
        "(cd build; rm x)",
        "if true; then rm x; fi",
        "{ rm x; }",
        "cat <(rm x)",
        "echo $(( $(rm x) + 1 ))",
    ] {
        assert_eq!(bash(&policy, denied), Kind::Deny, "{denied:?}");
    }
    for allowed in [
        "ls -la",
        "echo 'rm -rf x'",
        "echo rm",
        "rmdir x",
        "ls # rm -rf",
    ] {
        assert_eq!(bash(&policy, allowed), Kind::Allow, "{allowed:?}");
    }
}

#[test]
fn commands_inside_substitutions_must_be_allowed_too() {
    let policy = allowing(&["Bash(echo:*)", "Bash(date)"]);
    assert_eq!(bash(&policy, "echo $(date)"), Kind::Allow);
    assert_eq!(bash(&policy, "echo `date`"), Kind::Allow);
    assert_eq!(bash(&policy, "echo \"today is $(date)\""), Kind::Allow);
    assert_eq!(bash(&policy, "echo $(rm -rf x)"), Kind::Ask);
    assert_eq!(bash(&policy, "echo `curl x | sh`"), Kind::Ask);
    assert_eq!(bash(&policy, "echo \"$(rm -rf x)\""), Kind::Ask);
    assert_eq!(bash(&policy, "echo $(echo $(rm x))"), Kind::Ask);
    // Single quotes make it text, not a command.
    assert_eq!(bash(&policy, "echo '$(rm -rf x)'"), Kind::Allow);
    // Arithmetic is not a command.
    assert_eq!(bash(&policy, "echo $((1 + 2))"), Kind::Allow);
}

#[test]
fn a_prefix_rule_does_not_grant_writing_a_file_through_redirection() {
    let policy = allowing(&["Bash(cat:*)", "Bash(cat a > b.txt)"]);
    assert_eq!(bash(&policy, "cat a > c.txt"), Kind::Ask);
    assert_eq!(bash(&policy, "cat a >> c.txt"), Kind::Ask);
    assert_eq!(bash(&policy, "cat a &> c.txt"), Kind::Ask);
    assert_eq!(bash(&policy, "cat a > b.txt"), Kind::Allow);
    assert_eq!(bash(&policy, "cat a > /dev/null 2>&1"), Kind::Allow);
    assert_eq!(bash(&policy, "cat a 2>/dev/null"), Kind::Allow);
    assert_eq!(bash(&policy, "cat a >&2"), Kind::Allow);
    assert_eq!(bash(&policy, "cat '>' x"), Kind::Allow);
}

#[test]
fn a_line_the_splitter_cannot_follow_or_an_empty_one_is_never_granted_by_narrow_rules() {
    let policy = allowing(&["Bash(echo:*)", "Bash"]);
    assert_eq!(
        bash(&policy, "echo \"unterminated"),
        Kind::Allow,
        "bare Bash allows anything"
    );
    let narrow = allowing(&["Bash(echo:*)", "Bash(git status)"]);
    assert_eq!(bash(&narrow, "echo \"unterminated"), Kind::Ask);
    assert_eq!(bash(&narrow, "echo $(rm x"), Kind::Ask);
    assert_eq!(bash(&narrow, ""), Kind::Ask);
    assert_eq!(
        kind(&call(&narrow, "bash", Effect::Execute, json!({}))),
        Kind::Ask
    );
}

#[test]
fn the_analysis_finds_every_simple_command() {
    assert_eq!(
        parts("a && b || c; d | e\nf & g"),
        ["a", "b", "c", "d", "e", "f", "g"]
    );
    assert_eq!(
        parts("echo $(date) `whoami`"),
        ["date", "whoami", "echo $(date) `whoami`"]
    );
    assert_eq!(parts("(cd x && make) 2>/dev/null"), ["cd x", "make"]);
    // The loop header runs nothing; its body does.
    assert_eq!(parts("for f in *.rs; do rustfmt $f; done"), ["rustfmt $f"]);
    // Quotes are removed; words are requoted where needed.
    assert_eq!(parts("echo 'a && b' \"c; d\""), ["echo 'a && b' 'c; d'"]);
    assert_eq!(parts("make 2>&1 | tee log"), ["make 2>&1", "tee log"]);
    assert_eq!(parts("ls # && rm x\npwd"), ["ls", "pwd"]);
    assert_eq!(parts("echo a\\;b"), ["echo 'a;b'"]);
    let redirects = |command: &str| -> Vec<Redirect> {
        troupe_tools::shell::analyze(command)
            .commands
            .iter()
            .map(|c| c.redirect)
            .collect()
    };
    assert_eq!(
        redirects("(cd x && make) > log; ls"),
        [Redirect::File, Redirect::File, Redirect::None]
    );
    assert_eq!(
        redirects("sort x > y; ls 2>/dev/null"),
        [Redirect::File, Redirect::None]
    );
    assert!(!troupe_tools::shell::analyze("echo 'open").is_understood());
    assert!(troupe_tools::shell::analyze("echo ok").is_understood());
}

#[test]
fn every_spelling_of_a_denied_program_is_denied_naming_the_rule() {
    let deny = policy(
        PermissionMode::BypassPermissions,
        &["Bash"],
        &[],
        &["Bash(rm:*)"],
    );
    for spelling in [
        "\"rm\" x",
        "r''m x",
        "\\rm x",
        "/bin/rm x",
        "/usr/bin/env rm x",
        "env -i rm x",
        "stdbuf -o0 rm x",
        "command rm x",
        "xargs rm",
        "find . -exec rm {} +",
    ] {
        let Decision::Deny { reason } = call(
            &deny,
            "bash",
            Effect::Execute,
            json!({ "command": spelling }),
        ) else {
            panic!("not denied: {spelling:?}");
        };
        assert!(reason.contains("`Bash(rm:*)`"), "{reason}");
        assert!(!reason.contains("could not be analysed"), "{reason}");
    }
}

#[test]
fn a_command_that_cannot_be_analysed_is_denied_by_any_bash_deny_rule_saying_why() {
    let deny = policy(
        PermissionMode::BypassPermissions,
        &["Bash"],
        &[],
        &["Bash(rm:*)"],
    );
    for (command, why) in [
        ("${X:-rm} x", "not a plain word"),
        ("a=rm; $a x", "not a plain word"),
        ("trap 'rm x' EXIT", "`trap` runs code"),
        ("f(){ g; }; f", "function definition"),
        ("eval rm x", "`eval` runs code"),
        ("$(echo rm) x", "not a plain word"),
        ("echo 'unterminated", "could not be parsed"),
    ] {
        let Decision::Deny { reason } = call(
            &deny,
            "bash",
            Effect::Execute,
            json!({ "command": command }),
        ) else {
            panic!("not denied: {command:?}");
        };
        assert!(reason.contains("`Bash(rm:*)`"), "{reason}");
        assert!(reason.contains("could not be analysed"), "{reason}");
        assert!(reason.contains(why), "{command:?}: {reason}");
    }
    // Without a Bash deny rule, an unanalysable command is only ever asked about.
    let plain = allowing(&["Bash(echo:*)"]);
    assert_eq!(bash(&plain, "eval echo hi"), Kind::Ask);
}

#[test]
fn commands_run_by_wrappers_are_judged_too() {
    let deny = policy(
        PermissionMode::BypassPermissions,
        &["Bash"],
        &[],
        &["Bash(rm:*)"],
    );
    for denied in [
        "sudo rm -rf /",
        "sudo -u bob rm x",
        "FOO=1 BAR=2 rm x",
        "timeout 5 rm x",
        "nice -n 10 rm x",
        "nohup rm x &",
        "env -i PATH=/bin rm x",
        "find . -name '*.o' | xargs rm",
        "bash -c 'ls && rm x'",
        "sh -e -c \"rm x\"",
        "eval \"rm x\"",
    ] {
        assert_eq!(bash(&deny, denied), Kind::Deny, "{denied:?}");
    }
    assert_eq!(bash(&deny, "sudo ls"), Kind::Allow);

    let wrapper_only = allowing(&["Bash(timeout:*)", "Bash(sudo:*)"]);
    assert_eq!(bash(&wrapper_only, "timeout 5 rm x"), Kind::Ask);
    assert_eq!(bash(&wrapper_only, "sudo rm x"), Kind::Ask);
    let both = allowing(&["Bash(timeout:*)", "Bash(cargo test:*)"]);
    assert_eq!(bash(&both, "timeout 600 cargo test -q"), Kind::Allow);
}

#[test]
fn compound_statement_keywords_are_not_commands() {
    assert_eq!(
        parts("while read l; do echo $l; done < list"),
        ["read l", "echo $l"]
    );
    assert_eq!(
        parts("if true; then make; else exit 1; fi"),
        ["true", "make", "exit 1"]
    );
    assert_eq!(parts("! grep -q x f"), ["grep -q x f"]);
}
