//! The README checked: every command it shows runs as shown, in order, in one shell session,
//! against the try-it model (`troupe_testkit::try_it`, the same one the README starts as
//! `target/release/examples/fake_model`), and every output it shows is what the command
//! printed. The session runs in a scratch git repository holding `target/release/troupe` (this
//! build) with `troupe` on PATH, beside two sibling folders the examples name
//! (`../other-repo`, `../shared-fixtures`); the addresses the README uses for the fake model,
//! an Ollama server and a NATS host are replaced by the test's own servers. What cannot run
//! as shown (CI's own commands, a dashboard that needs a terminal, a process that runs until
//! stopped) is marked in README.md with a `readme-check` directive and its reason, read by
//! `readme_support`.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code may panic on a broken fixture

mod readme_support;

use readme_support::{bare, blocks, commands, unmatched, Block, Directive};
use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use troupe_testkit::{FakeServer, TempWorkspace};

/// The pages whose commands run, in the order a reader meets them: the README, then the docs
/// pages that show commands, read as one session.
const PAGES: [&str; 17] = [
    "README.md",
    "docs/guide/models.md",
    "docs/guide/repl.md",
    "docs/guide/headless.md",
    "docs/guide/tools.md",
    "docs/guide/permissions.md",
    "docs/guide/settings-and-hooks.md",
    "docs/guide/skills-agents-memory.md",
    "docs/guide/teams.md",
    "docs/guide/tasks-and-worktrees.md",
    "docs/guide/nats.md",
    "docs/guide/mcp.md",
    "docs/guide/background-and-cron.md",
    "docs/guide/cost-and-caching.md",
    "docs/guide/telemetry.md",
    "docs/guide/troubleshooting.md",
    "docs/claude-code.md",
];

/// The line of the joined text each page starts on, set by [`readme`].
static PAGE_STARTS: std::sync::OnceLock<Vec<(usize, &'static str)>> = std::sync::OnceLock::new();

fn readme() -> String {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut text = String::new();
    let mut starts = Vec::new();
    for page in PAGES {
        if !text.is_empty() {
            text.push('\n');
        }
        starts.push((text.matches('\n').count() + 1, page));
        let path = root.join(page);
        let body =
            std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        text.push_str(&body);
    }
    let _ = PAGE_STARTS.set(starts);
    text
}

/// Where line `line` of the joined text is: the page and the line in it.
fn place(line: usize) -> String {
    let starts = PAGE_STARTS.get().map(Vec::as_slice).unwrap_or_default();
    match starts.iter().rev().find(|(start, _)| *start <= line) {
        Some((start, page)) => format!("{page} line {}", line - start + 1),
        None => format!("README line {line}"),
    }
}

/// One command of the session and what it did.
struct Ran {
    line: usize,
    command: String,
    stdout: String,
    stderr: String,
    code: Option<i32>,
}

/// The scratch world the session runs in.
struct World {
    _root: TempWorkspace,
    project: PathBuf,
    bin: PathBuf,
    home: PathBuf,
}

fn world() -> World {
    let root = TempWorkspace::new();
    let project = root.join("project");
    for dir in [
        "project/src",
        "other-repo",
        "shared-fixtures",
        "home",
        "bin",
    ] {
        std::fs::create_dir_all(root.join(dir)).unwrap();
    }
    root.write("project/README.md", "# demo\n");
    root.write("project/src/main.rs", "fn main() {}\n");
    root.write("shared-fixtures/a.json", "{}\n");
    let git = |args: &[&str]| {
        let out = Command::new("git")
            .args(args)
            .current_dir(&project)
            .env("HOME", root.join("home"))
            .output()
            .unwrap();
        assert!(out.status.success(), "git {args:?}: {out:?}");
    };
    git(&["init", "-q", "-b", "main"]);
    git(&["-c", "user.email=t@t", "-c", "user.name=t", "add", "."]);
    git(&[
        "-c",
        "user.email=t@t",
        "-c",
        "user.name=t",
        "commit",
        "-qm",
        "start",
    ]);
    // The README's paths to the binary, and `troupe` on PATH, are this build.
    let exe = Path::new(env!("CARGO_BIN_EXE_troupe"));
    std::fs::create_dir_all(project.join("target/release")).unwrap();
    std::os::unix::fs::symlink(exe, project.join("target/release/troupe")).unwrap();
    std::os::unix::fs::symlink(exe, root.join("bin/troupe")).unwrap();
    // target/ is the build's, not the project's work: ignored, as in the troupe checkout.
    std::fs::write(project.join(".git/info/exclude"), "target/\n").unwrap();
    World {
        bin: root.join("bin"),
        home: root.join("home"),
        project,
        _root: root,
    }
}

/// The README's addresses, replaced by the test's servers, and its sample paths (outputs
/// show `/home/me/project` and `/home/me`), replaced by the session's.
fn rewrites(server: &FakeServer, world: &World) -> Vec<(&'static str, String)> {
    vec![
        ("/home/me/project", world.project.display().to_string()),
        ("/home/me", world.home.display().to_string()),
        ("http://127.0.0.1:8787", server.url()),
        ("http://localhost:11434/v1", server.openai_url()),
        ("nats://nats.example:4222", troupe_testkit::nats::url()),
    ]
}

fn rewrite(text: &str, rewrites: &[(&str, String)]) -> String {
    rewrites
        .iter()
        .fold(text.to_string(), |t, (from, to)| t.replace(from, to))
}

/// Runs the README's shell commands in one bash session; returns what each did, in order.
fn run_session(world: &World, server: &FakeServer, steps: &[(usize, String)]) -> Vec<Ran> {
    let out_dir = world.home.join(".readme-check");
    std::fs::create_dir_all(&out_dir).unwrap();
    let mut script = String::from("cd \"$README_PROJECT\"\n");
    let rewrites = rewrites(server, world);
    for (k, (_, command)) in steps.iter().enumerate() {
        let dir = out_dir.display();
        let command = rewrite(command, &rewrites);
        writeln!(
            script,
            "{{\n{command}\n}} >'{dir}/{k}.out' 2>'{dir}/{k}.err' </dev/null\necho $? >'{dir}/{k}.rc'"
        )
        .unwrap();
    }
    let path = format!(
        "{}:{}",
        world.bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut cmd = Command::new("bash");
    cmd.arg("-c")
        .arg(&script)
        .current_dir(&world.project)
        .env("README_PROJECT", &world.project)
        .env("HOME", &world.home)
        .env("PATH", path)
        .env(troupe_testkit::AGENT_HEADER_VAR, "1")
        .env("NO_COLOR", "1")
        .stdin(Stdio::null());
    for var in [
        "ANTHROPIC_API_KEY",
        "ANTHROPIC_BASE_URL",
        "ANTHROPIC_AUTH_TOKEN",
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
        "TROUPE_MODEL",
        "TROUPE_TEAM",
        "TROUPE_STORE",
        "XDG_CONFIG_HOME",
        "TROUPE_REQUIRE_TRUST",
        "TROUPE_WORKSPACE_TRUST",
        "DISABLE_PROMPT_CACHING",
    ] {
        cmd.env_remove(var);
    }
    let status = cmd.status().unwrap();
    assert!(
        status.success(),
        "the README session's shell failed: {status}"
    );
    let read = |k: usize, ext: &str| {
        std::fs::read_to_string(out_dir.join(format!("{k}.{ext}"))).unwrap_or_default()
    };
    steps
        .iter()
        .enumerate()
        .map(|(k, (line, command))| Ran {
            line: *line,
            command: command.clone(),
            stdout: read(k, "out"),
            stderr: read(k, "err"),
            code: read(k, "rc").trim().parse().ok(),
        })
        .collect()
}

/// The commands a run block contributes, minus the ones its `skip` names.
fn block_steps(block: &Block, steps: &mut Vec<(usize, String)>) {
    let cmds = commands(&block.body);
    let skip = match &block.directive {
        Directive::Skip(prefixes) => prefixes.clone(),
        _ => Vec::new(),
    };
    for prefix in &skip {
        assert!(
            cmds.iter().any(|c| c.starts_with(prefix.as_str())),
            "{}: `skip \"{prefix}\"` matches no command of the block",
            place(block.line)
        );
    }
    for c in cmds {
        if !skip.iter().any(|p| c.starts_with(p.as_str())) {
            steps.push((block.line, c));
        }
    }
}

/// An illustration naming an insta snapshot (`….snap`) shows the snapshot's lines as they are.
fn snapshot_lines_shown(block: &Block, reason: &str) {
    let Some(path) = reason.split_whitespace().find(|w| w.ends_with(".snap")) else {
        return;
    };
    let file = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(path);
    let snap = std::fs::read_to_string(&file)
        .unwrap_or_else(|e| panic!("{}: {}: {e}", place(block.line), file.display()));
    // The snapshot's body follows its second `---` line.
    let body = snap.splitn(3, "---\n").nth(2).unwrap_or_default();
    for line in body.lines().filter(|l| !l.trim().is_empty()) {
        assert!(
            block.body.lines().any(|b| b == line),
            "{}: the rendering {path} snapshots is not shown as it is:\n  {line}",
            place(block.line)
        );
    }
}

fn failure(ran: &Ran) -> String {
    format!(
        "{}: `{}` exited {:?}\n--- stdout\n{}\n--- stderr\n{}",
        place(ran.line),
        ran.command,
        ran.code,
        ran.stdout,
        ran.stderr
    )
}

#[test]
fn every_readme_command_runs_as_shown() {
    let text = readme();
    let all = blocks(&text);
    let world = world();
    let server = FakeServer::start();
    troupe_testkit::try_it::install(&server);

    // First pass: what runs, what is a file, what is shown output.
    let mut steps = Vec::new();
    let mut shown_outputs = Vec::new();
    let mut python = Vec::new();
    for block in &all {
        match (&block.directive, block.lang.as_str()) {
            (Directive::NotRun(_), _) => {}
            (Directive::Illustration(reason), _) => snapshot_lines_shown(block, reason),
            (Directive::File(path), _) => {
                let target = world.project.join(path);
                std::fs::create_dir_all(target.parent().unwrap()).unwrap();
                std::fs::write(&target, &block.body).unwrap();
            }
            (Directive::OutputOf(command), _) => {
                shown_outputs.push((block.line, command.clone(), block.body.clone()));
            }
            (Directive::Default | Directive::Skip(_), "sh") => block_steps(block, &mut steps),
            (Directive::Default, "json") => {
                let whole = serde_json::from_str::<serde_json::Value>(&block.body).is_ok();
                let each = block
                    .body
                    .lines()
                    .all(|l| serde_json::from_str::<serde_json::Value>(l).is_ok());
                assert!(
                    whole || each,
                    "{}: the JSON does not parse",
                    place(block.line)
                );
            }
            (Directive::Default, "python") => python.push(block.clone()),
            (directive, lang) => panic!(
                "{}: a `{lang}` block with {directive:?} is neither run nor checked; \
                 give it a readme-check directive (crates/cli/tests/readme_support)",
                place(block.line)
            ),
        }
    }
    assert!(
        steps.len() > 40,
        "too few README commands found: {}",
        steps.len()
    );

    let ran = run_session(&world, &server, &steps);
    // README_CHECK_SHOW=1 prints what every command printed (for writing shown outputs).
    if std::env::var_os("README_CHECK_SHOW").is_some() {
        for r in &ran {
            eprintln!("{}", failure(r));
        }
    }
    let failed: Vec<String> = ran
        .iter()
        .filter(|r| r.code != Some(0))
        .map(failure)
        .collect();
    assert!(failed.is_empty(), "{}", failed.join("\n\n"));

    // Shown outputs: each line printed by the command, in order.
    let by_command: HashMap<String, &Ran> = ran.iter().map(|r| (bare(&r.command), r)).collect();
    for (line, command, shown) in shown_outputs {
        let ran = by_command.get(&command).unwrap_or_else(|| {
            panic!(
                "{}: the output of `{command}`, which no block runs",
                place(line)
            )
        });
        let shown = rewrite(&shown, &rewrites(&server, &world));
        if let Some(missing) = unmatched(&shown, &ran.stdout) {
            panic!(
                "{}: `{command}` did not print\n  {missing}\n--- it printed\n{}",
                place(line),
                ran.stdout
            );
        }
    }

    // The SDK snippet runs as a script with the SDK installed.
    for block in python {
        let file = world.project.join("snippet.py");
        std::fs::write(&file, &block.body).unwrap();
        let out = Command::new(troupe_testkit::python::python())
            .arg(&file)
            .current_dir(&world.project)
            .env("HOME", &world.home)
            .env("ANTHROPIC_BASE_URL", server.url())
            .env("ANTHROPIC_API_KEY", "fake-key")
            .env(troupe_testkit::AGENT_HEADER_VAR, "1")
            .env_remove("OPENAI_BASE_URL")
            .env_remove("TROUPE_TEAM")
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && stdout.contains("ResultMessage"),
            "{}: the Python snippet failed (scripts/test-deps.sh installs the SDK)\n\
             --- stdout\n{stdout}\n--- stderr\n{}",
            place(block.line),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}
