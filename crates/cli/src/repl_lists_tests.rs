use super::*;
use std::path::PathBuf;
use troupe_catalog::agents::{AgentDefinition, SkippedDefinition};
use troupe_settings::{HookCommand, HookMatcher, Scope};

fn definition(
    name: &str,
    path: &str,
    model: Option<&str>,
    tools: Option<&[&str]>,
) -> AgentDefinition {
    AgentDefinition {
        name: name.into(),
        description: format!("{name}: reviews a diff for bugs and missing tests"),
        tools: tools.map(|t| t.iter().map(|s| s.to_string()).collect()),
        model: model.map(str::to_string),
        permission_mode: None,
        prompt: "You review code.".into(),
        path: PathBuf::from(path),
    }
}

#[test]
fn agents_are_listed_with_their_source() {
    let defs = Definitions {
        agents: vec![
            definition(
                "reviewer",
                "/ws/.claude/agents/reviewer.md",
                None,
                Some(&["read_file", "grep", "glob"]),
            ),
            definition("planner", "--agents", Some("claude-opus-4-1"), None),
            definition(
                "home-helper",
                "/home/me/.claude/agents/home-helper.md",
                None,
                None,
            ),
        ],
        skipped: vec![SkippedDefinition {
            path: PathBuf::from("/ws/.claude/agents/broken.md"),
            why: "no front matter".into(),
        }],
    };
    insta::assert_snapshot!(agents(&defs, Path::new("/ws")));
    assert!(agents(&Definitions::default(), Path::new("/ws")).starts_with("no agent definitions"));
}

fn hook(command: &str, timeout: Option<u64>) -> HookCommand {
    HookCommand {
        kind: "command".into(),
        command: command.into(),
        timeout,
        ..HookCommand::default()
    }
}

#[test]
fn hooks_are_listed_by_event_with_their_file() {
    let mut project = Settings::default();
    project.hooks.insert(
        "PreToolUse".into(),
        vec![HookMatcher {
            matcher: Some("Bash".into()),
            hooks: vec![hook(
                "\"$CLAUDE_PROJECT_DIR\"/.claude/hooks/no-rm-rf.sh",
                Some(10),
            )],
        }],
    );
    let mut user = Settings::default();
    user.hooks.insert(
        "Stop".into(),
        vec![HookMatcher {
            matcher: None,
            hooks: vec![hook("notify-send 'troupe is done'", None)],
        }],
    );
    let layers = vec![
        Layer {
            scope: Scope::User,
            origin: "/home/me/.claude/settings.json".into(),
            settings: user.clone(),
        },
        Layer {
            scope: Scope::Project,
            origin: "/ws/.claude/settings.json".into(),
            settings: project.clone(),
        },
    ];
    let mut merged = user;
    merged.hooks.extend(project.hooks);
    insta::assert_snapshot!(hooks(&merged, &layers));
    assert!(hooks(&Settings::default(), &[]).starts_with("no hooks configured"));
}

fn summary(id: &str, prompt: &str) -> SessionSummary {
    SessionSummary {
        id: id.into(),
        started_ms: 0,
        modified_ms: 0,
        first_prompt: Some(prompt.into()),
        turns: 2,
        usage: Vec::new(),
        answered: true,
        cleared_from: None,
    }
}

#[test]
fn the_resume_picker_numbers_sessions_and_reads_the_choice() {
    let list = vec![
        summary("b-2", "fix the build"),
        summary("a-1", "list the files"),
    ];
    let shown = sessions(&list, Some("b-2"));
    let lines: Vec<&str> = shown.lines().collect();
    assert!(lines[0].starts_with("#  ID"), "{shown}");
    assert!(
        lines[1].starts_with("1  b-2") && lines[1].ends_with("fix the build (this session)"),
        "{shown}"
    );
    assert!(
        lines[2].starts_with("2  a-1") && lines[2].ends_with("list the files"),
        "{shown}"
    );
    assert_eq!(chosen("2", &list).map(|s| s.id.as_str()), Some("a-1"));
    assert_eq!(chosen("", &list).map(|s| s.id.as_str()), Some("b-2"));
    assert_eq!(chosen("a-1", &list).map(|s| s.id.as_str()), Some("a-1"));
    assert!(
        chosen("3", &list).is_none()
            && chosen("0", &list).is_none()
            && chosen("q", &list).is_none()
    );
}
