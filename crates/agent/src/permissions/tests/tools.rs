//! Rules for MCP tools, tools troupe cannot inspect, and coordination tools.

use super::*;

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
        &["WebSearch(site:example.com)", "WebFetch(host:example.com)"],
    );
    assert_eq!(
        kind(&call(
            &policy,
            "web_search",
            Effect::Execute,
            json!({"query": "example"})
        )),
        Kind::Allow
    );
    assert_eq!(
        kind(&call(
            &policy,
            "web_fetch",
            Effect::Execute,
            json!({"url": "https://example.com"})
        )),
        Kind::Allow
    );
    let tool_wide = policy_with_deny("WebFetch");
    assert_eq!(
        kind(&call(&tool_wide, "web_fetch", Effect::Execute, json!({}))),
        Kind::Deny
    );
}

#[test]
fn webfetch_domain_rules_match_the_host_fetched() {
    let fetch = |policy: &Policy, url: &str| {
        kind(&call(
            policy,
            "web_fetch",
            Effect::Execute,
            json!({"url": url, "prompt": "?"}),
        ))
    };
    let open = policy(PermissionMode::Default, &[], &[], &[]);
    assert_eq!(fetch(&open, "https://example.com/"), Kind::Ask);
    let exact = allowing(&["WebFetch(domain:example.com)"]);
    assert_eq!(fetch(&exact, "https://example.com/a"), Kind::Allow);
    assert_eq!(fetch(&exact, "http://EXAMPLE.com:8080/a"), Kind::Allow);
    assert_eq!(fetch(&exact, "https://docs.example.com/"), Kind::Ask);
    assert_eq!(fetch(&exact, "https://example.com.evil.net/"), Kind::Ask);
    assert_eq!(fetch(&exact, "not a url"), Kind::Ask);
    let under = allowing(&["WebFetch(domain:*.example.com)"]);
    assert_eq!(fetch(&under, "https://docs.example.com/"), Kind::Allow);
    assert_eq!(fetch(&under, "https://example.com/"), Kind::Ask);
    let tool_wide = allowing(&["WebFetch"]);
    assert_eq!(fetch(&tool_wide, "https://anything.org/"), Kind::Allow);
    let denied = policy(
        PermissionMode::BypassPermissions,
        &[],
        &[],
        &["WebFetch(domain:example.com)"],
    );
    assert_eq!(fetch(&denied, "https://example.com/"), Kind::Deny);
    assert_eq!(fetch(&denied, "https://Example.COM./"), Kind::Deny);
    assert_eq!(fetch(&denied, "https://user@example.com/"), Kind::Deny);
    assert_eq!(fetch(&denied, "https://example.org/"), Kind::Allow);
}

#[test]
fn a_headless_webfetch_refusal_suggests_the_domain_rule() {
    let open = policy(PermissionMode::Default, &[], &[], &[]);
    let refusal = headless(
        &open,
        "web_fetch",
        Effect::Execute,
        json!({"url": "https://docs.rs/htmd", "prompt": "?"}),
    );
    assert_eq!(
        refusal,
        "web_fetch needs permission in default mode: \"https://docs.rs/htmd\". To allow it, \
         re-run with --allowedTools \"WebFetch(domain:docs.rs)\" or --permission-mode \
         bypassPermissions"
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

#[test]
fn edit_rules_protected_files_and_read_denials_cover_notebook_edits() {
    let notebook = |policy: &Policy, path: &str| file(policy, "notebook_edit", Effect::Edit, path);
    let scoped = policy(PermissionMode::Default, &["Edit(docs/**)"], &[], &[]);
    assert_eq!(notebook(&scoped, "docs/a.ipynb"), Kind::Allow);
    assert_eq!(notebook(&scoped, "src/a.ipynb"), Kind::Ask);
    let claude_named = policy(PermissionMode::Default, &["NotebookEdit"], &[], &[]);
    assert_eq!(notebook(&claude_named, "src/a.ipynb"), Kind::Allow);
    let denied = policy_with_deny("Edit(secret/**)");
    assert_eq!(notebook(&denied, "secret/a.ipynb"), Kind::Deny);
    let unreadable = policy_with_deny("Read(secret/**)");
    assert_eq!(notebook(&unreadable, "secret/a.ipynb"), Kind::Deny);
    let accept = policy(PermissionMode::AcceptEdits, &[], &[], &[]);
    assert_eq!(notebook(&accept, "a.ipynb"), Kind::Allow);
    assert_eq!(notebook(&accept, ".claude/a.ipynb"), Kind::Ask);
}
