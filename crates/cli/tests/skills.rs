//! Skills through the real binary: the catalog in the system prompt, the body on demand, a
//! malformed SKILL.md reported and skipped.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code may panic on a broken fixture

mod common;

use common::{headless_in_mode, result_json, stderr};
use serde_json::json;
use troupe_testkit::{Step, TempWorkspace};

#[test]
fn the_catalog_is_in_the_prompt_and_load_skill_returns_the_body() {
    let ws = TempWorkspace::new();
    let dir = ws.path().join(".claude/skills/changelog");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("SKILL.md"),
        "---\nname: changelog\ndescription: Write CHANGELOG entries in Keep a Changelog style\n---\nAdd entries under ## Unreleased, newest first.\n",
    )
    .unwrap();
    std::fs::write(dir.join("template.md"), "## Unreleased").unwrap();
    let bad = ws.path().join(".claude/skills/broken");
    std::fs::create_dir_all(&bad).unwrap();
    std::fs::write(bad.join("SKILL.md"), "---\nname: broken\n").unwrap();
    let server = common::lead_server([
        Step::tool("load_skill", json!({"name": "changelog"})),
        Step::tool(
            "read_file",
            json!({"path": ".claude/skills/changelog/template.md"}),
        ),
        Step::text("entry written"),
    ]);
    let out = headless_in_mode(ws.path(), &server, "update the changelog", "default", &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(result_json(&out)["result"], "entry written");
    let requests = server.requests_for("lead");
    let system = requests[0].system();
    common::assert_contains(
        &system,
        "- changelog: Write CHANGELOG entries in Keep a Changelog style",
    );
    assert!(
        !system.contains("newest first"),
        "the body is loaded on demand only"
    );
    let (body, is_error) = requests[1].last_tool_result().unwrap();
    assert!(
        !is_error && body.contains("Add entries under ## Unreleased, newest first."),
        "{body}"
    );
    common::assert_contains(&body, "Skill folder: .claude/skills/changelog");
    let (template, _) = requests[2].last_tool_result().unwrap();
    assert!(template.contains("## Unreleased"), "{template}");
    let err = stderr(&out);
    assert!(
        err.contains("skipped skill")
            && err.contains("broken/SKILL.md")
            && err.contains("no closing"),
        "{err}"
    );
}
