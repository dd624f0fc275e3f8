//! Mail across "hosts" under stress, through a real `troupe teammate` on a real NATS server:
//! four writer processes (each in a workspace of its own) sending 2,000 messages each to a
//! teammate in another workspace that is SIGKILLed and restarted twice; and the server itself
//! killed and restarted mid-stream. Counted in the teammate's transcript: every message
//! exactly once.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code may panic on a broken fixture

mod common;
mod nats_support;

use nats_support::{kill_and_lapse, wait_for, wait_for_async, Team};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use troupe_protocol::{Envelope, MailKind};
use troupe_testkit::nats::NatsServer;
use troupe_testkit::{FakeServer, Reply, Step, TempWorkspace};

const WRITER_VAR: &str = "TROUPE_TEST_NATS_WRITER";

/// Not a test on its own: the body of a writer process (this binary re-executed) on a host of
/// its own: `url|team|dir|writer|count`.
#[tokio::test]
async fn nats_writer_process() {
    let Ok(spec) = std::env::var(WRITER_VAR) else {
        return;
    };
    let parts: Vec<&str> = spec.split('|').collect();
    let team = Team {
        url: parts[0].to_string(),
        name: parts[1].to_string(),
    };
    let store = team.store(Path::new(parts[2])).await;
    let (writer, count) = (parts[3], parts[4].parse::<usize>().unwrap());
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

fn spawn_writers(team: &Team, hosts: &[TempWorkspace], count: usize) -> Vec<Child> {
    hosts
        .iter()
        .enumerate()
        .map(|(w, ws)| {
            Command::new(std::env::current_exe().unwrap())
                .args([
                    "--exact",
                    "nats_writer_process",
                    "--nocapture",
                    "--test-threads",
                    "1",
                ])
                .env(
                    WRITER_VAR,
                    format!(
                        "{}|{}|{}|w{w}|{count}",
                        team.url,
                        team.name,
                        ws.path().display()
                    ),
                )
                .stdout(Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect()
}

fn server() -> FakeServer {
    let server = FakeServer::start();
    server.set_fallback(|_| Step::reply(Reply::text("ok")));
    server
}

const SINK: [&str; 2] = ["--prompt", "consume your mail"];

#[tokio::test]
async fn four_writer_hosts_times_2000_to_a_teammate_killed_and_restarted_twice_arrive_exactly_once()
{
    const WRITERS: usize = 4;
    const PER_WRITER: usize = 2_000;
    let team = Team::new();
    let sink_host = TempWorkspace::new();
    let writer_hosts: Vec<TempWorkspace> = (0..WRITERS).map(|_| TempWorkspace::new()).collect();
    let server = server();
    let probe = team.store(&sink_host.path().join(".probe")).await;
    let mut sink = team.started(sink_host.path(), &server, "sink", &SINK).await;
    let writers = spawn_writers(&team, &writer_hosts, PER_WRITER);
    // Kill the consumer twice while mail is flowing; each time its host is gone until its
    // lease lapses, then it is started again and takes its mailbox over.
    let expected = WRITERS * PER_WRITER;
    for _ in 0..2 {
        let before = team.delivered(sink_host.path(), "sink").0.len();
        // Progress, or everything already in (a fast run delivers it all before the second
        // kill; the kill and takeover are still exercised).
        wait_for("some progress", || {
            let now = team.delivered(sink_host.path(), "sink").0.len();
            now > before || now == expected
        })
        .await;
        kill_and_lapse(&mut sink, &probe, "sink").await;
        sink = team.started(sink_host.path(), &server, "sink", &SINK).await;
    }
    for mut w in writers {
        assert!(w.wait().unwrap().success());
    }
    wait_for_async("every message in the transcript and acked", async || {
        team.delivered(sink_host.path(), "sink").0.len() == expected
            && probe.peek("sink").await.unwrap().is_empty()
    })
    .await;
    let (ids, total) = team.delivered(sink_host.path(), "sink");
    sink.kill().unwrap();
    sink.wait().unwrap();
    assert_eq!(
        (ids.len(), total),
        (expected, expected),
        "exactly {expected} delivered, none twice"
    );
}

#[tokio::test]
async fn the_server_restarted_mid_stream_loses_nothing() {
    const PER_WRITER: usize = 1_000;
    let mut nats = NatsServer::start();
    let team = Team::on(&nats.url());
    let sink_host = TempWorkspace::new();
    let writer_hosts: Vec<TempWorkspace> = (0..2).map(|_| TempWorkspace::new()).collect();
    let server = server();
    let sink = team.started(sink_host.path(), &server, "sink", &SINK).await;
    let writers = spawn_writers(&team, &writer_hosts, PER_WRITER);
    wait_for("some progress", || {
        team.delivered(sink_host.path(), "sink").0.len() > 100
    })
    .await;
    // SIGKILL the server (nothing flushed on the way out) and start it again on its port.
    nats.restart();
    for mut w in writers {
        assert!(
            w.wait().unwrap().success(),
            "a writer failed across the restart"
        );
    }
    let expected = 2 * PER_WRITER;
    let probe = team.store(&sink_host.path().join(".probe")).await;
    wait_for_async("every message in the transcript and acked", async || {
        team.delivered(sink_host.path(), "sink").0.len() == expected
            && probe.peek("sink").await.unwrap().is_empty()
    })
    .await;
    let (ids, total) = team.delivered(sink_host.path(), "sink");
    let mut sink = sink;
    sink.kill().unwrap();
    sink.wait().unwrap();
    assert_eq!(
        (ids.len(), total),
        (expected, expected),
        "none lost, none twice"
    );
}
