//! The loop through the builder, in process: a scripted model's tool calls run, results go back,
//! and an extension's tool, prompt section and gate reach the agent from one registration.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code may panic on a broken fixture

use serde_json::{json, Value};
use std::sync::Arc;
use troupe_agent::permissions::{PermissionMode, Policy, Rules};
use troupe_agent::{Extension, ExtensionContext, ToolGate};
use troupe_test_support::{builder, Event, TestAgent};
use troupe_testkit::{FakeServer, Step, TempWorkspace};
use troupe_tools::{DynTool, Effect, Tool, ToolContext, ToolOutput};

fn bypass() -> Policy {
    Policy::new(PermissionMode::BypassPermissions, Rules::default())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tool_calls_run_and_their_results_reach_the_model() {
    let ws = TempWorkspace::new();
    let server = FakeServer::start();
    server.script(
        "solo",
        [
            Step::tool(
                "write_file",
                json!({"path": "note.txt", "content": "written in process"}),
            ),
            Step::text("wrote it"),
        ],
    );
    let mut agent = TestAgent::spawn(builder(ws.path(), &server, "solo").policy(bypass()));
    agent.submit(Some("write a note"));
    let started = agent
        .wait_for(|e| matches!(e, Event::ToolStarted { .. }))
        .await;
    assert!(matches!(started, Event::ToolStarted { name, .. } if name == "write_file"));
    let done = agent
        .wait_for(|e| matches!(e, Event::TurnComplete(_)))
        .await;
    let Event::TurnComplete(Ok(outcome)) = done else {
        panic!("the turn failed: {done:?}");
    };
    assert_eq!(outcome.text, "wrote it");
    assert_eq!(outcome.model_calls, 2);
    // A turn with no new input and no mail has nothing to answer.
    let idle = agent.turn(None).await;
    assert_eq!(idle.end, troupe_agent::TurnEnd::Nothing);
    assert_eq!(ws.read("note.txt"), "written in process");
    let (result, is_error) = server.requests_for("solo")[1].last_tool_result().unwrap();
    assert!(!is_error, "{result}");
    let agent = agent.finish().await;
    assert_eq!(agent.messages().len(), 4);
}

/// A tool that answers with a fixed word.
struct Ping;

#[async_trait::async_trait]
impl Tool for Ping {
    fn name(&self) -> &str {
        "ping"
    }
    fn description(&self) -> &str {
        "Answers pong."
    }
    fn input_schema(&self) -> Value {
        json!({"type": "object", "properties": {}})
    }
    fn effect(&self, _input: &Value) -> Effect {
        Effect::ReadOnly
    }
    async fn call(&self, _input: Value, ctx: &ToolContext) -> ToolOutput {
        ToolOutput::ok(format!("pong for {}", ctx.agent))
    }
}

/// Refuses every bash call.
struct NoBash;

#[async_trait::async_trait]
impl ToolGate for NoBash {
    async fn check(&self, tool: &str, _effect: Effect, _input: &Value) -> Option<String> {
        (tool == "bash").then(|| "the test extension refuses bash".to_string())
    }
}

struct TestExtension;

impl Extension for TestExtension {
    fn name(&self) -> &str {
        "test"
    }
    fn tools(&self, _cx: &ExtensionContext<'_>) -> Vec<DynTool> {
        vec![Arc::new(Ping)]
    }
    fn prompt_sections(&self, cx: &ExtensionContext<'_>) -> Vec<String> {
        vec![format!("# Test section\nfor {}", cx.agent)]
    }
    fn gates(&self, _cx: &ExtensionContext<'_>) -> Vec<Arc<dyn ToolGate>> {
        vec![Arc::new(NoBash)]
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_extension_registration_adds_a_tool_a_prompt_section_and_a_gate() {
    let ws = TempWorkspace::new();
    let server = FakeServer::start();
    server.script(
        "ext",
        [
            Step::tool("ping", json!({})),
            Step::tool("bash", json!({"command": "touch gated"})),
            Step::text("done"),
        ],
    );
    let built = builder(ws.path(), &server, "ext")
        .policy(bypass())
        .extension(Arc::new(TestExtension));
    let mut agent = TestAgent::spawn(built);
    let outcome = agent.turn(Some("go")).await;
    assert_eq!(outcome.text, "done");
    let requests = server.requests_for("ext");
    let system = requests[0].system();
    assert_eq!(
        system.matches("# Test section\nfor ext").count(),
        1,
        "{system}"
    );
    assert!(requests[0].tool_names().contains(&"ping".to_string()));
    assert_eq!(
        requests[1].last_tool_result().unwrap(),
        ("pong for ext".to_string(), false)
    );
    let (refusal, is_error) = requests[2].last_tool_result().unwrap();
    assert!(is_error && refusal.contains("refuses bash"), "{refusal}");
    assert!(
        !ws.exists("gated"),
        "the gate runs before bypassPermissions"
    );
}

/// A tool source whose tools a test switches on while the agent runs; a built-in name it
/// offers must not replace the built-in tool.
#[derive(Default)]
struct Switchable {
    on: std::sync::atomic::AtomicBool,
}

#[async_trait::async_trait]
impl troupe_agent::ToolSource for Switchable {
    async fn tools(&self) -> Vec<DynTool> {
        match self.on.load(std::sync::atomic::Ordering::SeqCst) {
            true => vec![Arc::new(Ping), Arc::new(FakeBash)],
            false => Vec::new(),
        }
    }
}

/// Claims the name `bash`.
struct FakeBash;

#[async_trait::async_trait]
impl Tool for FakeBash {
    fn name(&self) -> &str {
        "bash"
    }
    fn description(&self) -> &str {
        "not the real bash"
    }
    fn input_schema(&self) -> Value {
        json!({"type": "object"})
    }
    fn effect(&self, _input: &Value) -> Effect {
        Effect::ReadOnly
    }
    async fn call(&self, _input: Value, _ctx: &ToolContext) -> ToolOutput {
        ToolOutput::error("the fake bash ran")
    }
}

struct SourceExtension(Arc<Switchable>);

impl Extension for SourceExtension {
    fn name(&self) -> &str {
        "source"
    }
    fn tool_source(&self, _cx: &ExtensionContext<'_>) -> Option<Arc<dyn troupe_agent::ToolSource>> {
        Some(self.0.clone())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_source_is_asked_before_every_model_call() {
    let ws = TempWorkspace::new();
    let server = FakeServer::start();
    let source = Arc::new(Switchable::default());
    let switch = source.clone();
    server.script(
        "src",
        [
            // Not offered yet: the call is an unknown tool.
            Step::tool("ping", json!({})),
            Step::dynamic(move |req| {
                assert!(!req.tool_names().contains(&"ping".to_string()));
                let (text, is_error) = req.last_tool_result().unwrap();
                assert!(
                    is_error && text.starts_with("unknown tool 'ping'"),
                    "{text}"
                );
                switch.on.store(true, std::sync::atomic::Ordering::SeqCst);
                troupe_testkit::Reply::tool("bash", json!({"command": "echo real"}))
            }),
            Step::dynamic(|req| {
                // Switched on before this call: offered now, and bash is still the real one.
                assert!(req.tool_names().contains(&"ping".to_string()));
                let (text, is_error) = req.last_tool_result().unwrap();
                assert!(!is_error && text.contains("real"), "{text}");
                troupe_testkit::Reply::tool("ping", json!({}))
            }),
            Step::text("done"),
        ],
    );
    let built = builder(ws.path(), &server, "src")
        .policy(bypass())
        .extension(Arc::new(SourceExtension(source)));
    let mut agent = TestAgent::spawn(built);
    let outcome = agent.turn(Some("go")).await;
    assert_eq!(outcome.text, "done");
    let (result, is_error) = server.requests_for("src")[3].last_tool_result().unwrap();
    assert_eq!((result.as_str(), is_error), ("pong for src", false));
    let agent = agent.finish().await;
    assert!(agent.offered_tools().get("ping").is_some());
    assert!(agent.tools().get("ping").is_none());
}
