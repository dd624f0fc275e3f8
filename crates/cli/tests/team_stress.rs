//! Mailbox stress through a real teammate process: concurrent writer processes, the owner
//! consuming into its transcript, and SIGKILL in the middle — nothing lost, nothing twice.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code may panic on a broken fixture

mod common;

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;
use troupe_protocol::{Envelope, MailKind};
use troupe_store::file::open as open_store;
use troupe_testkit::{FakeServer, Reply, Step, TempWorkspace, Wire};

const WRITER_VAR: &str = "TROUPE_TEST_MAIL_WRITER";

/// Not a test on its own: the body of a writer process (this binary re-executed).
#[tokio::test]
async fn mail_writer_process() {
    let Ok(spec) = std::env::var(WRITER_VAR) else {
        return;
    };
    let parts: Vec<&str> = spec.split('|').collect();
    let (dir, writer, count) = (parts[0], parts[1], parts[2].parse::<usize>().unwrap());
    let store = open_store(&Path::new(dir).join(".troupe"), "default").unwrap();
    for k in 0..count {
        let env = Envelope::new(
            MailKind::Message,
            writer,
            "sink",
            format!("{writer}-{k}"),
            0,
        );
        store.append(&env).await.unwrap();
    }
}

fn spawn_writers(ws: &Path, writers: usize, count: usize) -> Vec<Child> {
    (0..writers)
        .map(|w| {
            Command::new(std::env::current_exe().unwrap())
                .args([
                    "--exact",
                    "mail_writer_process",
                    "--nocapture",
                    "--test-threads",
                    "1",
                ])
                .env(WRITER_VAR, format!("{}|w{w}|{count}", ws.display()))
                .stdout(Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect()
}

fn spawn_sink(ws: &Path, server: &FakeServer) -> Child {
    let mut cmd = common::troupe(ws, server, Wire::Anthropic);
    cmd.args([
        "teammate",
        "--name",
        "sink",
        "--role",
        "sink",
        "--prompt",
        "consume your mail",
        "--permission-mode",
        "bypassPermissions",
    ])
    .stdout(Stdio::null())
    .stderr(Stdio::null());
    cmd.spawn().unwrap()
}

/// (distinct ids, total ids) recorded as delivered in the sink's transcript.
fn delivered(ws: &Path) -> (usize, usize) {
    let (ids, total) =
        common::delivered_mail(&ws.join(".troupe/teams/default/transcripts/sink.jsonl"));
    (ids.len(), total)
}

use troupe_testkit::wait_until as wait_for;

async fn joined(ws: &Path) -> bool {
    common::team_roster(ws)
        .await
        .is_some_and(|r| r.to_string().contains("\"sink\""))
}

/// Starts the sink teammate process and waits until it is on the roster.
async fn start_joined_sink(ws: &Path, server: &FakeServer) -> Child {
    let sink = spawn_sink(ws, server);
    wait_for("the sink to join", Duration::from_secs(30), || {
        troupe_testkit::block_on(joined(ws))
    });
    sink
}

/// Waits until `expected` distinct ids are in the transcript, lets any stray duplicate land,
/// stops the sink, and returns (distinct, total) ids delivered.
fn final_count(ws: &Path, mut sink: Child, expected: usize, limit: Duration) -> (usize, usize) {
    wait_for("every message in the transcript", limit, || {
        delivered(ws).0 == expected
    });
    std::thread::sleep(Duration::from_millis(200));
    let counts = delivered(ws);
    sink.kill().unwrap();
    sink.wait().unwrap();
    counts
}

fn server() -> FakeServer {
    let server = FakeServer::start();
    server.set_fallback(|_| Step::reply(Reply::text("ok")));
    server
}

#[tokio::test]
async fn four_writer_processes_times_2000_messages_reach_the_transcript_exactly_once() {
    let ws = TempWorkspace::new();
    let server = server();
    let sink = start_joined_sink(ws.path(), &server).await;
    for mut w in spawn_writers(ws.path(), 4, 2000) {
        assert!(w.wait().unwrap().success());
    }
    let (distinct, total) = final_count(ws.path(), sink, 8000, Duration::from_secs(180));
    assert_eq!(
        (distinct, total),
        (8000, 8000),
        "exactly 8,000 distinct ids, none twice"
    );
}

#[tokio::test]
async fn sigkill_of_the_consuming_teammate_loses_and_duplicates_nothing() {
    let ws = TempWorkspace::new();
    let server = server();
    let mut sink = start_joined_sink(ws.path(), &server).await;
    let writers = spawn_writers(ws.path(), 4, 500);
    // Kill the consumer twice while mail is flowing, restarting it each time.
    for _ in 0..2 {
        let before = delivered(ws.path()).0;
        wait_for("some progress", Duration::from_secs(60), || {
            delivered(ws.path()).0 > before
        });
        sink.kill().unwrap(); // SIGKILL
        sink.wait().unwrap();
        sink = spawn_sink(ws.path(), &server);
    }
    for mut w in writers {
        assert!(w.wait().unwrap().success());
    }
    let (distinct, total) = final_count(ws.path(), sink, 2000, Duration::from_secs(120));
    assert_eq!(
        (distinct, total),
        (2000, 2000),
        "nothing lost, nothing delivered twice"
    );
    let store = open_store(&ws.path().join(".troupe"), "default").unwrap();
    assert!(
        store.peek("sink").await.unwrap().messages.is_empty(),
        "the inbox is drained"
    );
}

#[test]
fn a_corrupt_line_in_the_middle_of_a_mailbox_costs_no_other_message() {
    let ws = TempWorkspace::new();
    let server = server();
    let inbox = ws.path().join(".troupe/teams/default/inbox");
    std::fs::create_dir_all(&inbox).unwrap();
    let mut log = String::new();
    for k in 0..3 {
        log.push_str(
            &serde_json::to_string(&Envelope::new(
                MailKind::Message,
                "lead",
                "sink",
                format!("before-{k}"),
                0,
            ))
            .unwrap(),
        );
        log.push('\n');
    }
    log.push_str("{\"id\": \"broken\", \"type\": \"message\", \"from\": \n");
    for k in 0..3 {
        log.push_str(
            &serde_json::to_string(&Envelope::new(
                MailKind::Message,
                "lead",
                "sink",
                format!("after-{k}"),
                0,
            ))
            .unwrap(),
        );
        log.push('\n');
    }
    std::fs::write(inbox.join("sink.jsonl"), log).unwrap();
    let mut cmd = common::troupe(ws.path(), &server, Wire::Anthropic);
    let mut sink = cmd
        .args([
            "teammate",
            "--name",
            "sink",
            "--role",
            "sink",
            "--prompt",
            "consume",
            "--permission-mode",
            "bypassPermissions",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for("the six good messages", Duration::from_secs(60), || {
        delivered(ws.path()).0 == 6
    });
    sink.kill().unwrap();
    let out = sink.wait_with_output().unwrap();
    let transcript = std::fs::read_to_string(
        ws.path()
            .join(".troupe/teams/default/transcripts/sink.jsonl"),
    )
    .unwrap();
    for k in 0..3 {
        assert!(
            transcript.contains(&format!("before-{k}"))
                && transcript.contains(&format!("after-{k}"))
        );
    }
    let events =
        std::fs::read_to_string(ws.path().join(".troupe/teams/default/events.jsonl")).unwrap();
    assert!(
        events.contains("corrupt_mail"),
        "the corruption is recorded as an event"
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.to_lowercase().contains("corrupt"),
        "and warned about: {stderr}"
    );
}
