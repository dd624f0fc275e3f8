//! The read-only classifier for bash commands.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code may panic on a broken fixture

use troupe_tools::is_read_only_command;

#[test]
fn plain_inspection_commands_are_read_only() {
    for cmd in [
        "ls -la",
        "cat src/main.rs",
        "head -n 20 README.md && tail -5 log.txt",
        "grep -rn 'fn main' src | wc -l",
        "rg TODO; pwd",
        "find . -name '*.rs' -type f",
        "git status",
        "git --no-pager log --oneline -5",
        "git diff HEAD~1 -- src",
        "git show HEAD:Cargo.toml",
        "git branch",
        "git branch -a",
        "git rev-parse --show-toplevel",
        "which cargo || echo none",
        "cd src && ls",
        "ls missing 2>/dev/null",
        "ls 2>&1 | sort | uniq -c",
        "echo 'a > b' \"and | c\"",
        "du -sh . \n df -h",
        "tree -L 2",
        "stat Cargo.toml; file Cargo.toml",
        "sort -u names.txt | cut -d, -f1",
        // Substitutions, subshells and groups are judged by what they run.
        "echo `whoami`",
        "echo \"$(pwd)\"",
        "(ls)",
        "{ ls; }",
    ] {
        assert!(is_read_only_command(cmd), "should be read-only: {cmd}");
    }
}

#[test]
fn writes_executions_and_unknown_programs_are_not() {
    for cmd in [
        "",
        "rm -rf target",
        "ls > listing.txt",
        "echo hi >> log",
        "cat a | tee b",
        "ls && rm x",
        "ls; touch y",
        "ls | xargs rm",
        "echo $(rm -rf x)",
        "echo `touch x`",
        "echo \"$(rm x)\"",
        "cat <(rm x)",
        "find . -name '*.tmp' -delete",
        "find . -exec rm {} ;",
        "git commit -m x",
        "git push",
        "git branch new-feature",
        "git branch -D old",
        "git diff --output=patch.diff",
        "git",
        "sort -o out.txt in.txt",
        "uniq in.txt out.txt",
        "rg --pre ./script pattern",
        "./ls",
        "/bin/rm x",
        "FOO=bar ls",
        "(ls) > out",
        "{ ls; touch x; }",
        "cargo build",
        "sed -i s/a/b/ file",
        "awk '{print > \"x\"}' file",
        "ls &> out",
        "echo 'unterminated",
        "sleep 10 & rm x",
    ] {
        assert!(!is_read_only_command(cmd), "should not be read-only: {cmd}");
    }
}

/// The plan gate of a teammate whose plan is not approved lets a bash call through only when
/// `BashTool::effect` says `ReadOnly`; every disguise of a write must come out `Execute`.
#[test]
fn the_bash_tool_reports_disguised_writes_as_execute() {
    use serde_json::json;
    use troupe_tools::{BashTool, Effect, Tool};
    for command in [
        "ls # it's\nrm x",
        "$'\\x72m' x",
        "sort -uo out.txt in",
        "date -us 2020-01-01",
        "git -c core.pager=x log",
        "git -c core.fsmonitor='touch m' status",
        "find . -delete",
        "echo x > f",
        "cat a | tee b",
        "a=rm; $a x",
    ] {
        assert_eq!(
            BashTool.effect(&json!({ "command": command })),
            Effect::Execute,
            "{command:?}"
        );
    }
    for command in ["ls -la", "git status", "cargo metadata --format-version 1"] {
        assert_eq!(
            BashTool.effect(&json!({ "command": command })),
            Effect::ReadOnly,
            "{command:?}"
        );
    }
}
