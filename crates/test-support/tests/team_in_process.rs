//! The team runtime in process, through the builder: the lead (lead extension) spawns a
//! teammate (teammate extension), whose report reaches the lead's inbox.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code may panic on a broken fixture

use serde_json::json;
use troupe_protocol::AgentStatus;
use troupe_test_support::{lead_builder, team, wait_until, Event, TestAgent};
use troupe_testkit::{FakeServer, Step, TempWorkspace};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_teammate_built_through_the_builder_reports_to_the_lead() {
    let ws = TempWorkspace::new();
    let server = FakeServer::start();
    server.script(
        "lead",
        [
            Step::tool(
                "spawn_teammate",
                json!({"name": "alice", "role": "coder", "prompt": "look around"}),
            ),
            Step::text("spawned alice"),
            Step::text("alice is done"),
        ],
    );
    server.script("alice", [Step::text("alice report: all clear")]);
    let team = team(ws.path(), &server, "harness").await;
    let mut lead = TestAgent::spawn(lead_builder(ws.path(), &server, &team));
    let outcome = lead.turn(Some("get alice to look")).await;
    assert_eq!(outcome.text, "spawned alice");

    wait_until(&team, "alice reports and goes idle", async || {
        team.roster().await.ok().is_some_and(|r| {
            r.get("alice").is_some_and(|m| {
                m.status == AgentStatus::Idle && m.last_report.as_deref().is_some()
            })
        })
    })
    .await;
    lead.submit(None);
    let mail = lead
        .wait_for(|e| matches!(e, Event::MailInjected { .. }))
        .await;
    let Event::MailInjected { text, .. } = mail else {
        unreachable!()
    };
    assert!(text.contains("alice report: all clear"), "{text}");
    lead.wait_for(|e| matches!(e, Event::TurnComplete(Ok(_))))
        .await;

    // The teammate's prompt was assembled once: identity, team section, protocols.
    let alice = &server.requests_for("alice")[0];
    let system = alice.system();
    assert!(system.contains("# You\nYou are 'alice', a coder on team 'harness'"));
    assert_eq!(system.matches("# Working on a team").count(), 1, "{system}");
    assert_eq!(system.matches("# Team protocols").count(), 1, "{system}");
    let tools = alice.tool_names();
    for tool in [
        "send_message",
        "read_inbox",
        "shutdown_response",
        "submit_plan",
    ] {
        assert!(tools.contains(&tool.to_string()), "{tools:?}");
    }
    let lead_system = server.requests_for("lead")[0].system();
    assert!(lead_system.contains("You lead team 'harness'"));
    let aborted = team.stop_all(std::time::Duration::from_secs(30)).await;
    assert!(
        aborted.is_empty(),
        "teammates had to be aborted: {aborted:?}"
    );
}
