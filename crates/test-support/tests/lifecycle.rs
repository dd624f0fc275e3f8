//! The lifecycle seam, in process: what a PreToolUse decision may and may not do against the
//! permission rules and the sandbox. A hook's allow stands in for the permission mode's question
//! only; deny rules, ask rules and the sandbox still hold, and a rewritten input is judged
//! afresh. A hook's ask forces a question; its deny refuses.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code may panic on a broken fixture

use async_trait::async_trait;
use serde_json::{json, Value};
use std::sync::{Arc, Mutex};
use troupe_agent::permissions::{PermissionMode, Policy, Rules};
use troupe_agent::{
    Approval, Approver, BeforeTool, CallDecision, Extension, ExtensionContext, LifecycleHooks,
    Question, ToolCall,
};
use troupe_test_support::{builder, TestAgent};
use troupe_testkit::{FakeServer, Step, TempWorkspace};

/// Decides every call from its input's `hook` field (allow | ask | deny) and, for bash, may
/// rewrite the command to the input's `rewrite` field.
struct ByInput;

#[async_trait]
impl LifecycleHooks for ByInput {
    async fn before_tool(&self, call: ToolCall<'_>) -> BeforeTool {
        let decision = match call.input["hook"].as_str() {
            Some("allow") => Some(CallDecision::Allow),
            Some("ask") => Some(CallDecision::Ask("the hook wants a person".into())),
            Some("deny") => Some(CallDecision::Deny("the hook says no".into())),
            _ => None,
        };
        let input = call.input["rewrite"]
            .as_str()
            .map(|command| json!({"command": command}));
        BeforeTool {
            decision,
            input,
            ..BeforeTool::default()
        }
    }
}

struct Hooked;

impl Extension for Hooked {
    fn name(&self) -> &str {
        "hooked"
    }
    fn lifecycle(&self, _cx: &ExtensionContext<'_>) -> Option<Arc<dyn LifecycleHooks>> {
        Some(Arc::new(ByInput))
    }
}

/// Records every question and answers no.
#[derive(Default)]
struct Recorder(Mutex<Vec<String>>);

#[async_trait]
impl Approver for Recorder {
    async fn approve(&self, question: Question<'_>) -> Approval {
        self.0.lock().unwrap().push(question.reason.to_string());
        Approval::Deny("nobody answered".into())
    }
}

/// Runs one turn of `calls` in default mode with `rules`; returns each call's result and the
/// questions asked.
async fn run(
    ws: &TempWorkspace,
    rules: &[(&str, &str)],
    calls: Vec<(&str, Value)>,
) -> (Vec<(String, bool)>, Vec<String>) {
    let server = FakeServer::start();
    let n = calls.len();
    let steps: Vec<Step> = calls
        .into_iter()
        .map(|(tool, input)| Step::tool(tool, input))
        .chain([Step::text("done")])
        .collect();
    server.script("solo", steps);
    let of = |kind: &str| -> Vec<String> {
        rules
            .iter()
            .filter(|(k, _)| *k == kind)
            .map(|(_, rule)| rule.to_string())
            .collect()
    };
    let parsed = Rules::parse(&of("allow"), &of("ask"), &of("deny")).unwrap();
    let approver = Arc::new(Recorder::default());
    let mut agent = TestAgent::spawn(
        builder(ws.path(), &server, "solo")
            .policy(Policy::new(PermissionMode::Default, parsed))
            .approver(approver.clone())
            .extension(Arc::new(Hooked)),
    );
    agent.turn(Some("go")).await;
    let results = server.requests_for("solo")[1..=n]
        .iter()
        .map(|r| r.last_tool_result().unwrap())
        .collect();
    let asked = approver.0.lock().unwrap().clone();
    (results, asked)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hooks_allow_skips_the_modes_question_only() {
    let ws = TempWorkspace::new();
    let (results, asked) = run(
        &ws,
        &[("ask", "Edit(guarded.txt)")],
        vec![
            // Default mode would ask about a write: the hook's allow answers instead.
            (
                "write_file",
                json!({"path": "allowed.txt", "content": "x", "hook": "allow"}),
            ),
            // An ask rule is still asked about.
            (
                "write_file",
                json!({"path": "guarded.txt", "content": "x", "hook": "allow"}),
            ),
        ],
    )
    .await;
    assert!(!results[0].1, "{:?}", results[0]);
    assert_eq!(ws.read("allowed.txt"), "x");
    assert!(results[1].1, "{:?}", results[1]);
    assert!(!ws.exists("guarded.txt"));
    assert_eq!(asked.len(), 1, "{asked:?}");
    assert!(asked[0].contains("Edit(guarded.txt)"), "{asked:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hooks_allow_never_overrides_a_deny_rule_or_the_sandbox() {
    let ws = TempWorkspace::new();
    let outside = tempfile::tempdir().unwrap();
    let escape = outside.path().join("escaped.txt");
    let (results, _) = run(
        &ws,
        &[("deny", "Bash(rm:*)")],
        vec![
            ("bash", json!({"command": "rm -f nothing", "hook": "allow"})),
            // A rewritten input is judged afresh: the rewrite is what the deny rule sees.
            (
                "bash",
                json!({"command": "echo harmless", "rewrite": "rm -f nothing", "hook": "allow"}),
            ),
            // Allowed by the hook, the command still runs in the workspace-write sandbox.
            (
                "bash",
                json!({"command": format!("echo out > {}", escape.display()), "hook": "allow"}),
            ),
        ],
    )
    .await;
    for (text, is_error) in &results[..2] {
        assert!(*is_error && text.contains("Bash(rm:*)"), "{text}");
    }
    assert!(results[2].1, "{:?}", results[2]);
    assert!(
        !escape.exists(),
        "the sandbox let a hook-allowed command write outside"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hooks_ask_forces_a_question_and_its_deny_refuses() {
    let ws = TempWorkspace::new();
    ws.write("a.txt", "alpha");
    let (results, asked) = run(
        &ws,
        &[],
        vec![
            // Read-only, so the rules would allow it: the hook's ask is asked.
            ("read_file", json!({"path": "a.txt", "hook": "ask"})),
            ("read_file", json!({"path": "a.txt", "hook": "deny"})),
            ("read_file", json!({"path": "a.txt"})),
        ],
    )
    .await;
    assert_eq!(asked, ["the hook wants a person"]);
    assert!(
        results[0].1 && results[0].0.contains("nobody answered"),
        "{:?}",
        results[0]
    );
    assert!(
        results[1].1 && results[1].0.contains("the hook says no"),
        "{:?}",
        results[1]
    );
    assert!(
        !results[2].1 && results[2].0.contains("alpha"),
        "{:?}",
        results[2]
    );
}

/// The board tools' seam: TaskCompleted hooks of the team's shared extensions, run as real
/// commands, may refuse a completion with feedback; TaskCreated hooks see the new task.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn task_hooks_may_refuse_a_change_on_the_board() {
    use troupe_agent::{TaskChange, TaskInfo};
    let ws = TempWorkspace::new();
    let server = FakeServer::start();
    let settings = troupe_settings::Settings::parse(
        &json!({"hooks": {
            "TaskCompleted": [{"hooks": [{"type": "command",
                "command": "cat > completed.json; echo 'the tests still fail' >&2; exit 2"}]}],
            "TaskCreated": [{"hooks": [{"type": "command", "command": "cat > created.json"}]}]
        }})
        .to_string(),
        "test",
    )
    .unwrap();
    let hooks = troupe_hooks::Hooks::new(&settings, &ws.path().canonicalize().unwrap()).unwrap();
    let extension = troupe_hooks::HooksExtension::new(hooks, "default").for_teammates("crew");
    let team =
        troupe_test_support::team_with(ws.path(), &server, "crew", vec![Arc::new(extension)]).await;
    let task = |change| TaskInfo {
        change,
        id: "7",
        subject: "fix the parser",
        description: "the parser drops comments",
        team: "crew",
    };
    let refused =
        troupe_team::task_hooks::task_change(team.shared(), "alice", task(TaskChange::Completed))
            .await;
    assert_eq!(
        refused.as_deref(),
        Some("TaskCompleted hook feedback: the tests still fail")
    );
    let created =
        troupe_team::task_hooks::task_change(team.shared(), "alice", task(TaskChange::Created))
            .await;
    assert_eq!(created, None);
    let input: Value = serde_json::from_str(&ws.read("completed.json")).unwrap();
    assert_eq!(input["hook_event_name"], "TaskCompleted");
    assert_eq!(input["task_id"], "7");
    assert_eq!(input["task_subject"], "fix the parser");
    assert_eq!(input["teammate_name"], "alice");
    assert_eq!(input["team_name"], "crew");
    let input: Value = serde_json::from_str(&ws.read("created.json")).unwrap();
    assert_eq!(input["hook_event_name"], "TaskCreated");
}
