//! The team runtime in process, against the fake model server: owned member tasks end at a
//! round boundary and `stop_all` waits for them.

use crate::runtime::{SpawnRequest, Team, TeamConfig, TeammateMode};
use std::path::Path;
use std::time::Duration;
use troupe_agent::permissions::{PermissionMode, Policy};
use troupe_model::{ModelConfig, Provider};
use troupe_protocol::AgentStatus;
use troupe_testkit::{FakeServer, Step};

/// Generous bound for conditions a broken build might never reach; nothing asserts on time.
const BOUND: Duration = Duration::from_secs(60);

async fn team(ws: &Path, server: &FakeServer) -> Team {
    let url = server.url();
    let env = |key: &str| match key {
        "ANTHROPIC_BASE_URL" => Some(url.clone()),
        "ANTHROPIC_API_KEY" => Some("test".to_string()),
        "TROUPE_AGENT_HEADER" => Some("1".to_string()),
        _ => None,
    };
    let model = ModelConfig::resolve(Some(Provider::Anthropic), Some("fake".into()), &env)
        .unwrap_or_else(|e| panic!("{e}"));
    let troupe_dir = ws.join(".troupe");
    let config = TeamConfig {
        team: "t".into(),
        workspace: ws.to_path_buf(),
        troupe_dir: troupe_dir.clone(),
        recipe: {
            let mut recipe = troupe_agent::Recipe::new(model.clone(), model.build());
            recipe.max_tokens = 1024;
            recipe.policy = Policy::new(PermissionMode::BypassPermissions, Default::default());
            recipe
        },
        mode: TeammateMode::InProcess,
        exe: None,
        agents: Default::default(),
        mcp_servers: Vec::new(),
        process_options: serde_json::Value::Null,
    };
    let store =
        troupe_store::file::open_with(&troupe_dir, "t", troupe_store::Durability::OsBuffered)
            .unwrap_or_else(|e| panic!("{e}"));
    Team::open(config, store, None)
        .await
        .unwrap_or_else(|e| panic!("{e}"))
}

/// Waits (bounded) until `cond` holds, yielding to the runtime in between.
async fn until(what: &str, mut cond: impl FnMut() -> bool) {
    let waited = tokio::time::timeout(BOUND, async {
        while !cond() {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
    assert!(waited.is_ok(), "never happened: {what}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stop_all_waits_for_a_teammate_to_finish_its_round() {
    let ws = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let server = FakeServer::start();
    // One round: a bash call that blocks until the test lets it go, then writes a marker.
    // Were the turn to continue, the model would be asked again (and answer with text).
    let cmd = "touch started; while [ ! -f go ]; do sleep 0.02; done; echo done > finished";
    server.script(
        "alice",
        [
            Step::tool("bash", serde_json::json!({ "command": cmd })),
            Step::text("should not be asked for"),
        ],
    );
    let team = team(ws.path(), &server).await;
    team.spawn(SpawnRequest {
        name: "alice".into(),
        role: "coder".into(),
        prompt: "work".into(),
        model: None,
        require_plan: false,
        isolation: crate::spec::Isolation::Shared,
        auto_claim: true,
        profile: Default::default(),
    })
    .await
    .unwrap_or_else(|e| panic!("{e}"));
    let started = ws.path().join("started");
    until("alice's tool call started", || started.exists()).await;
    // What it is doing is visible without being in the synced roster.
    let roster = team.roster().await.unwrap_or_else(|e| panic!("{e}"));
    let alice = roster
        .get("alice")
        .cloned()
        .unwrap_or_else(|| panic!("no alice"));
    assert_eq!(alice.status, AgentStatus::Working);
    assert!(
        alice
            .activity
            .as_deref()
            .is_some_and(|a| a.starts_with("bash")),
        "{alice:?}"
    );

    let stopper = {
        let team = team.clone();
        tokio::spawn(async move { team.stop_all(BOUND).await })
    };
    let shared = team.shared().clone();
    until("the stop was signalled", || {
        shared.tasks.lock().is_ok_and(|t| t.cancel.is_cancelled())
    })
    .await;
    // Mid-round: the tool call is still blocked, so stop_all cannot have returned.
    assert!(!stopper.is_finished(), "stop_all returned mid-round");
    std::fs::write(ws.path().join("go"), "").unwrap_or_else(|e| panic!("{e}"));
    let aborted = stopper.await.unwrap_or_else(|e| panic!("{e}"));

    assert!(aborted.is_empty(), "had to abort {aborted:?}");
    assert!(
        ws.path().join("finished").exists(),
        "the round did not finish"
    );
    assert!(!team.is_running("alice"));
    // It ended at the round boundary: no further model call, and it stays resumable.
    assert_eq!(server.requests_for("alice").len(), 1);
    let roster = team.roster().await.unwrap_or_else(|e| panic!("{e}"));
    let alice = roster
        .get("alice")
        .cloned()
        .unwrap_or_else(|| panic!("no alice"));
    assert_eq!(alice.status, AgentStatus::Idle);
    assert_eq!(alice.activity, None);
}
