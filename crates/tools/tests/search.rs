//! glob and grep: gitignore-aware walks, matching, output modes and limits.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code may panic on a broken fixture

mod common;

use common::{err, ok, Fixture};
use serde_json::json;
use std::time::{Duration, SystemTime};

/// A small project: sources, a test, an ignored build dir, git internals and troupe state.
fn project() -> Fixture {
    let f = Fixture::new();
    f.write(".gitignore", "target/\n*.log\n");
    f.write("src/main.rs", "fn main() {\n    println!(\"hello\");\n}\n");
    f.write(
        "src/lib.rs",
        "pub fn greet() -> &'static str {\n    \"Hello\"\n}\n",
    );
    f.write("src/util/mod.rs", "// helpers\npub fn noop() {}\n");
    f.write("tests/it.rs", "#[test]\nfn works() { assert!(true); }\n");
    f.write("target/debug/gen.rs", "fn hello() {}\n");
    f.write("run.log", "hello log\n");
    f.write(".git/HEAD", "hello ref\n");
    f.write(".troupe/state.rs", "fn hello() {}\n");
    f.write(".github/ci.yml", "hello: ci\n");
    f
}

fn set_mtime(f: &Fixture, rel: &str, secs_ago: u64) {
    let file = std::fs::File::options()
        .write(true)
        .open(f.root().join(rel))
        .unwrap();
    file.set_modified(SystemTime::now() - Duration::from_secs(secs_ago))
        .unwrap();
}

#[tokio::test]
async fn glob_matches_relative_paths_newest_first_and_skips_ignored() {
    let f = project();
    set_mtime(&f, "src/main.rs", 300);
    set_mtime(&f, "src/lib.rs", 100);
    set_mtime(&f, "src/util/mod.rs", 200);
    set_mtime(&f, "tests/it.rs", 400);
    let text = ok(f.call("glob", json!({"pattern": "**/*.rs"})).await);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines,
        [
            "src/lib.rs",
            "src/util/mod.rs",
            "src/main.rs",
            "tests/it.rs"
        ]
    );
}

#[tokio::test]
async fn glob_star_does_not_cross_directories_and_path_narrows() {
    let f = project();
    let text = ok(f.call("glob", json!({"pattern": "src/*.rs"})).await);
    let mut lines: Vec<&str> = text.lines().collect();
    lines.sort();
    assert_eq!(lines, ["src/lib.rs", "src/main.rs"]);
    // With a path, the pattern is relative to it but results stay workspace-relative.
    let text = ok(f
        .call("glob", json!({"pattern": "*.rs", "path": "src/util"}))
        .await);
    assert_eq!(text, "src/util/mod.rs");
    // Dot-directories other than .git and .troupe are searched.
    let text = ok(f.call("glob", json!({"pattern": "**/*.yml"})).await);
    assert_eq!(text, ".github/ci.yml");
}

#[tokio::test]
async fn glob_reports_no_match_and_bad_patterns() {
    let f = project();
    let text = ok(f.call("glob", json!({"pattern": "**/*.py"})).await);
    assert!(text.contains("No files match"), "{text}");
    let message = err(f.call("glob", json!({"pattern": "src/[a.rs"})).await);
    assert!(message.contains("Invalid glob"), "{message}");
    let message = err(f
        .call("glob", json!({"pattern": "*", "path": "src/lib.rs"}))
        .await);
    assert!(message.contains("not a directory"), "{message}");
}

#[tokio::test]
async fn glob_caps_results_with_a_note() {
    let f = Fixture::new();
    for i in 0..1005 {
        f.write(&format!("f{i}.txt"), "");
    }
    let text = ok(f.call("glob", json!({"pattern": "*.txt"})).await);
    assert_eq!(text.lines().count(), 1001);
    assert!(
        text.contains("1000 newest of 1005"),
        "{}",
        text.lines().last().unwrap()
    );
}

#[tokio::test]
async fn grep_lists_matching_files_by_default_skipping_ignored() {
    let f = project();
    let text = ok(f.call("grep", json!({"pattern": "hello"})).await);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines, [".github/ci.yml", "src/main.rs"]);
    let text = ok(f
        .call(
            "grep",
            json!({"pattern": "hello", "case_insensitive": true}),
        )
        .await);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines, [".github/ci.yml", "src/lib.rs", "src/main.rs"]);
}

#[tokio::test]
async fn grep_content_mode_prints_path_line_text_with_context() {
    let f = project();
    let text = ok(f
        .call(
            "grep",
            json!({"pattern": "println", "output_mode": "content", "glob": "*.rs"}),
        )
        .await);
    assert_eq!(text, "src/main.rs:2:    println!(\"hello\");");
    let text = ok(f
        .call(
            "grep",
            json!({"pattern": "println", "output_mode": "content", "context": 1, "path": "src"}),
        )
        .await);
    assert_eq!(
        text,
        "src/main.rs-1-fn main() {\nsrc/main.rs:2:    println!(\"hello\");\nsrc/main.rs-3-}"
    );
}

#[tokio::test]
async fn grep_count_mode_and_head_limit() {
    let f = Fixture::new();
    f.write("a.txt", "x\nx\nx\n");
    f.write("b.txt", "x\ny\n");
    f.write("c.md", "x\n");
    let text = ok(f
        .call(
            "grep",
            json!({"pattern": "x", "output_mode": "count", "glob": "*.txt"}),
        )
        .await);
    assert!(text.starts_with("a.txt:3\nb.txt:1\n"), "{text}");
    assert!(text.contains("4 matching lines in 2 files"), "{text}");

    let text = ok(f
        .call(
            "grep",
            json!({"pattern": "x", "output_mode": "content", "head_limit": 2}),
        )
        .await);
    assert!(text.starts_with("a.txt:1:x\na.txt:2:x\n("), "{text}");
    assert!(text.contains("cut short"), "{text}");
    assert!(!text.contains("b.txt"));

    let text = ok(f
        .call("grep", json!({"pattern": "x", "head_limit": 1}))
        .await);
    assert!(text.starts_with("a.txt\n("), "{text}");
}

#[tokio::test]
async fn grep_searches_a_single_file_and_skips_binary_files() {
    let f = Fixture::new();
    f.write("one.txt", "needle\n");
    f.write("two.txt", "needle\n");
    f.write("blob.bin", b"\x00\x01needle\x00");
    let text = ok(f
        .call("grep", json!({"pattern": "needle", "path": "one.txt"}))
        .await);
    assert_eq!(text, "one.txt");
    let text = ok(f.call("grep", json!({"pattern": "needle"})).await);
    assert_eq!(text, "one.txt\ntwo.txt");
}

#[tokio::test]
async fn grep_reports_no_match_and_invalid_regex() {
    let f = project();
    let text = ok(f.call("grep", json!({"pattern": "zebra"})).await);
    assert!(text.contains("No matches"), "{text}");
    let message = err(f.call("grep", json!({"pattern": "fn (main"})).await);
    assert!(message.contains("Invalid regex"), "{message}");
    assert!(message.contains("fn (main"), "{message}");
}
