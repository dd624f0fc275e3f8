//! Transcripts are team state: a teammate that rejoins on another "host" — another workspace
//! folder, nothing shared with the first but a real NATS server — continues its conversation
//! there, whether started by hand or respawned as a process by a lead's `--continue`.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code may panic on a broken fixture

mod common;
mod nats_support;

use common::{run, stderr, troupe};
use nats_support::{kill_and_lapse, wait_for_async, Team};
use serde_json::json;
use troupe_protocol::{Envelope, MailKind};
use troupe_testkit::{FakeServer, Reply, Step, TempWorkspace, Wire};

/// The requests `agent` made that contain `text`.
fn requests_with(server: &FakeServer, agent: &str, text: &str) -> Vec<String> {
    server
        .requests_for(agent)
        .iter()
        .map(troupe_testkit::Recorded::all_text)
        .filter(|t| t.contains(text))
        .collect()
}

#[tokio::test]
async fn a_teammate_killed_on_one_host_rejoins_on_another_with_its_conversation() {
    let (b, c) = (TempWorkspace::new(), TempWorkspace::new());
    let team = Team::new();
    let server = FakeServer::start();
    server.set_fallback(|_| Step::reply(Reply::text("ok")));
    server.script("bob", [Step::text("noted: the word is pelican")]);
    let s = team.store(&c.path().join(".probe")).await;
    let mut on_b = team
        .started(
            b.path(),
            &server,
            "bob",
            &["--prompt", "Remember the word pelican."],
        )
        .await;
    // bob's answer is in the team's copy of his transcript, not only in host B's file.
    wait_for_async("bob's answer to reach the store", async || {
        s.read_transcript("bob")
            .await
            .unwrap()
            .entries
            .iter()
            .any(|e| e.to_string().contains("noted: the word is pelican"))
    })
    .await;
    // Host B vanishes.
    kill_and_lapse(&mut on_b, &s, "bob").await;
    assert!(!team.transcript(c.path(), "bob").exists());

    // bob rejoins on host C, with no prompt: he continues from his transcript, and mail wakes him.
    let on_c = team.started(c.path(), &server, "bob", &[]).await;
    s.append(&Envelope::new(
        MailKind::Message,
        "lead",
        "bob",
        "what was the word?",
        troupe_agent::transcript::now_ms(),
    ))
    .await
    .unwrap();
    // Awaited: the test's store client lives on this runtime's one thread.
    wait_for_async("bob on host C to be asked about the word", async || {
        !requests_with(&server, "bob", "what was the word?").is_empty()
    })
    .await;
    let asked = requests_with(&server, "bob", "what was the word?");
    assert!(
        asked[0].contains("Remember the word pelican.")
            && asked[0].contains("noted: the word is pelican"),
        "the earlier conversation is in bob's request on host C: {}",
        asked[0]
    );
    // Host C's cache holds it all, and the store the new round too.
    let cached = std::fs::read_to_string(team.transcript(c.path(), "bob")).unwrap();
    assert!(cached.contains("noted: the word is pelican"), "{cached}");
    wait_for_async("host C's round to reach the store", async || {
        s.read_transcript("bob")
            .await
            .unwrap()
            .entries
            .iter()
            .any(|e| e.to_string().contains("what was the word?"))
    })
    .await;
    let mut on_c = on_c;
    let _ = on_c.kill();
    let _ = on_c.wait();
}

#[tokio::test]
async fn a_process_teammate_continued_by_a_lead_keeps_its_conversation_without_the_local_cache() {
    let ws = TempWorkspace::new();
    let team = Team::new();
    let server = FakeServer::start();
    common::ack_fallback(&server);
    common::lead_spawns(
        &server,
        json!({"name": "alice", "role": "coder", "prompt": "remember the word pineapple"}),
    );
    server.script("alice", [Step::text("noted pineapple")]);
    let lead = |extra: &[&str]| {
        let out = run(troupe(ws.path(), &server, Wire::Anthropic)
            .args(["-p", "go", "--output-format", "json"])
            .args(["--permission-mode", "bypassPermissions"])
            .args(["--teammate-mode", "process", "--team-timeout", "120"])
            .args(team.args())
            .args(extra));
        assert!(out.status.success(), "stderr: {}", stderr(&out));
    };
    lead(&[]);
    let s = team.store(&ws.path().join(".probe")).await;
    assert!(s
        .read_transcript("alice")
        .await
        .unwrap()
        .entries
        .iter()
        .any(|e| e.to_string().contains("noted pineapple")));
    // This workspace loses its copy of the team's transcripts (a fresh checkout, another
    // machine's view): only the store has alice's conversation now.
    std::fs::remove_dir_all(
        ws.path()
            .join(format!(".troupe/teams/{}/transcripts", team.name)),
    )
    .unwrap();
    s.append(&Envelope::new(
        MailKind::Message,
        "lead",
        "alice",
        "what was the word?",
        troupe_agent::transcript::now_ms(),
    ))
    .await
    .unwrap();
    server.script(
        "alice",
        [Step::dynamic(|req| {
            let text = req.all_text();
            assert!(
                text.contains("remember the word pineapple") && text.contains("noted pineapple"),
                "alice's conversation was restored from the store: {text}"
            );
            assert!(
                text.contains("what was the word?"),
                "her mail was delivered"
            );
            Reply::text("the word was pineapple")
        })],
    );
    lead(&["--continue"]);
    assert!(!requests_with(&server, "lead", "the word was pineapple").is_empty());
}
