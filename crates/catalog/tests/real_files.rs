//! Skill and agent files written the way public Claude Code projects write them (folded and
//! literal block scalars, `#` inside values, nested `metadata`, flow lists, an unquoted colon
//! YAML itself refuses) all load, through the same loaders the binary uses.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;

fn project() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/real_project")
}

#[test]
fn every_skill_of_a_real_project_loads_with_its_fields() {
    let skills = troupe_catalog::skills::load(&project(), None);
    assert!(skills.skipped.is_empty(), "{:?}", skills.skipped);
    let names: Vec<&str> = skills.skills.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["pdf-forms", "release-notes"]);
    let pdf = &skills.skills[0];
    // A folded scalar joins its lines; `#` inside it is text, not a comment.
    assert_eq!(
        pdf.description,
        "Fill in, flatten and check PDF forms. Use when the user hands you a form to complete, \
         asks which fields a PDF has, or mentions AcroForm: fields #1-#9."
    );
    assert_eq!(pdf.allowed_tools, ["Read", "Bash(python3:*)"]);
    assert!(pdf.body.starts_with("# PDF forms"));
    let notes = &skills.skills[1];
    assert_eq!(
        notes.description,
        "Write release notes from the git log.\nGroup by: features, fixes, breaking changes   \
         # not a comment inside a block scalar"
    );
    assert_eq!(notes.allowed_tools, ["Read", "Grep", "Bash(git log:*)"]);
}

#[test]
fn every_agent_of_a_real_project_loads_with_its_fields() {
    let defs = troupe_catalog::agents::load(&project(), None);
    assert!(defs.skipped.is_empty(), "{:?}", defs.skipped);
    let reviewer = defs.get("code-reviewer").expect("code-reviewer");
    // Not valid YAML (an unquoted `: ` in a plain value); Claude Code loads it, so does troupe.
    assert_eq!(
        reviewer.description,
        "Expert code reviewer. Use PROACTIVELY when: a change is ready, or the user asks \"is this right?\""
    );
    assert_eq!(
        reviewer.tools.as_deref(),
        Some(&["read_file", "grep", "glob", "bash"].map(String::from)[..])
    );
    assert_eq!(reviewer.model.as_deref(), Some("sonnet"));
    let auditor = defs.get("security-auditor").expect("security-auditor");
    assert!(
        auditor
            .description
            .starts_with("Use this agent to audit a change for security issues. Examples:\n\n<example>\nContext: the user added"),
        "{}",
        auditor.description
    );
    assert!(auditor.description.ends_with("</example>"));
    assert_eq!(
        auditor.tools.as_deref(),
        Some(&["read_file", "grep"].map(String::from)[..])
    );
    assert!(auditor.prompt.starts_with("Audit the change."));
}

#[test]
fn a_hint_is_kept_as_written() {
    let doc = troupe_catalog::frontmatter::parse(
        "---\ndescription: Commit the work\nargument-hint: [message] [--amend]\nallowed-tools: Bash(git add:*), Bash(git commit:*)\n---\nCommit with $ARGUMENTS\n",
    )
    .unwrap();
    assert_eq!(doc.raw("argument-hint"), Some("[message] [--amend]"));
    assert_eq!(doc.text("description"), Some("Commit the work"));
    assert_eq!(
        doc.fields["allowed-tools"].as_list(),
        ["Bash(git add:*)", "Bash(git commit:*)"]
    );
    assert_eq!(doc.body, "Commit with $ARGUMENTS");
}
