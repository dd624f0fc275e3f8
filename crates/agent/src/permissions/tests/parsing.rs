//! Parsing rules from flags and settings, and reporting malformed ones.

use super::*;

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

#[test]
fn mcp_rules_name_their_server() {
    for (text, server) in [
        ("mcp__time", Some("time")),
        ("mcp__time__*", Some("time")),
        ("mcp__time__get_time", Some("time")),
        ("mcp__my-srv__x", Some("my-srv")),
        ("Bash(ls:*)", None),
        ("Edit", None),
    ] {
        assert_eq!(Rule::parse(text).unwrap().mcp_server(), server, "{text}");
    }
}
