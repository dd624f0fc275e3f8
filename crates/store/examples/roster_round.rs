//! The file store's roster round, as `store-nats`'s `store_bench` measures it beside NATS: a
//! team of N members, each with a store handle of its own (as processes would have), makes three
//! member updates (working, a usage figure, idle) at once; prints the round's wall time for
//! 30, 100 and 300 members (or the sizes given) and the ratio of the largest to the one before.
//!
//! Run: `cargo run -p troupe-store --example roster_round [-- 30 100 300 [ROUNDS]]` (the dev
//! profile; `--release` for a release-like figure). Each size runs ROUNDS times (3), and the
//! fastest round is printed.
#![allow(clippy::unwrap_used, clippy::expect_used)] // example code may panic on a broken fixture

use std::time::Instant;

use troupe_protocol::{AgentStatus, Member};
use troupe_store::{Durability, SharedStore};

async fn round(n: usize) -> f64 {
    let dir = tempfile::tempdir().unwrap();
    let open = || troupe_store::file::open_with(dir.path(), "round", Durability::Fsync).unwrap();
    let lead = open();
    lead.update_roster(&mut |r| {
        r.lead = "lead".into();
        r.members = (0..n)
            .map(|i| Member::new(format!("m{i}"), "worker", 0, 0))
            .collect();
    })
    .await
    .unwrap();
    let handles: Vec<SharedStore> = (0..n).map(|_| open()).collect();
    let started = Instant::now();
    let tasks: Vec<_> = handles
        .into_iter()
        .enumerate()
        .map(|(i, store)| {
            tokio::spawn(async move {
                let name = format!("m{i}");
                store
                    .update_member(&name, &mut |m| m.status = AgentStatus::Working)
                    .await
                    .unwrap();
                store
                    .update_member(&name, &mut |m| m.usage.output_tokens += 100)
                    .await
                    .unwrap();
                store
                    .update_member(&name, &mut |m| m.status = AgentStatus::Idle)
                    .await
                    .unwrap();
            })
        })
        .collect();
    for t in tasks {
        t.await.unwrap();
    }
    let ms = started.elapsed().as_secs_f64() * 1e3;
    let roster = lead.roster().await.unwrap();
    assert!(roster
        .members
        .iter()
        .all(|m| m.status == AgentStatus::Idle && m.usage.output_tokens == 100));
    ms
}

#[tokio::main]
async fn main() {
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let (sizes, rounds) = match args.len() {
        0 => (vec![30, 100, 300], 3),
        _ if args.len() > 3 => (args[..args.len() - 1].to_vec(), args[args.len() - 1]),
        _ => (args, 3),
    };
    println!("roster round (file store)  N    ms (fastest of {rounds})");
    let mut last = None;
    for n in sizes {
        let mut best = f64::MAX;
        for _ in 0..rounds {
            best = best.min(round(n).await);
        }
        let ratio = last.map(|l: f64| format!("  {:.1}x the one before", best / l));
        println!(
            "                           {n:<4} {best:>8.1}{}",
            ratio.unwrap_or_default()
        );
        last = Some(best);
    }
}
