//! The task board's benchmarks, with fsync on (the default durability):
//!
//! 1. Claims across processes: `--claimers` processes (default 10) race for `--tasks` ready
//!    tasks (default 400) the way an idle teammate does — list, try the first ready task, on a
//!    lost race the next. Prints claim throughput, p50/p99 of each `claim_task` call (target
//!    p99 < 20 ms) and the double claims found (must be 0, checked from the children's reports
//!    and from every task's history).
//! 2. Board change → idle claimer, across processes: a child process idles on its wake socket
//!    (`WakeListener`) exactly as a member's idle loop does, and on a wake runs the harness's
//!    own `board::claim_next`. The parent creates a task and runs `board::after_change` (what
//!    the tools and `troupe task` run). Prints p50/p99 from the committed change to the child
//!    woken (target p99 < 50 ms) and to the task claimed.
//! 3. The same with a real in-process teammate (the member loop, its agent on the fake model
//!    server): from the change to the task claimed for it.
//!
//! Run: `cargo bench -p troupe-team --bench board [-- --tasks 400 --claimers 10 --wakes 200]`
//! (`-- --only claims|wake|member` runs one part; `-- --durability os-buffered` skips fsync).
#![allow(clippy::unwrap_used, clippy::expect_used)] // bench code may panic on a broken fixture

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::json;
use troupe_agent::permissions::{PermissionMode, Policy};
use troupe_model::{ModelConfig, Provider};
use troupe_protocol::{AgentStatus, ContentBlock, Member, Roster, TaskStatus};
use troupe_store::{Durability, NewTask, SharedStore, TaskFilter};
use troupe_team::board::{self, Change};
use troupe_team::protocols::StoreCourier;
use troupe_team::wake::WakeListener;
use troupe_team::{SpawnRequest, Team, TeamConfig, TeammateMode};
use troupe_testkit::{FakeServer, Recorded, Reply, Step};

const ROLE_ENV: &str = "TROUPE_BOARD_BENCH_ROLE";
const DIR_ENV: &str = "TROUPE_BOARD_BENCH_DIR";
const NAME_ENV: &str = "TROUPE_BOARD_BENCH_NAME";
const DURABILITY_ENV: &str = "TROUPE_BOARD_BENCH_DURABILITY";
const TEAM: &str = "bench";
const WAITER: &str = "waiter";
/// Pause before each change, so the claimer is back asleep on its wake socket.
const GAP: Duration = Duration::from_millis(2);
const TARGET_CLAIM_P99_MS: f64 = 20.0;
const TARGET_WAKE_P99_MS: f64 = 50.0;

fn now_ns() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0)
}

/// `--durability os-buffered` (passed on to the children) shows what the locks cost without
/// the disk; the default and the targets are with fsync.
fn durability() -> Durability {
    let os_buffered = std::env::var(DURABILITY_ENV).is_ok_and(|v| v == "os-buffered")
        || std::env::args().any(|a| a == "os-buffered");
    if os_buffered {
        Durability::OsBuffered
    } else {
        Durability::Fsync
    }
}

fn durability_name() -> &'static str {
    match durability() {
        Durability::Fsync => "fsync",
        Durability::OsBuffered => "os-buffered",
    }
}

fn open(dir: &Path) -> SharedStore {
    troupe_store::file::open_with(dir, TEAM, durability()).unwrap()
}

fn arg(name: &str, default: usize) -> usize {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// The `q` quantile (0..=1) of `ms`, sorting it.
fn quantile(ms: &mut [f64], q: f64) -> f64 {
    if ms.is_empty() {
        return f64::NAN;
    }
    ms.sort_by(f64::total_cmp);
    let i = ((q * ms.len() as f64).ceil() as usize).clamp(1, ms.len()) - 1;
    ms[i]
}

fn verdict(value: f64, target: f64) -> &'static str {
    if value < target {
        "ok"
    } else {
        "MISSED"
    }
}

/// Starts this binary again as a child in `role`, waits for its READY line.
fn child(role: &str, dir: &Path, name: &str) -> (Child, ChildStdin, BufReader<ChildStdout>) {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .env(ROLE_ENV, role)
        .env(DIR_ENV, dir)
        .env(NAME_ENV, name)
        .env(DURABILITY_ENV, durability_name())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let stdin = child.stdin.take().unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    assert_eq!(line.trim(), "READY", "child {name} did not start");
    (child, stdin, out)
}

/// Child: claims like an idle teammate until nothing is ready; one line per `claim_task` call:
/// `CLAIM <id> won|lost <ns>`.
async fn claimer(dir: &Path, name: &str) {
    let store = open(dir);
    let mut out = std::io::stdout().lock();
    writeln!(out, "READY").unwrap();
    out.flush().unwrap();
    let mut go = String::new();
    std::io::stdin().lock().read_line(&mut go).unwrap();
    loop {
        let board = store.list_tasks(&TaskFilter::default()).await.unwrap();
        let ready: Vec<u64> = board::ready(&board.tasks).iter().map(|t| t.id).collect();
        if ready.is_empty() {
            break;
        }
        for id in ready {
            let start = Instant::now();
            let won = store.claim_task(id, name, 1).await.is_ok();
            let ns = start.elapsed().as_nanos();
            let word = if won { "won" } else { "lost" };
            writeln!(out, "CLAIM {id} {word} {ns}").unwrap();
            if won {
                break;
            }
        }
    }
    out.flush().unwrap();
}

/// Child: idles on its wake socket; after each wake, `claim_next` and complete what it got
/// (so it holds nothing next time). One line per claim: `CLAIMED <id> <woken_ns> <claimed_ns>`.
async fn waiter(dir: &Path) {
    let store = open(dir);
    {
        let mut wake = WakeListener::bind(&store, WAITER).await.unwrap();
        let mut out = std::io::stdout().lock();
        writeln!(out, "READY").unwrap();
        out.flush().unwrap();
        loop {
            wake.wait().await;
            let woken = now_ns();
            let Some(task) = board::claim_next(&*store, WAITER).await.unwrap() else {
                continue;
            };
            let claimed = now_ns();
            if task.subject == "stop" {
                return;
            }
            store
                .update_task(task.id, &mut |t, _| t.complete(WAITER, "ok", 2))
                .await
                .unwrap();
            writeln!(out, "CLAIMED {} {woken} {claimed}", task.id).unwrap();
            out.flush().unwrap();
        }
    }
}

fn new_task(subject: &str) -> NewTask {
    NewTask {
        subject: subject.into(),
        description: String::new(),
        blocked_by: Vec::new(),
        created_by: "lead".into(),
    }
}

async fn claims_across_processes(tasks: usize, claimers: usize) {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    for i in 0..tasks {
        store
            .create_task(&new_task(&format!("task {i}")))
            .await
            .unwrap();
    }
    let mut children: Vec<_> = (0..claimers)
        .map(|i| child("claimer", dir.path(), &format!("c{i}")))
        .collect();
    let start = Instant::now();
    for (_, stdin, _) in &mut children {
        writeln!(stdin, "go").unwrap();
        stdin.flush().unwrap();
    }
    let mut wins: BTreeMap<u64, usize> = BTreeMap::new();
    let (mut all_ms, mut won_ms, mut lost_ms, mut attempts) =
        (Vec::new(), Vec::new(), Vec::new(), 0usize);
    for (mut proc, _, out) in children {
        for line in out.lines() {
            let line = line.unwrap();
            let parts: Vec<&str> = line.split_whitespace().collect();
            if let ["CLAIM", id, word, ns] = parts[..] {
                attempts += 1;
                let ms = ns.parse::<f64>().unwrap() / 1e6;
                all_ms.push(ms);
                if word == "won" {
                    *wins.entry(id.parse().unwrap()).or_default() += 1;
                    won_ms.push(ms);
                } else {
                    lost_ms.push(ms);
                }
            }
        }
        assert!(proc.wait().unwrap().success());
    }
    let wall = start.elapsed();
    let reported_doubles = wins.values().filter(|&&n| n > 1).count();
    let listed = store
        .list_tasks(&TaskFilter::default())
        .await
        .unwrap()
        .tasks;
    let history_doubles = listed.iter().filter(|t| t.history.len() != 1).count();
    let unclaimed = listed
        .iter()
        .filter(|t| t.status != TaskStatus::InProgress)
        .count();
    let p99 = quantile(&mut all_ms, 0.99);
    println!(
        "claims, {claimers} processes, {tasks} tasks, {}: {:.0} claims/s ({} claims in {:.2} s, {attempts} attempts), \
claim_task p50 {:.2} ms, p99 {p99:.2} ms [{}; target < {TARGET_CLAIM_P99_MS} ms], winning calls p50 {:.2} ms p99 {:.2} ms, \
losing calls p99 {:.2} ms; double claims {} reported / {} in history [{}], unclaimed {unclaimed}",
        durability_name(),
        wins.len() as f64 / wall.as_secs_f64(),
        wins.len(),
        wall.as_secs_f64(),
        quantile(&mut all_ms, 0.5),
        verdict(p99, TARGET_CLAIM_P99_MS),
        quantile(&mut won_ms, 0.5),
        quantile(&mut won_ms, 0.99),
        quantile(&mut lost_ms, 0.99),
        reported_doubles,
        history_doubles,
        if reported_doubles + history_doubles == 0 { "ok" } else { "MISSED" },
    );
}

fn idle_member(name: &str) -> Member {
    let mut m = Member::new(name, "worker", 1, 0);
    m.status = AgentStatus::Idle;
    m
}

async fn wake_across_processes(wakes: usize) {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    store
        .update_roster(&mut |r: &mut Roster| r.members.push(idle_member(WAITER)))
        .await
        .unwrap();
    let (mut proc, _stdin, mut out) = child("waiter", dir.path(), WAITER);
    let courier = StoreCourier(&*store);
    let (mut woken_ms, mut claimed_ms, mut change_ms) = (Vec::new(), Vec::new(), Vec::new());
    for i in 0..=wakes {
        std::thread::sleep(GAP);
        let subject = if i == wakes {
            "stop".to_string()
        } else {
            format!("wake {i}")
        };
        let begin = now_ns();
        let task = store.create_task(&new_task(&subject)).await.unwrap();
        let committed = now_ns();
        board::after_change(&courier, &task, Change::Created, "lead").await;
        if i == wakes {
            break;
        }
        let mut line = String::new();
        out.read_line(&mut line).unwrap();
        let parts: Vec<&str> = line.split_whitespace().collect();
        let ["CLAIMED", id, woken, claimed] = parts[..] else {
            panic!("unexpected line from the waiter: {line}");
        };
        assert_eq!(id.parse::<u64>().unwrap(), task.id);
        let at = |s: &str| s.parse::<u128>().unwrap();
        woken_ms.push((at(woken).saturating_sub(committed)) as f64 / 1e6);
        claimed_ms.push((at(claimed).saturating_sub(committed)) as f64 / 1e6);
        change_ms.push((committed - begin) as f64 / 1e6);
    }
    assert!(proc.wait().unwrap().success());
    let p99 = quantile(&mut woken_ms, 0.99);
    println!(
        "board change -> idle claimer in another process ({wakes} changes, {}): woken p50 {:.2} ms, p99 {p99:.2} ms [{}; target < {TARGET_WAKE_P99_MS} ms]; \
claimed p50 {:.2} ms, p99 {:.2} ms (after the change is committed; committing it: p50 {:.2} ms, p99 {:.2} ms)",
        durability_name(),
        quantile(&mut woken_ms, 0.5),
        verdict(p99, TARGET_WAKE_P99_MS),
        quantile(&mut claimed_ms, 0.5),
        quantile(&mut claimed_ms, 0.99),
        quantile(&mut change_ms, 0.5),
        quantile(&mut change_ms, 0.99),
    );
}

/// The fake model's answer for the in-process teammate: complete the task it was just given,
/// then end the phase.
fn member_step(req: &Recorded) -> Step {
    let last = req.messages().pop();
    let answered_tool = last.as_ref().is_some_and(|m| {
        m.content
            .iter()
            .any(|b| matches!(b, ContentBlock::ToolResult { .. }))
    });
    let text = req.all_text();
    match text.rfind("<task id=\"") {
        Some(at) if !answered_tool => {
            let id: u64 = text[at + 10..]
                .split('"')
                .next()
                .and_then(|n| n.parse().ok())
                .unwrap();
            Step::reply(Reply::tool(
                "complete_task",
                json!({"id": id, "result": "ok"}),
            ))
        }
        _ => Step::text("done"),
    }
}

async fn team_on(ws: &Path, server: &FakeServer) -> Team {
    let url = server.url();
    let env = |key: &str| match key {
        "ANTHROPIC_BASE_URL" => Some(url.clone()),
        "ANTHROPIC_API_KEY" => Some("bench".to_string()),
        "TROUPE_AGENT_HEADER" => Some("1".to_string()),
        _ => None,
    };
    let model = ModelConfig::resolve(Some(Provider::Anthropic), Some("fake".into()), &env).unwrap();
    let troupe_dir: PathBuf = ws.join(".troupe");
    let config = TeamConfig {
        team: TEAM.into(),
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
    Team::open(config, open(&troupe_dir), None).await.unwrap()
}

async fn wake_member_in_process(wakes: usize) {
    let ws = tempfile::tempdir().unwrap();
    let server = FakeServer::start();
    server.set_fallback(member_step);
    let team = {
        let team = team_on(ws.path(), &server).await;
        team.spawn(SpawnRequest {
            name: "mate".into(),
            role: "worker".into(),
            prompt: "say hi".into(),
            model: None,
            require_plan: false,
            auto_claim: true,
            isolation: troupe_team::Isolation::Shared,
            profile: Default::default(),
        })
        .await
        .unwrap();
        team
    };
    let store = team.shared().store.clone();
    let courier = StoreCourier(&*store);
    let settled = async |id: Option<u64>| {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let idle = store
                .roster()
                .await
                .unwrap()
                .get("mate")
                .is_some_and(|m| m.status == AgentStatus::Idle);
            let done = match id {
                None => true,
                Some(id) => store.get_task(id).await.unwrap().status == TaskStatus::Completed,
            };
            if idle && done {
                return;
            }
            assert!(Instant::now() < deadline, "the teammate never settled");
            tokio::time::sleep(Duration::from_micros(200)).await;
        }
    };
    settled(None).await;
    let mut claimed_ms = Vec::new();
    for i in 0..wakes {
        tokio::time::sleep(GAP).await;
        let task = store
            .create_task(&new_task(&format!("work {i}")))
            .await
            .unwrap();
        let committed = Instant::now();
        board::after_change(&courier, &task, Change::Created, "lead").await;
        loop {
            if store.get_task(task.id).await.unwrap().owner.is_some() {
                break;
            }
            tokio::time::sleep(Duration::from_micros(100)).await;
        }
        claimed_ms.push(committed.elapsed().as_secs_f64() * 1e3);
        settled(Some(task.id)).await;
    }
    team.stop_all(Duration::from_secs(10)).await;
    let p99 = quantile(&mut claimed_ms, 0.99);
    println!(
        "board change -> idle in-process teammate (member loop, fake model; {wakes} changes, {}): task claimed for it p50 {:.2} ms, p99 {p99:.2} ms [{}; target < {TARGET_WAKE_P99_MS} ms]",
        durability_name(),
        quantile(&mut claimed_ms, 0.5),
        verdict(p99, TARGET_WAKE_P99_MS),
    );
}

fn main() {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
        .block_on(bench());
}

async fn bench() {
    if let Ok(role) = std::env::var(ROLE_ENV) {
        let dir = PathBuf::from(std::env::var(DIR_ENV).unwrap());
        let name = std::env::var(NAME_ENV).unwrap();
        match role.as_str() {
            "claimer" => claimer(&dir, &name).await,
            "waiter" => waiter(&dir).await,
            other => panic!("unknown role {other}"),
        }
        return;
    }
    let tasks = arg("--tasks", 400);
    let claimers = arg("--claimers", 10);
    let wakes = arg("--wakes", 200);
    let only = std::env::args()
        .skip_while(|a| a != "--only")
        .nth(1)
        .unwrap_or_default();
    let run = |part: &str| only.is_empty() || only == part;
    if run("claims") {
        claims_across_processes(tasks, claimers).await;
    }
    if run("wake") {
        wake_across_processes(wakes).await;
    }
    if run("member") {
        wake_member_in_process(wakes).await;
    }
}
