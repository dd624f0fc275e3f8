//! A stdio server's process: started in its own process group with its stderr appended to
//! `.troupe/logs/mcp/<server>.log` (never the user's terminal), marked and registered like a tool
//! call's processes so it ends with troupe however troupe ends, and killed with its group when
//! its connection is dropped.

use crate::rpc::lock;
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{mpsc, Arc, Mutex, OnceLock, Weak};
use std::time::{Duration, Instant};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};
use troupe_tools::process::LiveCall;

/// A running server process.
#[derive(Debug)]
pub(crate) struct ServerProcess {
    child: Child,
    slot: Arc<Slot>,
}

/// A server process's registration, reachable from [`end_for_exit`] while a connect or a
/// connection still holds the process.
#[derive(Debug)]
pub(crate) struct Slot {
    pid: libc::pid_t,
    /// Until it is ended: `end_all` (troupe's exit, a signal) kills it with the tool calls.
    live: Mutex<Option<LiveCall>>,
}

/// The slots of every server process this client started.
pub(crate) type Slots = Mutex<Vec<Weak<Slot>>>;

/// Ends every server process in `slots` for troupe's exit: their groups are killed at once and
/// their registrations dropped without a sweep each (troupe's own `end_all` sweeps once for
/// all), then this waits (bounded) until each leader is gone, so anything they orphaned is
/// troupe's to end by then.
pub(crate) fn end_for_exit(slots: &Slots) {
    let taken: Vec<Arc<Slot>> = lock(slots).drain(..).filter_map(|w| w.upgrade()).collect();
    let mut pids = Vec::with_capacity(taken.len());
    for slot in taken {
        if let Some(live) = lock(&slot.live).take() {
            live.kill_group_and_forget();
            pids.push(slot.pid);
        }
    }
    let deadline = Instant::now() + Duration::from_secs(1);
    let mut pause = Duration::from_micros(50);
    while pids.iter().any(|pid| running(*pid)) && Instant::now() < deadline {
        std::thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_millis(5));
    }
}

/// Whether `pid` is still running (neither gone nor a zombie).
fn running(pid: libc::pid_t) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // The state follows the command name, which is in parentheses and may hold anything.
        Ok(stat) => stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.trim_start().chars().next())
            .is_some_and(|state| state != 'Z' && state != 'X'),
        Err(_) => false,
    }
}

/// What [`spawn`] hands back: the process and its two pipes.
pub(crate) type Spawned = (ServerProcess, ChildStdout, ChildStdin);

/// The log a server's stderr goes to.
pub fn log_path(log_dir: &Path, server: &str) -> PathBuf {
    log_dir.join(format!("{server}.log"))
}

/// Starts `command` for `server` in `cwd`, on the spawner thread (see [`on_spawner`]).
pub(crate) async fn spawn(
    server: &str,
    command: &str,
    args: &[String],
    env: &BTreeMap<String, String>,
    cwd: &Path,
    log_dir: &Path,
    slots: &Slots,
) -> Result<Spawned, String> {
    let log_file = log_path(log_dir, server);
    std::fs::create_dir_all(log_dir).map_err(|e| format!("{}: {e}", log_dir.display()))?;
    let mut log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&log_file)
        .map_err(|e| format!("{}: {e}", log_file.display()))?;
    let stderr = log
        .try_clone()
        .map_err(|e| format!("{}: {e}", log_file.display()))?;
    let mut live = LiveCall::start().map_err(|e| format!("cannot start `{command}`: {e}"))?;
    let (marker, id) = live.env();
    let mut cmd = Command::new(command);
    // troupe's environment without its provider keys; what the entry's own `env` names (even a
    // key, `"K": "${OPENAI_API_KEY}"`) is set on top and reaches the server.
    troupe_tools::child_env::scrub(cmd.as_std_mut());
    cmd.args(args)
        .envs(env)
        .current_dir(cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::from(stderr))
        // Its own group: one kill reaches whatever it starts, and the terminal's Ctrl-C, meant
        // for troupe, does not reach it.
        .process_group(0)
        // Inherited by its descendants, so they are found and ended with troupe.
        .env(marker, id);
    // No `pre_exec` (no parent-death signal): without one, std starts the server with
    // posix_spawn (vfork-like) instead of forking troupe's whole address space, which is most of
    // what a configured server costs the first prompt. It still ends with troupe: `end_all` kills
    // its group on every exit troupe sees, and a stdio server whose client is gone reads end of
    // file on stdin and exits.

    let mut child = match on_spawner(cmd).await {
        Ok(child) => child,
        Err(e) => {
            // Nothing was started: just drop the registration.
            live.kill_group_and_forget();
            return Err(match e.kind() {
                std::io::ErrorKind::NotFound => format!(
                    "cannot start `{command}`: no such program (is it installed and on PATH?)"
                ),
                _ => format!("cannot start `{command}`: {e}"),
            });
        }
    };
    let pid = child
        .id()
        .and_then(|id| libc::pid_t::try_from(id).ok())
        .unwrap_or(0);
    if pid > 0 {
        live.set_group(pid);
        // A marker line, so one server's runs can be told apart in its log.
        let _ = writeln!(
            log,
            "--- troupe started `{}` (pid {pid}) ---",
            std::iter::once(command)
                .chain(args.iter().map(String::as_str))
                .collect::<Vec<_>>()
                .join(" ")
        );
    }
    let (Some(stdout), Some(stdin)) = (child.stdout.take(), child.stdin.take()) else {
        return Err(format!("`{command}` started without its pipes"));
    };
    let slot = Arc::new(Slot {
        pid,
        live: Mutex::new(Some(live)),
    });
    {
        let mut slots = lock(slots);
        slots.retain(|w| w.strong_count() > 0);
        slots.push(Arc::downgrade(&slot));
    }
    Ok((ServerProcess { child, slot }, stdout, stdin))
}

/// A spawn waiting for the spawner thread.
type Job = Box<dyn FnOnce() + Send>;

/// Spawns `cmd` on a thread of its own that lives as long as troupe, so the async workers,
/// which also carry the model calls, are not held up while the kernel starts the program
/// (servers start while the first prompt is under way). Without that thread (it could not be
/// started) the caller spawns.
async fn on_spawner(mut cmd: Command) -> std::io::Result<Child> {
    static SPAWNER: OnceLock<Option<mpsc::Sender<Job>>> = OnceLock::new();
    let spawner = SPAWNER.get_or_init(|| {
        let (tx, rx) = mpsc::channel::<Job>();
        std::thread::Builder::new()
            .name("troupe-mcp-spawn".into())
            .spawn(move || {
                for job in rx {
                    job();
                }
                // Never return: the servers forked here would get their parent-death signal.
                loop {
                    std::thread::park();
                }
            })
            .ok()
            .map(|_| tx)
    });
    let runtime = tokio::runtime::Handle::current();
    let (tx, rx) = tokio::sync::oneshot::channel();
    let job: Job = Box::new(move || {
        // tokio registers the child with this runtime's process driver.
        let _inside = runtime.enter();
        let _ = tx.send(cmd.spawn());
    });
    match spawner {
        Some(spawner) => match spawner.send(job) {
            Ok(()) => {}
            Err(mpsc::SendError(job)) => job(),
        },
        None => job(),
    }
    rx.await
        .unwrap_or_else(|_| Err(std::io::Error::other("the spawner thread is gone")))
}

impl ServerProcess {
    /// How the process ended, if it has (without waiting).
    pub(crate) fn exit_status(&mut self) -> Option<std::process::ExitStatus> {
        self.child.try_wait().ok().flatten()
    }

    /// Waits up to `limit` for the process to end and says how it ended; for a message after
    /// its pipe closed, when the exit is usually a moment away.
    pub(crate) async fn wait_exit(
        &mut self,
        limit: std::time::Duration,
    ) -> Option<std::process::ExitStatus> {
        tokio::time::timeout(limit, self.child.wait())
            .await
            .ok()
            .and_then(Result::ok)
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        let Some(live) = lock(&self.slot.live).take() else {
            return; // ended for troupe's exit already
        };
        live.kill_group();
        // Usually nothing is left; when something is still dying, wait for it off this thread.
        if let Some(live) = live.end_without_waiting() {
            std::thread::spawn(move || live.end());
        }
    }
}
