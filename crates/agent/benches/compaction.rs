//! The compaction pipeline's cost per model call: on a 200-round
//! conversation (each round a short text, a tool call and a 2 KB result), what the loop pays
//! before every model call when nothing needs compacting — target < 1 ms — in the steady state
//! (the provider counted the conversation at the last reply, one round came since) and cold
//! (just loaded: nothing counted, everything estimated and looked at). For scale, the steps
//! that run only when needed: micro-compaction of the whole conversation, and the summary's
//! cut and rendering.
//!
//! Run: `cargo bench -p troupe-agent --bench compaction [-- --runs 2000]`.
#![allow(clippy::unwrap_used, clippy::expect_used)] // bench code may panic on a broken fixture

use std::time::{Duration, Instant};

use serde_json::json;
use troupe_agent::compact::{
    micro, summary, CompactConfig, CompactRequest, Compactor, Due, SpillDir, WindowSource,
};
use troupe_protocol::{ChatMessage, ContentBlock, Role, Usage};

const ROUNDS: usize = 200;
const TARGET_MS: f64 = 1.0;

fn round(i: usize) -> [ChatMessage; 2] {
    let id = format!("toolu_{i:04}");
    [
        ChatMessage {
            role: Role::Assistant,
            content: vec![
                ContentBlock::text(format!("Reading file {i} to see what it does next.")),
                ContentBlock::ToolUse {
                    id: id.clone(),
                    name: "read_file".into(),
                    input: json!({"path": format!("src/module_{i}.rs"), "offset": 1, "limit": 200}),
                },
            ],
        },
        ChatMessage {
            role: Role::User,
            content: vec![ContentBlock::tool_result(
                id,
                (0..40)
                    .map(|l| format!("{l:>6}\tfn line_{l}() {{ let x = {l}; }}\n"))
                    .collect::<String>(),
                false,
            )],
        },
    ]
}

fn conversation() -> Vec<ChatMessage> {
    let mut messages = vec![ChatMessage::user_text("Refactor the modules one by one.")];
    for i in 0..ROUNDS {
        messages.extend(round(i));
    }
    messages
}

fn compactor(window: u64) -> Compactor {
    Compactor::new(
        CompactConfig::new(window, WindowSource::Configured),
        SpillDir::default(),
        CompactRequest::default(),
    )
}

fn quantile(sorted: &[Duration], q: f64) -> Duration {
    sorted[((sorted.len() - 1) as f64 * q).round() as usize]
}

fn us(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

fn row(label: &str, mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    let (p50, p99) = (quantile(&samples, 0.5), quantile(&samples, 0.99));
    println!(
        "{label:<52} {:>7} {:>10.1} {:>10.1}",
        samples.len(),
        us(p50),
        us(p99)
    );
    p50
}

fn arg_value(name: &str) -> Option<usize> {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
}

fn main() {
    let runs = arg_value("--runs").unwrap_or(2_000).max(10);
    let base = conversation();
    let bytes: usize = serde_json::to_string(&base).unwrap().len();
    println!(
        "compaction pipeline before a model call: {ROUNDS} rounds, {} messages, {} KB",
        base.len(),
        bytes / 1024
    );
    println!(
        "{:<52} {:>7} {:>10} {:>10}",
        "step", "n", "p50 µs", "p99 µs"
    );

    // Steady state: the last reply was counted; one round came since.
    let mut steady = Vec::with_capacity(runs);
    for i in 0..runs {
        let mut messages = base.clone();
        let mut c = compactor(1_000_000);
        // The calls before this one: everything up to here budgeted and counted.
        assert_eq!(c.before_call(&mut messages), Due::Nothing);
        c.meter.record_reply(
            messages.len(),
            &Usage {
                input_tokens: 90_000,
                output_tokens: 50,
                ..Usage::default()
            },
        );
        let [call, result] = round(ROUNDS + i);
        messages.push(call);
        messages.push(result);
        let started = Instant::now();
        let due = c.before_call(&mut messages);
        steady.push(started.elapsed());
        assert_eq!(due, Due::Nothing);
    }
    let steady_p50 = row("steady: counted at the last reply, one round since", steady);

    // Cold: just loaded, nothing counted, the whole conversation budgeted and estimated.
    let mut cold = Vec::with_capacity(runs);
    for _ in 0..runs {
        let mut messages = base.clone();
        let mut c = compactor(1_000_000);
        c.meter.set_fixed(6_000);
        let started = Instant::now();
        let due = c.before_call(&mut messages);
        cold.push(started.elapsed());
        assert_eq!(due, Due::Nothing);
    }
    let cold_p50 = row("cold: just loaded, everything estimated", cold);

    // Only when needed: every old result stubbed at once.
    let mut stub = Vec::with_capacity(runs);
    for _ in 0..runs.min(500) {
        let mut messages = base.clone();
        let keep = micro::keep_from(&messages, 3);
        let started = Instant::now();
        let changed = micro::apply(&mut messages, keep, &SpillDir::default());
        stub.push(started.elapsed());
        assert_eq!(changed.len(), ROUNDS - 3);
    }
    row("when needed: micro-compaction of 197 old results", stub);

    // Only when needed: where to cut and what the summarizing model is shown.
    let mut cut = Vec::with_capacity(runs);
    for _ in 0..runs.min(500) {
        let started = Instant::now();
        let at = summary::split_point(&base, 20_000).unwrap();
        let text = summary::render(&base[..at], 200_000);
        cut.push(started.elapsed());
        assert!(!text.is_empty());
    }
    row(
        "when needed: summary cut + rendering (model call apart)",
        cut,
    );

    let ok = steady_p50.as_secs_f64() * 1e3 < TARGET_MS && cold_p50.as_secs_f64() * 1e3 < TARGET_MS;
    println!(
        "SUMMARY compaction_steady_us={:.1} compaction_cold_us={:.1} target_ms={TARGET_MS} verdict={}",
        us(steady_p50),
        us(cold_p50),
        if ok { "PASS" } else { "MISS" }
    );
}
