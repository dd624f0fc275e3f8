use super::*;
use serde_json::json;

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
        Decision::Allow => Kind::Allow,
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

fn headless(policy: &Policy, tool: &str, effect: Effect, input: Value) -> String {
    policy.headless_refusal(&CallInfo {
        tool,
        effect,
        input: &input,
        workspace_root: Path::new(ROOT),
    })
}

fn parts(command: &str) -> Vec<String> {
    split_command(command)
        .parts
        .into_iter()
        .map(|part| part.text)
        .collect()
}

// ---- modes ----

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
    // A bash command the tool judged read-only still runs.
    let read_only = call(&policy, "bash", Effect::ReadOnly, json!({"command": "ls"}));
    assert_eq!(read_only, Decision::Allow);
}

// ---- bash rules ----

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
fn splitter_finds_every_simple_command() {
    assert_eq!(
        parts("a && b || c; d | e\nf & g"),
        ["a", "b", "c", "d", "e", "f", "g"]
    );
    assert_eq!(
        parts("echo $(date) `whoami`"),
        ["date", "whoami", "echo $(date) `whoami`"]
    );
    assert_eq!(parts("(cd x && make) 2>/dev/null"), ["cd x", "make"]);
    let grouped = split_command("(cd x && make) > log; ls");
    let redirects: Vec<Redirect> = grouped.parts.iter().map(|p| p.redirect).collect();
    assert_eq!(redirects, [Redirect::File, Redirect::File, Redirect::None]);
    assert_eq!(
        parts("for f in *.rs; do rustfmt $f; done"),
        ["for f in *.rs", "rustfmt $f"]
    );
    assert_eq!(parts("echo 'a && b' \"c; d\""), ["echo 'a && b' \"c; d\""]);
    assert_eq!(parts("make 2>&1 | tee log"), ["make 2>&1", "tee log"]);
    assert_eq!(parts("ls # && rm x\npwd"), ["ls", "pwd"]);
    assert_eq!(parts("echo a\\;b"), ["echo a\\;b"]);
    let split = split_command("echo 'open");
    assert_eq!(split.syntax, Syntax::Unterminated);
    assert_eq!(split_command("echo ok").syntax, Syntax::Complete);
    let redirect = split_command("sort x > y; ls 2>/dev/null");
    let redirects: Vec<Redirect> = redirect.parts.iter().map(|p| p.redirect).collect();
    assert_eq!(redirects, [Redirect::File, Redirect::None]);
}

// ---- file rules ----

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
    assert_eq!(
        file(&policy, "edit_file", Effect::Edit, "src/lib.rs"),
        Kind::Allow
    );
    assert_eq!(
        file(&policy, "edit_file", Effect::Edit, "src/a/lib.rs"),
        Kind::Ask
    );
}

#[test]
fn a_directory_pattern_covers_what_is_inside_it() {
    let policy = allowing(&["Edit(build)", "Edit(./docs/)"]);
    assert_eq!(
        file(&policy, "write_file", Effect::Edit, "build/out/x"),
        Kind::Allow
    );
    assert_eq!(
        file(&policy, "write_file", Effect::Edit, "crates/a/build/x"),
        Kind::Allow
    );
    assert_eq!(
        file(&policy, "write_file", Effect::Edit, "docs/guide.md"),
        Kind::Allow
    );
    assert_eq!(
        file(&policy, "write_file", Effect::Edit, "crates/docs/x.md"),
        Kind::Ask
    );
}

#[test]
fn read_rules_anchor_like_gitignore() {
    let anchored = policy(PermissionMode::Default, &[], &[], &["Read(./.env)"]);
    assert_eq!(
        file(&anchored, "read_file", Effect::ReadOnly, ".env"),
        Kind::Deny
    );
    assert_eq!(
        file(&anchored, "read_file", Effect::ReadOnly, "./.env"),
        Kind::Deny
    );
    assert_eq!(
        file(&anchored, "read_file", Effect::ReadOnly, "/work/ws/.env"),
        Kind::Deny
    );
    assert_eq!(
        file(&anchored, "read_file", Effect::ReadOnly, "app/.env"),
        Kind::Allow
    );
    assert_eq!(
        file(&anchored, "read_file", Effect::ReadOnly, ".env.example"),
        Kind::Allow
    );

    let anywhere = policy(
        PermissionMode::Default,
        &[],
        &[],
        &["Read(.env)", "Read(*.pem)"],
    );
    assert_eq!(
        file(&anywhere, "read_file", Effect::ReadOnly, "app/.env"),
        Kind::Deny
    );
    assert_eq!(
        file(&anywhere, "read_file", Effect::ReadOnly, "a/b/key.pem"),
        Kind::Deny
    );
    assert_eq!(
        file(&anywhere, "read_file", Effect::ReadOnly, "/other/.env"),
        Kind::Deny
    );
    assert_eq!(
        file(&anywhere, "read_file", Effect::ReadOnly, "a/b/key.pem.txt"),
        Kind::Allow
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
    assert_eq!(
        file(&policy, "read_file", Effect::ReadOnly, "/etc/passwd"),
        Kind::Deny
    );
    assert_eq!(
        file(&policy, "read_file", Effect::ReadOnly, "etc/passwd"),
        Kind::Allow
    );
    let slash = policy_with_deny("Read(/etc/**)");
    assert_eq!(
        file(&slash, "read_file", Effect::ReadOnly, "etc/passwd"),
        Kind::Deny
    );
    assert_eq!(
        file(&slash, "read_file", Effect::ReadOnly, "/etc/passwd"),
        Kind::Allow
    );
}

fn policy_with_deny(rule: &str) -> Policy {
    policy(PermissionMode::BypassPermissions, &[], &[], &[rule])
}

#[test]
fn read_rules_also_cover_glob_and_grep() {
    let policy = policy_with_deny("Read(secrets/**)");
    assert_eq!(
        file(&policy, "grep", Effect::ReadOnly, "secrets/keys"),
        Kind::Deny
    );
    assert_eq!(
        file(&policy, "glob", Effect::ReadOnly, "./secrets/old"),
        Kind::Deny
    );
    assert_eq!(file(&policy, "grep", Effect::ReadOnly, "src"), Kind::Allow);
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

// ---- mcp and other tools ----

#[test]
fn mcp_rules_match_a_tool_or_a_whole_server() {
    let server = allowing(&["mcp__github__*"]);
    let mcp = |policy: &Policy, tool: &str| kind(&call(policy, tool, Effect::Execute, json!({})));
    assert_eq!(mcp(&server, "mcp__github__create_issue"), Kind::Allow);
    assert_eq!(mcp(&server, "mcp__gitlab__create_issue"), Kind::Ask);
    assert_eq!(mcp(&server, "mcp__githubx__tool"), Kind::Ask);
    let short = allowing(&["mcp__github"]);
    assert_eq!(mcp(&short, "mcp__github__list"), Kind::Allow);
    let exact = allowing(&["mcp__github__get_issue"]);
    assert_eq!(mcp(&exact, "mcp__github__get_issue"), Kind::Allow);
    assert_eq!(mcp(&exact, "mcp__github__close_issue"), Kind::Ask);
    let denied = policy(
        PermissionMode::BypassPermissions,
        &[],
        &[],
        &["mcp__github__*"],
    );
    assert_eq!(mcp(&denied, "mcp__github__get_issue"), Kind::Deny);
}

#[test]
fn specifiers_troupe_cannot_read_parse_but_match_nothing() {
    let policy = policy(
        PermissionMode::BypassPermissions,
        &[],
        &[],
        &["WebFetch(domain:example.com)"],
    );
    assert_eq!(
        kind(&call(
            &policy,
            "WebFetch",
            Effect::Execute,
            json!({"url": "https://example.com"})
        )),
        Kind::Allow
    );
    let tool_wide = policy_with_deny("WebFetch");
    assert_eq!(
        kind(&call(&tool_wide, "WebFetch", Effect::ReadOnly, json!({}))),
        Kind::Deny
    );
}

#[test]
fn coordination_tools_run_in_every_mode_unless_denied() {
    for mode in PermissionMode::ALL {
        let open = policy(mode, &[], &[], &[]);
        assert_eq!(
            kind(&call(&open, "send_message", Effect::Coordinate, json!({}))),
            Kind::Allow
        );
        let closed = policy(mode, &[], &[], &["send_message"]);
        assert_eq!(
            kind(&call(
                &closed,
                "send_message",
                Effect::Coordinate,
                json!({})
            )),
            Kind::Deny
        );
    }
}

// ---- precedence ----

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

// ---- parsing ----

#[test]
fn malformed_rules_are_errors_naming_the_rule() {
    for bad in [
        "Bash(foo",
        "Bash(foo)bar",
        "(ls)",
        "Ba sh",
        "Bash()",
        "Bash(:*)",
        "Bash(foo:* bar)",
        "mcp__github__x(y)",
        "mcp__*",
        "mcp____x",
        "Bash*",
        "Edit(src/[)",
    ] {
        let error = Rule::parse(bad).err().map(|e| e.to_string());
        let Some(message) = error else {
            panic!("`{bad}` should be malformed");
        };
        assert!(message.contains(&format!("`{bad}`")), "{message}");
    }
    let result = Rules::parse(
        &strings(&["Bash(ls:*)"]),
        &[],
        &strings(&["Edit", "Bash(rm"]),
    );
    let message = result.err().map(|e| e.to_string()).unwrap_or_default();
    assert!(message.contains("`Bash(rm`"), "{message}");
}

#[test]
fn rules_read_from_settings_json_and_print_as_written() {
    let parsed: Result<Vec<Rule>, _> =
        serde_json::from_value(json!(["Bash(npm run test:*)", "Edit(src/**)"]));
    let texts: Vec<String> = parsed
        .unwrap_or_default()
        .iter()
        .map(Rule::to_string)
        .collect();
    assert_eq!(texts, ["Bash(npm run test:*)", "Edit(src/**)"]);
    assert!(serde_json::from_value::<Vec<Rule>>(json!(["Bash(oops"])).is_err());
    assert_eq!(
        serde_json::to_value("Read(./.env)".parse::<Rule>().ok()).ok(),
        Some(json!("Read(./.env)"))
    );
}

#[test]
fn split_rule_list_splits_outside_parentheses_only() {
    assert_eq!(
        split_rule_list("Bash(git diff:*) Edit"),
        ["Bash(git diff:*)", "Edit"]
    );
    assert_eq!(
        split_rule_list("Bash(git log:*),Read , mcp__gh__*  Bash(echo (a, b))"),
        ["Bash(git log:*)", "Read", "mcp__gh__*", "Bash(echo (a, b))"]
    );
    assert!(split_rule_list(" , ").is_empty());
}

#[test]
fn rules_extend_with_a_later_source() {
    let mut rules = Rules::default();
    let cli = Rules::parse(&strings(&["Bash(make:*)"]), &[], &strings(&["Bash(rm:*)"]));
    rules.extend(cli.unwrap_or_default());
    let policy = Policy::new(PermissionMode::Default, rules);
    assert_eq!(bash(&policy, "make all"), Kind::Allow);
    assert_eq!(bash(&policy, "make && rm x"), Kind::Deny);
}

// ---- headless help ----

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
