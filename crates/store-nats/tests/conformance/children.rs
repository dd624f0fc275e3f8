//! Child processes of the cross-process tests: this test binary run again with
//! `TROUPE_CONFORMANCE_CHILD=<role>` and `TROUPE_CONFORMANCE_STORE=<spec>`, selecting the
//! ignored `children::child_entry` test.

use std::io::Write;
use std::process::{Child, Command, Stdio};

use troupe_protocol::{Envelope, MailKind};

use crate::backend::{ok, open_spec};

const ROLE: &str = "TROUPE_CONFORMANCE_CHILD";
const STORE: &str = "TROUPE_CONFORMANCE_STORE";

/// Messages each writer process sends.
pub const PER_WRITER: usize = 2_000;

/// Starts a child in `role` on the store `spec` names, stdout piped.
pub fn spawn(role: &str, spec: &str) -> Child {
    Command::new(std::env::current_exe().unwrap())
        .args([
            "--ignored",
            "--exact",
            "children::child_entry",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(ROLE, role)
        .env(STORE, spec)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap()
}

/// Prints a line for the parent (a leading newline: the harness has already printed
/// "test children::child_entry ... ").
fn say(line: &str) {
    println!("\n{line}");
    std::io::stdout().flush().unwrap();
}

/// Entry point of the child processes; does nothing when run as an ordinary test.
#[tokio::test]
#[ignore = "child-process entry point, started by the cross-process tests"]
async fn child_entry() {
    let (Ok(role), Ok(spec)) = (std::env::var(ROLE), std::env::var(STORE)) else {
        return;
    };
    let store = open_spec(&spec).await;
    if let Some(w) = role.strip_prefix("writer:") {
        for i in 0..PER_WRITER {
            let env = Envelope::new(
                MailKind::Message,
                format!("w{w}"),
                "sink",
                format!("{w}:{i}"),
                0,
            );
            ok(store.append(&env).await);
        }
        say("DONE");
    } else if role == "crashing-consumer" {
        // Fetch, report what was seen, then die before acking.
        let batch = ok(store.fetch("sink").await);
        let ids: Vec<_> = batch.messages.iter().map(|m| m.id.as_str()).collect();
        say(&format!("IDS {}", ids.join(",")));
        std::process::abort();
    } else if let Some(handoff) = role.strip_prefix("adopt:") {
        let lease = ok(store.adopt_lease("bob", handoff).await);
        say(&format!("ADOPTED {}", lease.holder().pid));
        let mut line = String::new();
        let _ = std::io::stdin().read_line(&mut line);
    } else if role == "holder" {
        let lease = ok(store.acquire_lease("bob").await);
        say(&format!("HOLDING {}", lease.holder().pid));
        let mut line = String::new();
        let _ = std::io::stdin().read_line(&mut line);
    } else if let Some(rest) = role.strip_prefix("claimer:") {
        // claimer:<name>:<first id>:<count>: tries to claim each task, reports wins.
        let mut parts = rest.split(':');
        let name = parts.next().unwrap();
        let first: u64 = parts.next().unwrap().parse().unwrap();
        let count: u64 = parts.next().unwrap().parse().unwrap();
        say("READY");
        let mut line = String::new();
        let _ = std::io::stdin().read_line(&mut line); // the starting gun
        let mut won = Vec::new();
        for id in first..first + count {
            if store.claim_task(id, name, 1).await.is_ok() {
                won.push(id.to_string());
            }
        }
        say(&format!("WON {}", won.join(",")));
    }
}
