//! The store is reached one way: its async methods, awaited. This test reads the workspace's
//! sources and fails when code outside the store's own crates brings back a way around that —
//! an offload helper, or store calls wrapped in `spawn_blocking` — so a store call lands on an
//! async worker only as an awaited future. (A call left without `.await` does not compile, or
//! is an unused future that clippy refuses.)

use std::path::{Path, PathBuf};

/// Names of the helpers that ran synchronous store calls off the async workers.
const OFFLOAD_NAMES: &[&str] = &[
    "off_worker",
    ".offload(",
    "troupe_store::blocking(",
    "fetch_async",
    "ack_async",
];

/// Store methods whose call inside a `spawn_blocking` closure gives the offload away.
const STORE_CALLS: &[&str] = &[
    ".roster(",
    ".update_roster(",
    ".update_member(",
    ".join_member(",
    ".append(",
    ".fetch(",
    ".peek(",
    ".ack(",
    ".record(",
    ".record_many(",
    ".read_events(",
    ".create_request(",
    ".update_request(",
    ".list_requests(",
    ".create_task(",
    ".get_task(",
    ".list_tasks(",
    ".update_task(",
    ".claim_task(",
    ".acquire_lease(",
    ".probe_lease(",
    ".set_doing(",
    ".read_transcript",
    ".append_transcript",
];

/// `spawn_blocking` closures that hold a store for work of another kind: the worktree manager
/// runs git and holds the worktree index's file lock on the blocking pool, and awaits its store
/// calls there on the runtime's handle.
const ALLOWED: &[&str] = &["crates/team/src/tools/worktrees.rs"];

/// How many lines after `spawn_blocking(` make up its closure, for this check.
const CLOSURE_LINES: usize = 12;

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Every `.rs` file under `crates/*/src`, as (path relative to the workspace, text).
fn sources() -> Vec<(String, String)> {
    let root = workspace();
    let mut out = Vec::new();
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(root.join("crates"))
        .unwrap_or_else(|e| panic!("reading crates/: {e}"))
        .flatten()
        .map(|e| e.path().join("src"))
        .filter(|p| p.is_dir())
        .collect();
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|x| x == "rs") {
                let text = std::fs::read_to_string(&path).unwrap_or_default();
                let rel = path
                    .strip_prefix(&root)
                    .unwrap_or(&path)
                    .to_string_lossy()
                    .replace('\\', "/");
                out.push((rel, text));
            }
        }
    }
    assert!(out.len() > 50, "the workspace's sources were not found");
    out
}

fn outside_the_store(rel: &str) -> bool {
    !rel.starts_with("crates/store/") && !rel.starts_with("crates/store-nats/")
}

/// Each code line (comments left out) of `files` naming one of `names`, as `path:line: name`.
fn lines_naming<'a>(
    files: impl Iterator<Item = (&'a str, &'a str)>,
    names: &[&str],
) -> Vec<String> {
    let mut found = Vec::new();
    for (rel, code) in files {
        for (n, line) in code.lines().enumerate() {
            if line.trim_start().starts_with("//") {
                continue;
            }
            for name in names {
                if line.contains(name) {
                    found.push(format!("{rel}:{}: {name}", n + 1));
                }
            }
        }
    }
    found
}

#[test]
fn no_offload_helper_is_used_outside_the_store() {
    let sources = sources();
    let outside = sources
        .iter()
        .filter(|(rel, _)| outside_the_store(rel))
        .map(|(rel, text)| (rel.as_str(), text.as_str()));
    let found = lines_naming(outside, OFFLOAD_NAMES);
    assert!(
        found.is_empty(),
        "store calls are awaited, never offloaded:\n{}",
        found.join("\n")
    );
}

#[test]
fn no_store_call_is_wrapped_in_spawn_blocking_outside_the_store() {
    let mut found = Vec::new();
    for (rel, text) in sources().iter().filter(|(rel, _)| outside_the_store(rel)) {
        if ALLOWED.contains(&rel.as_str()) {
            continue;
        }
        let lines: Vec<&str> = text.lines().collect();
        for (n, line) in lines.iter().enumerate() {
            if !line.contains("spawn_blocking(") {
                continue;
            }
            let closure = lines[n..lines.len().min(n + CLOSURE_LINES)].join("\n");
            for call in STORE_CALLS {
                if closure.contains(call) && closure.contains("store") {
                    found.push(format!("{rel}:{}: {call}", n + 1));
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "store calls are awaited where they are made, not moved to the blocking pool:\n{}",
        found.join("\n")
    );
}

/// What starts a tokio runtime, and what waits for a future by blocking a thread. (tokio's
/// `block_in_place`, which hands the worker's other tasks to another thread before it blocks,
/// is how the file backend writes the roster in place: record 0027.)
const RUNTIME_MAKERS: &[&str] = &["runtime::Builder", "Runtime::new(", ".block_on("];

/// The backends have no runtime of their own and block no thread waiting for a future: their
/// clients live on the runtime of whoever opened the store, and every operation is the
/// caller's awaited future. (Code under `#[cfg(test)]` at a file's end is left out: a unit
/// test starts its runtime.)
#[test]
fn no_backend_starts_a_runtime_or_blocks_on_one() {
    let sources = sources();
    let backends = sources
        .iter()
        .filter(|(rel, _)| !outside_the_store(rel))
        .map(|(rel, text)| {
            let code = text.split("#[cfg(test)]").next().unwrap_or_default();
            (rel.as_str(), code)
        });
    let found = lines_naming(backends, RUNTIME_MAKERS);
    assert!(
        found.is_empty(),
        "a store backend awaits on its caller's runtime; it neither starts one nor blocks on one:\n{}",
        found.join("\n")
    );
}

#[test]
fn the_checks_see_an_offload_when_there_is_one() {
    let offloaded = "    let batch = tokio::task::spawn_blocking(move || store.fetch(\"bob\"));";
    assert!(offloaded.contains("spawn_blocking(") && offloaded.contains(".fetch("));
    assert!(OFFLOAD_NAMES
        .iter()
        .any(|n| "shared.offload(|s| s.store.roster())".contains(n)));
    let private_runtime = "let runtime = tokio::runtime::Builder::new_multi_thread()";
    assert_eq!(
        lines_naming([("conn.rs", private_runtime)].into_iter(), RUNTIME_MAKERS),
        ["conn.rs:1: runtime::Builder"]
    );
}
