//! A new user's first minutes, through the binary: a base URL without a scheme, ambiguous
//! provider variables, `troupe doctor` against the fake server and against a dead port, and
//! `/model` switching the model mid-session.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code may panic on a broken fixture

mod common;

use common::{repl, run, stderr, troupe};
use serde_json::Value;
use std::process::Command;
use troupe_testkit::{FakeServer, Step, TempWorkspace, Wire};

/// An address nothing listens on.
fn dead_url() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    format!("http://127.0.0.1:{port}")
}

/// `troupe doctor ARGS` in `ws` with only `env` naming the model.
fn doctor(ws: &TempWorkspace, env: &[(&str, &str)], args: &[&str]) -> std::process::Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_troupe"));
    cmd.current_dir(ws.path())
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("ANTHROPIC_BASE_URL")
        .env_remove("ANTHROPIC_AUTH_TOKEN")
        .env_remove("OPENAI_API_KEY")
        .env_remove("OPENAI_BASE_URL")
        .env_remove("TROUPE_MODEL")
        .env_remove("TROUPE_STORE")
        .env("HOME", ws.join(".home"))
        .arg("doctor")
        .args(args);
    for (k, v) in env {
        cmd.env(k, v);
    }
    run(&mut cmd)
}

/// The check named `name` of a `doctor --json` report.
fn check<'a>(report: &'a Value, name: &str) -> &'a Value {
    report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["check"] == name)
        .unwrap_or_else(|| panic!("no check {name}: {report}"))
}

#[test]
fn a_base_url_without_a_scheme_is_an_error_showing_the_fix() {
    let ws = TempWorkspace::new();
    let server = FakeServer::start();
    let out = run(troupe(ws.path(), &server, Wire::OpenAi)
        .env("OPENAI_BASE_URL", "localhost:8080/v1")
        .args(["-p", "hi"]));
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(
        err.contains("OPENAI_BASE_URL=localhost:8080/v1")
            && err.contains("http://localhost:8080/v1"),
        "{err}"
    );
    assert!(!err.contains("builder error"), "{err}");
    assert!(server.journal().is_empty());
}

#[test]
fn ambiguous_provider_variables_get_a_note_saying_what_was_chosen() {
    let ws = TempWorkspace::new();
    let server = FakeServer::start();
    server.script("lead", [Step::text("from anthropic"), Step::text("again")]);
    let out = run(troupe(ws.path(), &server, Wire::Anthropic)
        .env("OPENAI_BASE_URL", dead_url() + "/v1")
        .args(["-p", "hi"]));
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "from anthropic"
    );
    let err = stderr(&out);
    // The provider's note; the workspace is not a repository, which has a note of its own.
    let notes: Vec<&str> = err
        .lines()
        .filter(|l| l.contains("note:") && !l.contains("not in a git repository"))
        .collect();
    assert_eq!(notes.len(), 1, "one line: {err}");
    assert!(
        notes[0].contains("ANTHROPIC_API_KEY")
            && notes[0].contains("OPENAI_BASE_URL")
            && notes[0].contains("using anthropic")
            && notes[0].contains("--provider openai"),
        "{err}"
    );
    // Naming the provider settles it: no note.
    let out = run(troupe(ws.path(), &server, Wire::Anthropic)
        .env("OPENAI_BASE_URL", dead_url() + "/v1")
        .args(["-p", "hi", "--provider", "anthropic"]));
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    assert!(!stderr(&out).contains("note:"), "{}", stderr(&out));
}

#[test]
fn doctor_passes_against_the_fake_server() {
    let ws = TempWorkspace::new();
    let server = FakeServer::start();
    server.script("doctor", [Step::text("pong"), Step::text("pong")]);
    let url = server.url();
    let env = [
        ("ANTHROPIC_BASE_URL", url.as_str()),
        (troupe_testkit::AGENT_HEADER_VAR, "1"),
        ("ANTHROPIC_API_KEY", "fake-key"),
    ];
    let out = doctor(&ws, &env, &["--json"]);
    let report: Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", stderr(&out)));
    for name in ["configuration", "model", "team store"] {
        assert_eq!(check(&report, name)["ok"], true, "{name}: {report}");
    }
    assert!(check(&report, "model")["detail"]
        .as_str()
        .unwrap()
        .contains("answered"));
    // The exit code says whether everything passed (the sandbox depends on the kernel).
    let all = report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .all(|c| c["ok"] == true);
    assert_eq!(report["ok"], all);
    assert_eq!(out.status.code(), Some(if all { 0 } else { 1 }));
    let request = server
        .requests_for("doctor")
        .pop()
        .expect("doctor asked the model");
    assert_eq!(request.body["max_tokens"], 1);

    let out = doctor(&ws, &env, &[]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.lines().any(|l| l.starts_with("✓ model")), "{text}");
    assert!(
        text.lines().any(|l| l.starts_with("✓ configuration")),
        "{text}"
    );
    assert!(
        !ws.join(".troupe").exists(),
        "a check writes nothing that stays"
    );
}

#[test]
fn doctor_fails_on_a_dead_port_and_names_the_fix() {
    let ws = TempWorkspace::new();
    let url = dead_url();
    let env = [
        ("ANTHROPIC_BASE_URL", url.as_str()),
        (troupe_testkit::AGENT_HEADER_VAR, "1"),
        ("ANTHROPIC_API_KEY", "fake-key"),
    ];
    let out = doctor(&ws, &env, &[]);
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8_lossy(&out.stdout);
    let model = text
        .lines()
        .position(|l| l.starts_with("✗ model"))
        .unwrap_or_else(|| panic!("{text}"));
    let fix = text.lines().nth(model + 1).unwrap();
    assert!(
        fix.contains("fix: start the model server at") && fix.contains(&url),
        "{text}"
    );

    let out = doctor(&ws, &env, &["--json"]);
    assert_eq!(out.status.code(), Some(1));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["ok"], false);
    assert_eq!(check(&report, "model")["ok"], false);
    assert!(check(&report, "model")["detail"]
        .as_str()
        .unwrap()
        .contains("connection refused"));
}

#[test]
fn doctor_reports_a_settings_file_that_does_not_parse_and_a_missing_key() {
    let ws = TempWorkspace::new();
    ws.write(".troupe/settings.json", "{ \"model\": ");
    let out = doctor(&ws, &[], &["--json"]);
    assert_eq!(out.status.code(), Some(1));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let config = check(&report, "configuration");
    assert_eq!(config["ok"], false);
    assert!(
        config["detail"].as_str().unwrap().contains("settings.json"),
        "{config}"
    );
    let model = check(&report, "model");
    assert_eq!(model["ok"], false);
    assert!(
        model["fix"].as_str().unwrap().contains("ANTHROPIC_API_KEY"),
        "{model}"
    );
}

#[test]
fn model_switches_the_model_mid_session() {
    let ws = TempWorkspace::new();
    let server = FakeServer::start();
    server.script("lead", [Step::text("one"), Step::text("two")]);
    let out = repl(
        ws.path(),
        &server,
        &["--model", "first-model"],
        "hello\n/model\n/model second-model\nagain\n/exit\n",
    );
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("model: first-model"), "{text}");
    assert!(text.contains("first-model → second-model"), "{text}");
    let models: Vec<String> = server
        .requests_for("lead")
        .iter()
        .map(|r| r.model())
        .collect();
    assert_eq!(models, ["first-model", "second-model"]);
}

#[test]
fn doctor_names_a_nats_store_that_does_not_answer() {
    let ws = TempWorkspace::new();
    let server = FakeServer::start();
    server.script("doctor", [Step::text("pong")]);
    let url = server.url();
    let nats = dead_url().replace("http://", "nats://");
    let env = [
        ("ANTHROPIC_BASE_URL", url.as_str()),
        (troupe_testkit::AGENT_HEADER_VAR, "1"),
        ("ANTHROPIC_API_KEY", "fake-key"),
        ("TROUPE_STORE", nats.as_str()),
    ];
    let out = doctor(&ws, &env, &["--json"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let store = check(&report, "team store");
    assert_eq!(store["ok"], false, "{store}");
    assert!(
        store["fix"].as_str().unwrap().contains("nats-server -js"),
        "{store}"
    );
    assert_eq!(check(&report, "model")["ok"], true, "{report}");
}

#[test]
fn bash_starts_in_the_folder_troupe_was_started_from() {
    // As in Claude Code: started in a subfolder of the workspace, bash runs there (the
    // workspace stays the repository's root: file tool paths are relative to it).
    let ws = TempWorkspace::new();
    ws.git_init();
    ws.write("crates/app/src/main.rs", "fn main() {}\n");
    ws.git_commit_all("start");
    let server = FakeServer::start();
    // `pwd && ls` run from `dir`: the requests so far and the call's result.
    let pwd_from = |dir: &std::path::Path| {
        let pwd = Step::tool("bash", serde_json::json!({"command": "pwd && ls"}));
        server.script("lead", [pwd, Step::text("done")]);
        let out = run(troupe(ws.path(), &server, Wire::Anthropic)
            .current_dir(dir)
            .args([
                "-p",
                "where am I?",
                "--permission-mode",
                "bypassPermissions",
            ]));
        assert!(out.status.success(), "{}", stderr(&out));
        let requests = server.requests_for("lead");
        let (result, _) = requests[requests.len() - 1].last_tool_result().unwrap();
        (requests, result)
    };
    let app = ws.join("crates/app").canonicalize().unwrap();
    let (requests, result) = pwd_from(&app);
    assert!(
        result.starts_with(&format!("{}\nsrc\n", app.display())),
        "{result}"
    );
    assert!(
        requests[0].system().contains("bash starts in"),
        "told where"
    );
    // The workspace is still the repository's root: its .troupe is there, not in the subfolder.
    assert!(ws.exists(".troupe") && !app.join(".troupe").exists());

    // Started at the root (or outside the workspace, with --cwd), bash runs at the root.
    let (requests, result) = pwd_from(ws.path());
    let root = ws.path().canonicalize().unwrap();
    assert!(
        result.starts_with(&format!("{}\n", root.display())),
        "{result}"
    );
    assert!(!requests[2].system().contains("bash starts in"));
}

#[test]
fn version_is_answered_early_as_clap_answers_it() {
    let version = |args: &[&str]| {
        let out = run(Command::new(env!("CARGO_BIN_EXE_troupe")).args(args));
        assert!(out.status.success(), "{args:?}: {}", stderr(&out));
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let early = version(&["--version"]);
    assert_eq!(early, format!("troupe {}\n", env!("CARGO_PKG_VERSION")));
    assert_eq!(version(&["-V"]), early);
    // With another flag clap parses the whole line and answers the same.
    assert_eq!(version(&["-p", "--version"]), early);
}
