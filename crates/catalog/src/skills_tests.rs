#![allow(clippy::unwrap_used)]
use super::*;
use serde_json::json;

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

fn skill_md(name: &str, description: &str) -> String {
    format!("---\nname: {name}\ndescription: {description}\nallowed-tools: Read, Bash\n---\n# {name}\nDo the {name} thing.\n")
}

#[test]
fn project_skills_come_before_the_users_and_bad_files_are_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    let home = dir.path().join("home");
    write(
        &ws.join(".claude/skills/pdf/SKILL.md"),
        &skill_md("pdf", "Fill PDF forms"),
    );
    write(
        &ws.join(".troupe/skills/release/SKILL.md"),
        &skill_md("release", "Cut a release"),
    );
    write(
        &ws.join(".claude/skills/broken/SKILL.md"),
        "no front matter",
    );
    write(
        &ws.join(".claude/skills/nodesc/SKILL.md"),
        "---\nname: nodesc\n---\nbody",
    );
    write(
        &home.join(".claude/skills/pdf/SKILL.md"),
        &skill_md("pdf", "the user's pdf"),
    );
    write(
        &home.join(".troupe/skills/notes/SKILL.md"),
        &skill_md("notes", "Take notes"),
    );
    let found = load(&ws, Some(&home));
    let names: Vec<&str> = found.skills.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["release", "pdf", "notes"]);
    assert_eq!(found.skills[1].description, "Fill PDF forms");
    assert_eq!(found.skills[1].allowed_tools, ["Read", "Bash"]);
    let why: Vec<&str> = found.skipped.iter().map(|s| s.why.as_str()).collect();
    assert!(
        why.contains(&"line 1: expected front matter starting with `---`"),
        "{why:?}"
    );
    assert!(
        why.contains(&"the front matter has no `description`"),
        "{why:?}"
    );
    assert!(
        why.contains(&"a skill named 'pdf' was found earlier"),
        "{why:?}"
    );
    let catalog = found.catalog().unwrap();
    assert!(catalog.contains("- pdf: Fill PDF forms\n"), "{catalog}");
    assert!(
        !catalog.contains("Do the pdf thing"),
        "only the catalog goes in the prompt"
    );
}

#[tokio::test]
async fn load_skill_returns_the_body_and_the_folder() {
    let dir = tempfile::tempdir().unwrap();
    write(
        &dir.path().join(".claude/skills/pdf/SKILL.md"),
        &skill_md("pdf", "Fill PDF forms"),
    );
    let tool = LoadSkill {
        skills: Arc::new(load(dir.path(), None)),
    };
    let ctx = ToolContext::new(
        Arc::new(troupe_tools::Workspace::new(dir.path()).unwrap()),
        "lead",
    );
    let out = tool.call(json!({"name": "pdf"}), &ctx).await;
    assert!(!out.is_error, "{}", out.content);
    assert!(out.content.contains("Do the pdf thing."), "{}", out.content);
    assert!(
        out.content.contains("Skill folder: .claude/skills/pdf"),
        "{}",
        out.content
    );
    let out = tool.call(json!({"name": "nope"}), &ctx).await;
    assert!(
        out.is_error && out.content.contains("the skills are: pdf"),
        "{}",
        out.content
    );
}

#[test]
fn no_skills_no_tool_and_no_section() {
    let dir = tempfile::tempdir().unwrap();
    let ext = SkillsExtension::new(load(dir.path(), None));
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let cx = ExtensionContext {
        agent: "lead",
        workspace: dir.path(),
        stop: &stop,
        transcript: None,
        mode: &troupe_agent::LiveMode::new(Default::default()),
        dirs: None,
    };
    assert!(ext.tools(&cx).is_empty());
    assert!(ext.prompt_sections(&cx).is_empty());
}
