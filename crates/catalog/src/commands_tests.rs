#![allow(clippy::unwrap_used)]
use super::*;

fn write(root: &Path, rel: &str, text: &str) {
    let path = root.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

#[test]
fn subfolders_namespace_and_front_matter_is_read() {
    let ws = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    write(
        ws.path(),
        ".claude/commands/frontend/component.md",
        "---\ndescription: Make a component\nargument-hint: [name] [kind]\nallowed-tools: Bash(git add:*), Read\nmodel: claude-haiku-4-5\n---\nCreate component $1 of kind $2.\n",
    );
    write(
        ws.path(),
        ".claude/commands/review.md",
        "# Review the diff\nLook hard.\n",
    );
    write(home.path(), ".claude/commands/review.md", "user's review\n");
    write(
        home.path(),
        ".claude/commands/git/wip.md",
        "commit wip: $ARGUMENTS\n",
    );
    write(
        ws.path(),
        ".claude/commands/bad.md",
        "---\ndescription: x\n",
    );
    let found = load(ws.path(), Some(home.path()));
    assert_eq!(
        found.names(),
        ["review", "frontend:component", "git:wip"],
        "{:?}",
        found.skipped
    );
    let c = &found.commands[1];
    assert_eq!(c.description, "Make a component");
    assert_eq!(c.argument_hint.as_deref(), Some("[name] [kind]"));
    assert_eq!(c.allowed_tools, ["Bash(git add:*)", "Read"]);
    assert_eq!(c.model.as_deref(), Some("claude-haiku-4-5"));
    assert_eq!(c.label(), "(project:frontend)");
    assert_eq!(found.commands[0].description, "Review the diff");
    assert_eq!(found.commands[2].label(), "(user:git)");
    let why: Vec<&str> = found.skipped.iter().map(|s| s.why.as_str()).collect();
    assert_eq!(found.skipped.len(), 2, "{why:?}");
    assert!(why.iter().any(|w| w.contains("found earlier")), "{why:?}");
    assert!(why.iter().any(|w| w.contains("no closing")), "{why:?}");
}

#[test]
fn arguments_are_substituted() {
    let ws = tempfile::tempdir().unwrap();
    write(
        ws.path(),
        ".claude/commands/fix.md",
        "Fix issue $ARGUMENTS now.",
    );
    write(
        ws.path(),
        ".claude/commands/pair.md",
        "First $1, then $2, not $3; cost $5x",
    );
    write(ws.path(), ".claude/commands/plain.md", "Do the thing.");
    let found = load(ws.path(), None);
    let expand = |line: &str| match found.lookup(line) {
        Lookup::Found(c, args) => c.expand(args),
        other => panic!("{line}: {other:?}"),
    };
    assert_eq!(expand("/fix 123 high"), "Fix issue 123 high now.");
    assert_eq!(expand("/pair \"a b\" c"), "First a b, then c, not ; cost x");
    assert_eq!(expand("/plain"), "Do the thing.");
    assert_eq!(
        expand("/plain extra words"),
        "Do the thing.\n\nARGUMENTS: extra words"
    );
}

#[test]
fn short_names_and_slashes_find_a_command_unless_shared() {
    let ws = tempfile::tempdir().unwrap();
    write(ws.path(), ".claude/commands/frontend/build.md", "fe");
    write(ws.path(), ".claude/commands/backend/build.md", "be");
    write(ws.path(), ".claude/commands/db/migrate.md", "m");
    let found = load(ws.path(), None);
    assert!(
        matches!(found.lookup("/migrate up"), Lookup::Found(c, "up") if c.name == "db:migrate")
    );
    assert!(matches!(found.lookup("/db/migrate"), Lookup::Found(c, "") if c.name == "db:migrate"));
    assert!(matches!(found.lookup("/frontend:build"), Lookup::Found(c, _) if c.body == "fe"));
    assert_eq!(
        found.lookup("/build"),
        Lookup::Ambiguous(vec!["backend:build", "frontend:build"])
    );
    assert_eq!(found.lookup("/help"), Lookup::Unknown);
    assert_eq!(found.lookup("no slash"), Lookup::Unknown);
}
