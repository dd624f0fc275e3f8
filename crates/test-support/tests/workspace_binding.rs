//! The generic seam that moves an agent's tools (`Extension::workspace_source`): asked before
//! every model call; when the answer changes the tools work in the new directory from that round
//! on and the model is told, once per change — and told again when they move back.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code may panic on a broken fixture

use serde_json::json;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use troupe_agent::permissions::{PermissionMode, Policy, Rules};
use troupe_agent::{BindingError, Extension, ExtensionContext, WorkspaceBinding, WorkspaceSource};
use troupe_test_support::{builder, TestAgent};
use troupe_testkit::{FakeServer, Reply, Step, TempWorkspace};
use troupe_tools::Workspace;

/// Binds the tools to whatever directory the test puts in `target`.
#[derive(Clone, Default)]
struct Movable {
    target: Arc<Mutex<Option<PathBuf>>>,
}

#[async_trait::async_trait]
impl WorkspaceSource for Movable {
    async fn binding(&self) -> Result<Option<WorkspaceBinding>, BindingError> {
        let target = self.target.lock().unwrap().clone();
        Ok(target.map(|dir| WorkspaceBinding {
            workspace: Arc::new(Workspace::new(&dir).unwrap()),
            writable_roots: Vec::new(),
            note: format!("Your tools now work in {}.", dir.display()),
        }))
    }
}

impl Extension for Movable {
    fn name(&self) -> &str {
        "movable"
    }
    fn workspace_source(&self, _cx: &ExtensionContext<'_>) -> Option<Arc<dyn WorkspaceSource>> {
        Some(Arc::new(self.clone()))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tools_follow_the_binding_from_the_next_round_and_the_model_is_told() {
    let ws = TempWorkspace::new();
    let elsewhere = TempWorkspace::new();
    let elsewhere_root = elsewhere.path().canonicalize().unwrap();
    let server = FakeServer::start();
    let movable = Movable::default();
    let (bind, unbind) = (movable.target.clone(), movable.target.clone());
    let dir = elsewhere_root.clone();
    server.script(
        "solo",
        [
            // Bound while this round's call is answered: its tool still runs where it was.
            Step::dynamic(move |_| {
                *bind.lock().unwrap() = Some(dir.clone());
                Reply::tool("write_file", json!({"path": "a.txt", "content": "before"}))
            }),
            Step::dynamic(move |_| {
                *unbind.lock().unwrap() = None;
                Reply::tool("write_file", json!({"path": "b.txt", "content": "bound"}))
            }),
            Step::tool("write_file", json!({"path": "c.txt", "content": "back"})),
            Step::text("done"),
        ],
    );
    let policy = Policy::new(PermissionMode::BypassPermissions, Rules::default());
    let mut agent = TestAgent::spawn(
        builder(ws.path(), &server, "solo")
            .policy(policy)
            .extension(Arc::new(movable)),
    );
    let outcome = agent.turn(Some("write three files")).await;
    assert_eq!(outcome.text, "done");

    assert_eq!(ws.read("a.txt"), "before");
    assert_eq!(elsewhere.read("b.txt"), "bound");
    assert!(!ws.exists("b.txt"));
    assert_eq!(ws.read("c.txt"), "back");
    assert!(!elsewhere.exists("c.txt"));

    let requests = server.requests_for("solo");
    assert!(!requests[0].all_text().contains("<workspace-change>"));
    let moved = requests[1].all_text();
    assert!(
        moved.contains("<workspace-change>")
            && moved.contains(&format!(
                "Your tools now work in {}",
                elsewhere_root.display()
            )),
        "{moved}"
    );
    let back = requests[2].all_text();
    let ws_root = ws.path().canonicalize().unwrap();
    assert!(
        back.contains(&format!("Your tools work in {} again", ws_root.display())),
        "{back}"
    );
    // One note per change, not one per round.
    assert_eq!(
        requests[3].all_text().matches("<workspace-change>").count(),
        2
    );
    let agent = agent.finish().await;
    assert_eq!(agent.tool_workspace(), ws_root);
}
