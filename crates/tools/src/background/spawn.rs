//! Starting one background command and waiting for it on a task of its own.

use super::{JobError, JobStatus, Jobs, JobsRef};
use crate::bash::{shell_command, CallGuard};
use crate::process::LiveCall;
use crate::process::{ChildIo, MarkedChild};
use crate::sandbox::Confinement;
use crate::ToolContext;
use std::io;
use std::io::Write;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::AsyncReadExt;
use tokio::net::unix::pipe;
use tokio::sync::Notify;

/// How long to keep copying output after the command's processes ended (a process that left
/// both its group and its marker may hold the pipe).
const DRAIN_GRACE: Duration = Duration::from_secs(2);

/// A command just started: its shell and what ends it.
pub(super) struct Started {
    pub(super) child: MarkedChild,
    pub(super) guard: CallGuard,
}

/// Starts `command` in `ctx`'s workspace under `ctx`'s sandbox, stdout and stderr appended to
/// `log` (a descriptor opened here: a read-only sandbox cannot open files to write, yet the
/// command's output still reaches its log).
pub(super) fn spawn(command: &str, ctx: &ToolContext, log: &Path) -> Result<Started, JobError> {
    let root = ctx.workspace.root();
    let confinement = Confinement::prepare(ctx.sandbox, root, &ctx.sandbox_config)?;
    let start = ctx.workspace.cwd();
    let mut live = LiveCall::start()?;
    let file = std::fs::OpenOptions::new()
        .create_new(true)
        .append(true)
        .open(log)
        .map_err(JobError::io(format!("creating {}", log.display())))?;
    let mut last_err = None;
    let mut spawned = None;
    for shell in ["bash", "sh"] {
        let out = file
            .try_clone()
            .map_err(JobError::io("duplicating the log descriptor"))?;
        let err = file
            .try_clone()
            .map_err(JobError::io("duplicating the log descriptor"))?;
        let mut cmd = shell_command(shell, command, &start, &confinement, &live);
        cmd.stdout(ChildIo::Fd(out.into()))
            .stderr(ChildIo::Fd(err.into()));
        match cmd.spawn() {
            Ok(child) => {
                spawned = Some(child);
                break;
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => last_err = Some(e),
            Err(e) => {
                last_err = Some(e);
                break;
            }
        }
    }
    let protected = confinement.protected().clone();
    let scratch = confinement.into_scratch();
    let Some(child) = spawned else {
        let guard = CallGuard {
            live: Some(live),
            scratch,
            protected,
        };
        drop(guard);
        let e = last_err.unwrap_or_else(|| io::Error::other("no shell found"));
        return Err(JobError::Io {
            what: "starting the shell".into(),
            source: e,
        });
    };
    if let Some(pgid) = child.id().and_then(|id| libc::pid_t::try_from(id).ok()) {
        live.set_group(pgid);
    }
    Ok(Started {
        child,
        guard: CallGuard {
            live: Some(live),
            scratch,
            protected,
        },
    })
}

/// Waits for one background command on a task of its own and records how it ended.
pub(super) struct Waiter {
    pub(super) child: MarkedChild,
    pub(super) guard: CallGuard,
    pub(super) stop: Arc<Notify>,
    pub(super) timeout: Option<Duration>,
    pub(super) jobs: JobsRef,
    pub(super) id: String,
    /// For a call moved to the background while it ran: its output pipe, copied to the log.
    pub(super) pump: Option<(pipe::Receiver, std::fs::File)>,
}

/// Copies what arrives on `pump`'s pipe to its log; `false` once the pipe is closed.
async fn pump_once(pump: &mut Option<(pipe::Receiver, std::fs::File)>, buf: &mut [u8]) -> bool {
    let Some((receiver, log)) = pump.as_mut() else {
        return false;
    };
    match receiver.read(buf).await {
        Ok(0) | Err(_) => false,
        Ok(n) => {
            if let Err(e) = log.write_all(&buf[..n]) {
                tracing::debug!(error = %e, "writing a background command's log");
            }
            true
        }
    }
}

impl Waiter {
    /// Runs until the command exits, is told to stop, or times out; then ends everything it
    /// started (a `server &` it left behind included) before the ending is recorded. When this
    /// future is dropped instead (the runtime shuts down), the guard ends the processes.
    pub(super) async fn run(self) {
        let Waiter {
            mut child,
            guard,
            stop,
            timeout,
            jobs,
            id,
            mut pump,
        } = self;
        let deadline = async {
            match timeout {
                Some(t) => tokio::time::sleep(t).await,
                None => std::future::pending().await,
            }
        };
        tokio::pin!(deadline);
        let mut buf = vec![0u8; 64 * 1024];
        let mut pumping = pump.is_some();
        let status = loop {
            tokio::select! {
                more = pump_once(&mut pump, &mut buf), if pumping => pumping = more,
                status = child.wait() => break match status {
                    Ok(status) => match (status.code(), status.signal()) {
                        (Some(code), _) => JobStatus::Exited(code),
                        (None, Some(signal)) => JobStatus::Signalled(signal),
                        (None, None) => JobStatus::Lost("it ended without an exit code".into()),
                    },
                    Err(e) => JobStatus::Lost(e.to_string()),
                },
                () = stop.notified() => break JobStatus::Killed,
                () = &mut deadline => {
                    break JobStatus::TimedOut(timeout.map_or(0, |t| t.as_millis() as u64))
                }
            }
        };
        guard.kill_group();
        if matches!(status, JobStatus::Killed | JobStatus::TimedOut(_)) {
            if let Err(e) = child.wait().await {
                tracing::debug!(error = %e, "waiting for a killed background command");
            }
        }
        if let Some(note) = guard.end().await {
            tracing::warn!(job = %id, "{}", note.trim());
        }
        // What was still in the pipe when its processes ended.
        let _ = tokio::time::timeout(DRAIN_GRACE, async {
            while pumping {
                pumping = pump_once(&mut pump, &mut buf).await;
            }
        })
        .await;
        if let Some(jobs) = Jobs::from_weak(&jobs) {
            jobs.finish(&id, status);
        }
    }
}
