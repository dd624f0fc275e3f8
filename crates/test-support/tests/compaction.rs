//! The compaction pipeline in process: thinking blocks survive compaction
//! as the provider sent them, a PreCompact hook runs with the trigger and adds to the
//! summary's instructions, a compacted conversation starts a new session for the hooks, and a
//! summary's tokens count as the agent's.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code may panic on a broken fixture

use async_trait::async_trait;
use serde_json::json;
use std::sync::{Arc, Mutex};
use troupe_agent::permissions::{PermissionMode, Policy, Rules};
use troupe_agent::{
    CompactTrigger, Extension, ExtensionContext, LifecycleHooks, SessionSource, Verdict,
};
use troupe_protocol::{ContentBlock, Role};
use troupe_test_support::{builder, Event, TestAgent};
use troupe_testkit::{FakeServer, Recorded, Reply, Step, TempWorkspace};

/// Records what the lifecycle saw and adds an instruction to every compaction.
#[derive(Default)]
struct Watch {
    seen: Mutex<Vec<String>>,
}

#[async_trait]
impl LifecycleHooks for Watch {
    async fn session_start(&self, source: SessionSource) -> Verdict {
        self.seen
            .lock()
            .unwrap()
            .push(format!("start:{}", source.as_str()));
        Verdict::default()
    }
    async fn pre_compact(&self, trigger: CompactTrigger, _instructions: &str) -> Verdict {
        self.seen
            .lock()
            .unwrap()
            .push(format!("compact:{}", trigger.as_str()));
        Verdict {
            context: vec!["HOOK: keep the file names".into()],
            ..Verdict::default()
        }
    }
}

struct Hooked(Arc<Watch>);

impl Extension for Hooked {
    fn name(&self) -> &str {
        "watch"
    }
    fn lifecycle(&self, _cx: &ExtensionContext<'_>) -> Option<Arc<dyn LifecycleHooks>> {
        Some(self.0.clone())
    }
}

fn is_summary(req: &Recorded) -> bool {
    req.tool_names().is_empty() && req.system().starts_with("You summarize")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn thinking_survives_compaction_and_hooks_see_it() {
    let ws = TempWorkspace::new();
    for i in 0..24 {
        ws.write(
            format!("f{i}.txt"),
            format!("{i}: {}\n", "data ".repeat(600)),
        );
    }
    let server = FakeServer::start();
    let calls = Arc::new(Mutex::new(0usize));
    server.set_fallback(move |req| {
        if is_summary(req) {
            return Step::reply(Reply::text("SUMMARY of the reads").usage(777, 33));
        }
        let mut n = calls.lock().unwrap();
        *n += 1;
        if *n <= 24 {
            Step::reply(
                Reply::tool("read_file", json!({"path": format!("f{}.txt", *n - 1)}))
                    .with_thinking(format!("round {n}: {}", "pondering ".repeat(150))),
            )
        } else {
            Step::reply(Reply::text("read them all").with_thinking("done pondering"))
        }
    });
    let watch = Arc::new(Watch::default());
    let policy = Policy::new(PermissionMode::BypassPermissions, Rules::default());
    let mut agent = TestAgent::spawn(
        builder(ws.path(), &server, "solo")
            .policy(policy)
            .context_window(Some(12_000))
            .extension(Arc::new(Hooked(watch.clone()))),
    );
    let outcome = agent.turn(Some("read every file")).await;
    assert_eq!(outcome.text, "read them all");

    let journal = server.journal();
    let summaries: Vec<&Recorded> = journal.iter().filter(|r| is_summary(r)).collect();
    assert!(
        !summaries.is_empty(),
        "the context passed 80 % of 12 000 tokens"
    );
    assert!(summaries[0]
        .all_text()
        .contains("HOOK: keep the file names"));
    for req in journal.iter().filter(|r| !is_summary(r)) {
        assert!(req.tokens() < 12_000, "{}", req.tokens());
        for m in req.messages().iter().filter(|m| m.role == Role::Assistant) {
            match m.content.first() {
                Some(ContentBlock::Thinking { signature, .. }) => {
                    assert!(signature.as_deref().is_some_and(|s| !s.is_empty()))
                }
                other => panic!("an assistant message lost its thinking: {other:?}"),
            }
        }
    }
    let compacted = agent
        .seen()
        .iter()
        .filter_map(|e| match e {
            Event::Compacted(c) => Some(c.clone()),
            _ => None,
        })
        .collect::<Vec<_>>();
    assert_eq!(compacted.len(), summaries.len());
    assert!(compacted.iter().all(|c| c.tokens_after < c.tokens_before));
    let seen = watch.seen.lock().unwrap().clone();
    assert_eq!(seen[0], "start:startup");
    assert_eq!(seen[1], "compact:auto");
    assert_eq!(
        seen[2], "start:compact",
        "a compacted conversation is a new session: {seen:?}"
    );
    let agent = agent.finish().await;
    assert!(agent.usage().input_tokens >= 777 * summaries.len() as u64);
    let report = agent.context();
    assert_eq!(report.window, 12_000);
    assert_eq!(report.compactions as usize, summaries.len());
}
