//! The REPL in a pseudo-terminal for tests: start it, find the prompt row, wait for the fake
//! model's requests, read what the person's prompt became.
#![allow(dead_code)]

use crate::common::troupe;
use crate::pty_support::Pty;
use std::path::Path;
use std::time::{Duration, Instant};
use troupe_testkit::{FakeServer, Wire};

/// How long any wait may take before the test fails.
pub const LIMIT: Duration = Duration::from_secs(60);

/// The REPL in `ws` in a 30×100 terminal, with `env` set.
pub fn repl_in_pty(ws: &Path, server: &FakeServer, args: &[&str], env: &[(&str, &str)]) -> Pty {
    let mut cmd = troupe(ws, server, Wire::Anthropic);
    cmd.args(args)
        .env("TERM", "xterm-256color")
        .env_remove("NO_COLOR")
        .env_remove("TROUPE_LOG");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let pty = Pty::spawn(cmd, 30, 100);
    pty.wait_for_text("/help for commands", LIMIT);
    pty.wait_for("the prompt", LIMIT, |s| prompt_row(s).is_some());
    pty
}

/// The last row that starts with the prompt, as shown.
pub fn prompt_row(screen: &str) -> Option<String> {
    screen
        .lines()
        .rfind(|l| l.starts_with("> ") || *l == ">")
        .map(|l| l.trim_end().to_string())
}

/// Waits (bounded) until the model has received `n` requests from the lead.
#[track_caller]
pub fn wait_requests(server: &FakeServer, n: usize) {
    let deadline = Instant::now() + LIMIT;
    while server.requests_for("lead").len() < n {
        assert!(
            Instant::now() < deadline,
            "the model never got request {n} (got {})",
            server.requests_for("lead").len()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The text of the last user message of the lead's `i`th request.
pub fn user_text(server: &FakeServer, i: usize) -> String {
    let requests = server.requests_for("lead");
    let messages = requests[i].messages();
    messages
        .iter()
        .rev()
        .find(|m| m.role == troupe_protocol::Role::User)
        .map(|m| m.text())
        .unwrap_or_default()
}

/// Leaves with Ctrl-D at an empty prompt and checks the exit.
pub fn leave(mut pty: Pty) {
    pty.send("\u{4}");
    let status = pty
        .wait_exit(LIMIT)
        .expect("Ctrl-D at an empty prompt ends the REPL");
    assert!(status.success(), "{}", pty.contents());
}
