use super::*;

fn write(path: &Path, text: &str) {
    if let Some(dir) = path.parent() {
        fs::create_dir_all(dir).unwrap();
    }
    fs::write(path, text).unwrap();
}

#[test]
fn both_conventions_load_from_the_repository_root_down_to_the_workspace() {
    let repo = tempfile::tempdir().unwrap();
    let root = repo.path();
    fs::create_dir(root.join(".git")).unwrap();
    let ws = root.join("services/api");
    write(&root.join("CLAUDE.md"), "root rule");
    write(&root.join("services/AGENTS.md"), "services rule");
    write(&ws.join("AGENTS.md"), "api agents rule");
    write(&ws.join("CLAUDE.md"), "api claude rule");
    write(&ws.join(".troupe/memory/MEMORY.md"), "a note");
    let m = load(&ws, None);
    let text = m.project_text();
    let order: Vec<usize> = [
        "root rule",
        "services rule",
        "api agents rule",
        "api claude rule",
        "a note",
    ]
    .iter()
    .map(|s| {
        text.find(s)
            .unwrap_or_else(|| panic!("{s} missing from {text}"))
    })
    .collect();
    assert!(order.windows(2).all(|w| w[0] < w[1]), "{text}");
    assert_eq!(m.files.len(), 5);
    assert_eq!(m.files[4].scope, Scope::Notes);
    assert!(text.contains("From AGENTS.md:\napi agents rule"), "{text}");
}

#[test]
fn outside_a_repository_only_the_workspace_is_read() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    write(&dir.path().join("CLAUDE.md"), "parent rule");
    write(&ws.join("CLAUDE.md"), "ws rule");
    let m = load(&ws, None);
    assert!(m.project_text().contains("ws rule"));
    assert!(!m.project_text().contains("parent rule"));
}

#[test]
fn imports_are_followed_inside_the_project_and_home_only() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    let home = dir.path().join("home");
    let outside = dir.path().join("secret.md");
    write(&outside, "outside secret");
    write(&home.join("prefs.md"), "home prefs");
    write(&ws.join("docs/style.md"), "style guide, see @../more.md.");
    write(&ws.join("more.md"), "more rules");
    write(
        &ws.join("CLAUDE.md"),
        "Read @docs/style.md and @~/prefs.md and @../secret.md and @missing.md.\n\
         Mail me at a@b.com or ask @alice. `@docs/not-an-import.md`\n```\n@docs/fenced.md\n```",
    );
    std::os::unix::fs::symlink(&outside, ws.join("link.md")).unwrap();
    write(&ws.join("AGENTS.md"), "@link.md");
    let m = load(&ws, Some(&home));
    let text = m.project_text();
    assert!(
        text.contains("From docs/style.md (imported by CLAUDE.md):"),
        "{text}"
    );
    assert!(
        text.contains("more rules") && text.contains("home prefs"),
        "{text}"
    );
    assert!(
        !text.contains("outside secret"),
        "a symlink or ../ must not escape: {text}"
    );
    let skipped: Vec<(&str, &str)> = m
        .skipped
        .iter()
        .map(|s| (s.import.as_str(), s.why.as_str()))
        .collect();
    assert!(skipped.contains(&("@link.md", "outside the project and the home directory")));
    assert!(skipped.contains(&(
        "@../secret.md",
        "outside the project and the home directory"
    )));
    assert!(skipped.contains(&("@missing.md", "no such file")));
    assert_eq!(skipped.len(), 3, "{skipped:?}");
    assert!(m.describe().contains("imported by CLAUDE.md"));
}

#[test]
fn imports_a_read_deny_rule_covers_are_skipped_as_named_and_through_symlinks() {
    use crate::permissions::{PermissionMode, Policy, Rules};
    let dir = tempfile::tempdir().unwrap();
    let ws = fs::canonicalize(dir.path()).unwrap();
    write(&ws.join("secrets/key"), "hunter2-secret");
    write(&ws.join("docs/ok.md"), "plain rules");
    std::os::unix::fs::symlink("secrets/key", ws.join("link.md")).unwrap();
    std::os::unix::fs::symlink("secrets", ws.join("shh")).unwrap();
    write(
        &ws.join("CLAUDE.md"),
        "@secrets/key @link.md @shh/key @docs/ok.md",
    );
    // A memory file in its place that leads into the denied tree is left out too.
    std::os::unix::fs::symlink("secrets/key", ws.join("AGENTS.md")).unwrap();
    let rules = Rules::parse(&[], &[], &["Read(secrets/**)".to_string()]).unwrap();
    let policy = Policy::new(PermissionMode::Default, rules);
    let m = load_sources(&ws, None, MemorySources::default(), &policy.concealed());
    let text = m.project_text();
    assert!(!text.contains("hunter2"), "{text}");
    assert!(text.contains("plain rules"), "{text}");
    let skipped: Vec<&str> = m
        .skipped
        .iter()
        .filter(|s| s.why == "a Read deny rule keeps the file from being read")
        .map(|s| s.import.as_str())
        .collect();
    assert_eq!(skipped, ["@secrets/key", "@link.md", "@shh/key"]);
    // Without the rule the same import is read.
    let open = load(&ws, None);
    assert!(open.project_text().contains("hunter2"));
}

#[test]
fn import_cycles_and_symlinked_duplicates_are_read_once() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path();
    write(&ws.join("AGENTS.md"), "agents text @CLAUDE.md");
    std::os::unix::fs::symlink(ws.join("AGENTS.md"), ws.join("CLAUDE.md")).unwrap();
    write(&ws.join("a.md"), "a @./b.md");
    write(&ws.join("b.md"), "b @./a.md");
    write(&ws.join("CLAUDE.local.md"), "@a.md");
    let m = load(ws, None);
    assert_eq!(m.project_text().matches("agents text").count(), 1);
    assert_eq!(m.project_text().matches("From a.md").count(), 1);
    assert_eq!(m.project_text().matches("From b.md").count(), 1);
}

#[test]
fn deep_imports_stop_and_are_reported() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path();
    write(&ws.join("CLAUDE.md"), "@d1.md");
    for i in 1..=7 {
        write(
            &ws.join(format!("d{i}.md")),
            &format!("level {i} @d{}.md", i + 1),
        );
    }
    let m = load(ws, None);
    assert!(m.project_text().contains("level 5"));
    assert!(!m.project_text().contains("level 6"));
    assert!(m.skipped.iter().any(|s| s.why == "imports nest too deep"));
}

#[test]
fn the_budget_cuts_everything_together() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path();
    write(&ws.join("AGENTS.md"), &"é".repeat(MEMORY_BUDGET));
    write(&ws.join("CLAUDE.md"), "never reached");
    let m = load(ws, None);
    assert!(m.project_text().len() < MEMORY_BUDGET + 200);
    assert!(m.files[0].truncated);
    assert!(!m.project_text().contains("never reached"));
}

#[test]
fn user_memory_comes_from_both_homes() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    write(&home.join(".troupe/AGENTS.md"), "troupe user rule");
    write(&home.join(".claude/CLAUDE.md"), "claude user rule");
    let m = load(&dir.path().join("ws"), Some(&home));
    assert!(m
        .user_text()
        .contains("From ~/.troupe/AGENTS.md:\ntroupe user rule"));
    assert!(m.user_text().contains("claude user rule"));
    assert!(m.project_text().is_empty());
}

#[test]
fn notes_are_appended_to_the_existing_memory_file() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path();
    assert_eq!(note_file(ws), ws.join("CLAUDE.md"));
    write(&ws.join("AGENTS.md"), "rules");
    let path = append_note(ws, " use tabs ").unwrap();
    assert_eq!(path, ws.join("AGENTS.md"));
    assert_eq!(fs::read_to_string(&path).unwrap(), "rules\n- use tabs\n");
}

#[test]
fn a_memory_file_changed_during_the_session_is_read_again_only_once_seen() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    write(&ws.join("CLAUDE.md"), "first rule");
    assert!(load(&ws, None).project_text().contains("first rule"));
    // A tool call rewrites it, and plants a new one: the next agent still reads the first.
    write(&ws.join("CLAUDE.md"), "planted rule");
    write(&ws.join("AGENTS.md"), "planted agents rule");
    let text = load(&ws, None).project_text().to_string();
    assert!(
        text.contains("first rule") && !text.contains("planted"),
        "{text}"
    );
    // A note the person types is theirs: its file is read again.
    append_note(&ws, "use tabs").unwrap();
    let text = load(&ws, None).project_text().to_string();
    assert!(text.contains("use tabs"), "{text}");
    // Once the person has seen the files (/memory), they are read as they are.
    crate::memory_snapshot::refresh();
    let text = load(&ws, None).project_text().to_string();
    assert!(text.contains("planted agents rule"), "{text}");
}
