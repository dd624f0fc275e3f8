//! The real MCP servers tests talk to, as `.ci/run` installs them: the npm reference servers
//! under `.ci/node` (or `$TROUPE_MCP_NODE_DIR`), `mcp-server-time` from PyPI in the project's virtual environment ([`crate::python`]), and a
//! fixture server on the same TypeScript SDK. A missing server fails the test with the command
//! that installs it: these tests never pass by not running.

use serde_json::{json, Value};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// What installs the servers (the step of `.ci/run`).
pub const INSTALL: &str = "bash .ci/run (or, for the servers alone: npm install --prefix .ci/node @modelcontextprotocol/server-everything@2026.8.31 @modelcontextprotocol/server-filesystem@2026.8.31 && .ci/venv/bin/pip install mcp-server-time==2026.10.19)";

/// The repository root.
fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Where the npm servers are installed: `$TROUPE_MCP_NODE_DIR`, else `<repo>/.ci/node`.
pub fn node_dir() -> PathBuf {
    match std::env::var_os("TROUPE_MCP_NODE_DIR") {
        Some(dir) => PathBuf::from(dir),
        None => repo_root().join(".ci/node"),
    }
}

/// `path` under `node_modules`, or a panic saying how to install it.
fn installed(path: &str) -> PathBuf {
    let full = node_dir().join("node_modules").join(path);
    assert!(
        full.exists(),
        "{} is missing: the MCP reference servers are not installed. Run {INSTALL}",
        full.display()
    );
    full
}

/// `node`, or a panic saying it is needed.
fn node() -> String {
    let found = Command::new("node")
        .arg("--version")
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    assert!(
        found,
        "node is not installed; the MCP reference servers need it ({INSTALL})"
    );
    "node".to_string()
}

/// A `.mcp.json` entry running `@modelcontextprotocol/server-everything` over stdio.
pub fn everything() -> Value {
    let script = installed("@modelcontextprotocol/server-everything/dist/index.js");
    json!({"command": node(), "args": [script, "stdio"]})
}

/// A `.mcp.json` entry running `@modelcontextprotocol/server-filesystem` on `root`.
pub fn filesystem(root: &Path) -> Value {
    let script = installed("@modelcontextprotocol/server-filesystem/dist/index.js");
    json!({"command": node(), "args": [script, root]})
}

/// A `.mcp.json` entry running `mcp-server-time` (PyPI) with the tests' Python.
pub fn time() -> Value {
    let python = crate::python::python();
    let found = Command::new(&python)
        .args(["-c", "import mcp_server_time"])
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    assert!(
        found,
        "mcp-server-time is not installed for {}. Run {INSTALL}",
        python.display()
    );
    json!({"command": python, "args": ["-m", "mcp_server_time", "--local-timezone", "UTC"]})
}

/// A `.mcp.json` entry running the fixture server (`crates/testkit/mcp/fixture-server.mjs`);
/// `log` receives its `started`/`cancelled` lines.
pub fn fixture(log: &Path) -> Value {
    let sdk = installed("@modelcontextprotocol/sdk/dist/esm");
    let script = repo_root().join("crates/testkit/mcp/fixture-server.mjs");
    json!({
        "command": node(),
        "args": [script],
        "env": {"MCP_SDK_DIR": sdk, "FIXTURE_LOG": log},
    })
}

/// The URL of `server-everything` in streamable HTTP mode, started once per test binary on a
/// free port and killed when the binary exits.
pub fn everything_http() -> String {
    static URL: OnceLock<String> = OnceLock::new();
    URL.get_or_init(|| start_everything("streamableHttp", "listening on port", "/mcp"))
        .clone()
}

/// The event-stream URL of `server-everything` in its legacy HTTP+SSE mode, started once per
/// test binary on a free port and killed when the binary exits.
pub fn everything_sse() -> String {
    static URL: OnceLock<String> = OnceLock::new();
    URL.get_or_init(|| start_everything("sse", "running on port", "/sse"))
        .clone()
}

/// Starts `server-everything` in `mode`, ready when its stderr says `ready`; its URL at `path`.
fn start_everything(mode: &'static str, ready_line: &'static str, path: &str) -> String {
    let script = installed("@modelcontextprotocol/server-everything/dist/index.js");
    let node = node();
    let port = {
        let probe = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap_or_else(|e| panic!("no free port: {e}"));
        probe
            .local_addr()
            .unwrap_or_else(|e| panic!("no address: {e}"))
            .port()
    };
    let (tx, rx) = std::sync::mpsc::channel();
    // The server gets the parent-death signal of the thread that spawns it; this thread lives
    // until the test binary exits, and so does the server.
    std::thread::spawn(move || {
        let mut cmd = Command::new(node);
        cmd.arg(script)
            .arg(mode)
            .env("PORT", port.to_string())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        die_with_parent(&mut cmd);
        let mut child = cmd
            .spawn()
            .unwrap_or_else(|e| panic!("node cannot start server-everything: {e}"));
        let mut ready = Some(tx);
        if let Some(stderr) = child.stderr.take() {
            // Read to the end: a full pipe would block the server.
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                if line.contains(ready_line) {
                    if let Some(tx) = ready.take() {
                        let _ = tx.send(());
                    }
                }
            }
        }
        // It ended without listening: the waiting test learns at once.
        drop(ready);
        let _ = child.wait();
        loop {
            std::thread::park();
        }
    });
    let started = Instant::now();
    rx.recv_timeout(Duration::from_secs(60))
        .unwrap_or_else(|e| {
            panic!(
                "server-everything ({mode}) did not start ({e}) after {:?}",
                started.elapsed()
            )
        });
    format!("http://127.0.0.1:{port}{path}")
}

/// Makes the child get SIGKILL when the spawning thread (and so the test binary) is gone.
pub(crate) fn die_with_parent(cmd: &mut Command) {
    use std::os::unix::process::CommandExt;
    // SAFETY: the closure runs in the forked child and only calls prctl, which is
    // async-signal-safe, with integer arguments.
    unsafe {
        cmd.pre_exec(|| {
            if libc::prctl(
                libc::PR_SET_PDEATHSIG,
                libc::SIGKILL as libc::c_ulong,
                0,
                0,
                0,
            ) != 0
            {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

/// Writes `.mcp.json` with these servers into `workspace`.
pub fn write_mcp_json(workspace: &Path, servers: Value) {
    let text = json!({"mcpServers": servers}).to_string();
    std::fs::write(workspace.join(".mcp.json"), text)
        .unwrap_or_else(|e| panic!("cannot write .mcp.json: {e}"));
}
