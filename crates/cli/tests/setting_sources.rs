//! `--setting-sources` (the Agent SDK's `setting_sources`) governs memory files and custom
//! commands as it does settings, as in Claude Code: `""` reads none of CLAUDE.md,
//! CLAUDE.local.md or the user's CLAUDE.md; `user` the user's only.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code may panic on a broken fixture

mod common;

use common::{json_lines, run, stderr, troupe};
use troupe_testkit::{FakeServer, Step, TempWorkspace, Wire};

fn system_for(ws: &TempWorkspace, sources: Option<&str>) -> (String, Vec<String>) {
    let server = FakeServer::start();
    server.script("lead", [Step::text("ok")]);
    let mut cmd = troupe(ws.path(), &server, Wire::Anthropic);
    cmd.args(["-p", "hi", "--output-format", "stream-json", "--verbose"]);
    if let Some(list) = sources {
        cmd.args(["--setting-sources", list]);
    }
    let out = run(&mut cmd);
    assert!(out.status.success(), "{}", stderr(&out));
    let commands = json_lines(&out)[0]["slash_commands"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_string())
        .collect();
    (server.journal()[0].system(), commands)
}

#[test]
fn setting_sources_govern_memory_files_and_commands() {
    let ws = TempWorkspace::new();
    ws.write("CLAUDE.md", "PROJECT-MEMORY-MARK");
    ws.write("CLAUDE.local.md", "LOCAL-MEMORY-MARK");
    ws.write(".home/.claude/CLAUDE.md", "USER-MEMORY-MARK");
    ws.write(".claude/commands/deploy.md", "Deploy it.");
    ws.write(".home/.claude/commands/mine.md", "Mine.");
    let marks = [
        "PROJECT-MEMORY-MARK",
        "LOCAL-MEMORY-MARK",
        "USER-MEMORY-MARK",
    ];
    let (all, commands) = system_for(&ws, None);
    for mark in marks {
        assert!(all.contains(mark), "{mark}: {all}");
    }
    assert!(commands.contains(&"deploy".to_string()) && commands.contains(&"mine".to_string()));
    let (none, commands) = system_for(&ws, Some(""));
    for mark in marks {
        assert!(!none.contains(mark), "{mark} read with no sources: {none}");
    }
    assert!(
        !commands.iter().any(|c| c == "deploy" || c == "mine"),
        "{commands:?}"
    );
    let (user, commands) = system_for(&ws, Some("user"));
    assert!(user.contains("USER-MEMORY-MARK"), "{user}");
    assert!(!user.contains("PROJECT-MEMORY-MARK") && !user.contains("LOCAL-MEMORY-MARK"));
    assert!(commands.contains(&"mine".to_string()) && !commands.contains(&"deploy".to_string()));
    let (project, _) = system_for(&ws, Some("project,local"));
    assert!(project.contains("PROJECT-MEMORY-MARK") && project.contains("LOCAL-MEMORY-MARK"));
    assert!(!project.contains("USER-MEMORY-MARK"), "{project}");
}
