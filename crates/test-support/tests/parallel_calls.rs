//! Read-only calls of one response run side by side; results stay in call order; a call that
//! changes anything, or needs a permission question, is a barrier; hooks keep their order.
//!
//! Side by side is proven without a clock: `meet` calls wait for each other at a barrier, so a
//! group of them only finishes when all of its calls run at once (one at a time, the first
//! would wait in vain and fail after [`WAIT`]).
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code may panic on a broken fixture

use async_trait::async_trait;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use tokio::sync::Barrier;
use troupe_agent::permissions::{PermissionMode, Policy, Rules};
use troupe_agent::{
    Approval, Approver, BeforeTool, Extension, ExtensionContext, LifecycleHooks, Question,
    ToolCall, Verdict,
};
use troupe_protocol::ContentBlock;
use troupe_test_support::{builder, TestAgent, WAIT};
use troupe_testkit::{FakeServer, Reply, Step, TempWorkspace};
use troupe_tools::{DynTool, Effect, Tool, ToolContext, ToolOutput};

/// `meet{group, of}`: waits until `of` calls of `group` are running, then answers `met <group>`.
/// It only reads, so the loop may run it beside other reads.
#[derive(Default)]
struct Meet {
    barriers: Mutex<HashMap<String, Arc<Barrier>>>,
    started: AtomicUsize,
    finished: AtomicUsize,
}

#[async_trait]
impl Tool for Meet {
    fn name(&self) -> &str {
        "meet"
    }
    fn description(&self) -> &str {
        "Waits for the other calls of its group."
    }
    fn input_schema(&self) -> Value {
        json!({"type": "object", "properties": {"group": {"type": "string"}, "of": {"type": "integer"}}})
    }
    fn effect(&self, _input: &Value) -> Effect {
        Effect::ReadOnly
    }
    fn reads_only(&self, _input: &Value) -> bool {
        true
    }
    async fn call(&self, input: Value, _ctx: &ToolContext) -> ToolOutput {
        self.started.fetch_add(1, Ordering::SeqCst);
        let group = input["group"].as_str().unwrap_or_default().to_string();
        let of = input["of"].as_u64().unwrap_or(1) as usize;
        let barrier = self
            .barriers
            .lock()
            .unwrap()
            .entry(group.clone())
            .or_insert_with(|| Arc::new(Barrier::new(of)))
            .clone();
        let met = tokio::time::timeout(WAIT, barrier.wait()).await.is_ok();
        self.finished.fetch_add(1, Ordering::SeqCst);
        match met {
            true => ToolOutput::ok(format!("met {group}")),
            false => ToolOutput::error(format!(
                "{group}: the other calls never ran beside this one"
            )),
        }
    }
}

/// Offers `meet`, and records every before- and after-hook as `before <tool> <tag>`.
struct Harness {
    meet: Arc<Meet>,
    hooks: Arc<HookLog>,
}

#[derive(Default)]
struct HookLog(Mutex<Vec<String>>);

fn tag(call: &ToolCall<'_>) -> String {
    let tag = call.input["group"]
        .as_str()
        .or(call.input["path"].as_str())
        .unwrap_or("");
    format!("{} {tag}", call.name)
}

#[async_trait]
impl LifecycleHooks for HookLog {
    async fn before_tool(&self, call: ToolCall<'_>) -> BeforeTool {
        self.0
            .lock()
            .unwrap()
            .push(format!("before {}", tag(&call)));
        BeforeTool::default()
    }
    async fn after_tool(&self, call: ToolCall<'_>, _output: &ToolOutput) -> Verdict {
        self.0.lock().unwrap().push(format!("after {}", tag(&call)));
        Verdict::default()
    }
}

impl Extension for Harness {
    fn name(&self) -> &str {
        "harness"
    }
    fn tools(&self, _cx: &ExtensionContext<'_>) -> Vec<DynTool> {
        vec![self.meet.clone()]
    }
    fn lifecycle(&self, _cx: &ExtensionContext<'_>) -> Option<Arc<dyn LifecycleHooks>> {
        Some(self.hooks.clone())
    }
}

fn harness() -> Arc<Harness> {
    Arc::new(Harness {
        meet: Arc::new(Meet::default()),
        hooks: Arc::new(HookLog::default()),
    })
}

/// One response asking for `calls`, then "done".
fn script(server: &FakeServer, calls: &[(&str, Value)]) {
    let reply = calls.iter().fold(Reply::default(), |reply, (name, input)| {
        reply.with_tool(*name, input.clone())
    });
    server.script("solo", [Step::reply(reply), Step::text("done")]);
}

/// The results the model was sent for the response's calls, in the order sent.
fn results(server: &FakeServer) -> Vec<(String, bool)> {
    let requests = server.requests_for("solo");
    let messages = requests[1].messages();
    let last = messages.last().unwrap();
    last.content
        .iter()
        .filter_map(|b| match b {
            ContentBlock::ToolResult {
                content, is_error, ..
            } => Some((content.clone(), *is_error)),
            _ => None,
        })
        .collect()
}

/// What a bash call printed first (its result goes on with the exit code).
fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or_default()
}

fn meet(group: &str, of: usize) -> (&'static str, Value) {
    ("meet", json!({"group": group, "of": of}))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reads_run_side_by_side_in_call_order_and_a_write_is_a_barrier() {
    let ws = TempWorkspace::new();
    ws.write("a.txt", "old\n");
    let server = FakeServer::start();
    script(
        &server,
        &[
            ("read_file", json!({"path": "a.txt"})),
            meet("first", 3),
            ("bash", json!({"command": "cat a.txt"})),
            meet("first", 3),
            ("grep", json!({"pattern": "old", "path": "."})),
            meet("first", 3),
            ("write_file", json!({"path": "a.txt", "content": "new\n"})),
            ("read_file", json!({"path": "a.txt"})),
            meet("second", 2),
            ("bash", json!({"command": "cat a.txt"})),
            meet("second", 2),
            (
                "edit_file",
                json!({"path": "a.txt", "old_string": "new", "new_string": "newer"}),
            ),
            ("bash", json!({"command": "cat a.txt"})),
        ],
    );
    let harness = harness();
    let policy = Policy::new(PermissionMode::BypassPermissions, Rules::default());
    let mut agent = TestAgent::spawn(
        builder(ws.path(), &server, "solo")
            .policy(policy)
            .extension(harness.clone()),
    );
    assert_eq!(agent.turn(Some("go")).await.text, "done");
    let results = results(&server);
    let texts: Vec<&str> = results.iter().map(|(t, _)| t.as_str()).collect();
    assert_eq!(results.len(), 13, "{texts:#?}");
    assert!(results.iter().all(|(_, error)| !error), "{texts:#?}");
    // Before the write, every read saw the old text; the meets of a group all met.
    assert!(texts[0].contains("old"), "{texts:#?}");
    assert_eq!(first_line(texts[2]), "old");
    assert!(texts[4].contains("a.txt"), "{texts:#?}");
    for i in [1, 3, 5] {
        assert_eq!(texts[i], "met first");
    }
    // After the write (a barrier), the reads saw it; the edit found what the write left.
    assert!(
        texts[7].contains("new") && !texts[7].contains("old"),
        "{texts:#?}"
    );
    assert_eq!(first_line(texts[9]), "new");
    for i in [8, 10] {
        assert_eq!(texts[i], "met second");
    }
    assert_eq!(first_line(texts[12]), "newer");
    assert_eq!(ws.read("a.txt"), "newer\n");
    // The hooks ran in call order: a group's before-hooks, then its after-hooks.
    let log = harness.hooks.0.lock().unwrap().clone();
    let expected = [
        "before read_file a.txt",
        "before meet first",
        "before bash ",
        "before meet first",
        "before grep .",
        "before meet first",
        "after read_file a.txt",
        "after meet first",
        "after bash ",
        "after meet first",
        "after grep .",
        "after meet first",
        "before write_file a.txt",
        "after write_file a.txt",
        "before read_file a.txt",
        "before meet second",
        "before bash ",
        "before meet second",
        "after read_file a.txt",
        "after meet second",
        "after bash ",
        "after meet second",
        "before edit_file a.txt",
        "after edit_file a.txt",
        "before bash ",
        "after bash ",
    ];
    assert_eq!(log, expected);
}

/// Answers yes, noting how many `meet` calls had started and finished when it was asked.
struct Counting {
    meet: Arc<Meet>,
    seen: Mutex<Vec<(usize, usize)>>,
}

#[async_trait]
impl Approver for Counting {
    async fn approve(&self, _question: Question<'_>) -> Approval {
        let started = self.meet.started.load(Ordering::SeqCst);
        let finished = self.meet.finished.load(Ordering::SeqCst);
        self.seen.lock().unwrap().push((started, finished));
        Approval::Allow
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_that_needs_a_question_waits_for_the_reads_before_it_and_holds_back_the_rest() {
    let ws = TempWorkspace::new();
    ws.write("secret.txt", "hidden\n");
    let server = FakeServer::start();
    script(
        &server,
        &[
            meet("before", 2),
            meet("before", 2),
            ("read_file", json!({"path": "secret.txt"})),
            meet("after", 2),
            meet("after", 2),
        ],
    );
    let harness = harness();
    let approver = Arc::new(Counting {
        meet: harness.meet.clone(),
        seen: Mutex::new(Vec::new()),
    });
    let rules = Rules::parse(&[], &["Read(secret.txt)".to_string()], &[]).unwrap();
    let mut agent = TestAgent::spawn(
        builder(ws.path(), &server, "solo")
            .policy(Policy::new(PermissionMode::Default, rules))
            .approver(approver.clone())
            .extension(harness),
    );
    assert_eq!(agent.turn(Some("go")).await.text, "done");
    let results = results(&server);
    let texts: Vec<&str> = results.iter().map(|(t, _)| t.as_str()).collect();
    assert_eq!(texts[..2], ["met before", "met before"], "{texts:#?}");
    assert!(texts[2].contains("hidden"), "{texts:#?}");
    assert_eq!(texts[3..], ["met after", "met after"], "{texts:#?}");
    // Asked once, when the two calls before it had finished and none after it had started.
    assert_eq!(*approver.seen.lock().unwrap(), [(2, 2)]);
}
