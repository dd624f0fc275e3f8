//! Running one command hook: `sh -c` in the project directory, in a process group of its own,
//! the event's JSON on stdin, stdout and stderr collected, killed with everything it started
//! when its timeout passes. Nothing a hook starts outlives it (troupe's rule for every process
//! it starts): what is left of its group when it exits is ended too.

use crate::config::HookCommand;
use std::path::Path;
use std::process::ExitStatus;
use std::time::{Duration, Instant};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use troupe_tools::process::{ChildIo, LiveCall, MarkedCommand};

/// The most of each output stream kept; a hook's JSON answer is far smaller.
const OUTPUT_LIMIT: usize = 1 << 20;

/// How long output is still read after the hook and its group were ended.
const DRAIN_GRACE: Duration = Duration::from_millis(200);

pub use crate::ending::Ending;

/// What one hook run produced.
#[derive(Debug, Clone)]
pub struct HookRun {
    /// The command as configured.
    pub command: String,
    /// How it ended.
    pub ending: Ending,
    /// Its standard output (at most 1 MiB).
    pub stdout: String,
    /// Its standard error (at most 1 MiB).
    pub stderr: String,
    /// From spawn to the end of its group.
    pub duration: Duration,
}

impl HookRun {
    /// Whether the hook exited with `code`.
    pub fn exited_with(&self, code: i32) -> bool {
        self.ending == Ending::Exited(code)
    }
}

/// Runs `hook` with `input` on stdin in `project_dir`, which it also finds in
/// `$CLAUDE_PROJECT_DIR` and `$TROUPE_PROJECT_DIR`.
pub async fn run_hook(hook: &HookCommand, input: &[u8], project_dir: &Path) -> HookRun {
    run_hook_with(hook, input, project_dir, &[]).await
}

/// [`run_hook`] with `env` set on top of the hook's environment (an `http` hook is posted
/// instead).
pub(crate) async fn run_hook_with(
    hook: &HookCommand,
    input: &[u8],
    project_dir: &Path,
    env: &[(String, String)],
) -> HookRun {
    let started = Instant::now();
    let outcome = match &hook.http {
        Some(target) => Ok(crate::http::post(target, input, hook.timeout).await),
        None => execute(hook, input, project_dir, env).await,
    };
    let (ending, stdout, stderr) = match outcome {
        Ok(done) => done,
        Err(err) => (
            Ending::NotStarted(err.to_string()),
            String::new(),
            String::new(),
        ),
    };
    HookRun {
        command: hook.command.clone(),
        ending,
        stdout,
        stderr,
        duration: started.elapsed(),
    }
}

async fn execute(
    hook: &HookCommand,
    input: &[u8],
    project_dir: &Path,
    env: &[(String, String)],
) -> std::io::Result<(Ending, String, String)> {
    let mut live = LiveCall::start().map_err(std::io::Error::other)?;
    // Its own group (the timeout's kill reaches everything it started) and the call's marker,
    // inherited by every descendant, so what the hook starts can be found and ended.
    let mut marked = MarkedCommand::new("sh", &live);
    let cmd = marked.command();
    // A hook gets troupe's environment without its provider keys.
    troupe_tools::child_env::scrub(cmd);
    cmd.arg("-c")
        .arg(&hook.command)
        .current_dir(project_dir)
        .env("CLAUDE_PROJECT_DIR", project_dir)
        .env("TROUPE_PROJECT_DIR", project_dir)
        .envs(env.iter().map(|(k, v)| (k, v)));
    marked
        .stdin(ChildIo::Piped)
        .stdout(ChildIo::Piped)
        .stderr(ChildIo::Piped);
    let mut child = marked.spawn()?;
    if let Some(pgid) = child.id().and_then(|id| libc::pid_t::try_from(id).ok()) {
        live.set_group(pgid);
    }
    let guard = Guard(Some(live));
    // Concurrently with the run: a hook that never reads its stdin must not block troupe, and
    // its output pipes must not fill up.
    let stdin = child.stdin.take().map(|mut pipe| {
        let input = input.to_vec();
        tokio::spawn(async move {
            // A hook may exit without reading; the broken pipe is not an error of troupe's.
            let _ = pipe.write_all(&input).await;
        })
    });
    let stdout = child
        .stdout
        .take()
        .map(|pipe| tokio::spawn(read_limited(pipe)));
    let stderr = child
        .stderr
        .take()
        .map(|pipe| tokio::spawn(read_limited(pipe)));
    let ending = match tokio::time::timeout(hook.timeout, child.wait()).await {
        Ok(status) => ending_of(status?),
        Err(_) => Ending::TimedOut(hook.timeout),
    };
    // Whether it finished or timed out, nothing it started may outlive it.
    guard.kill_group();
    if matches!(ending, Ending::TimedOut(_)) {
        child.wait().await?;
    }
    guard.end().await;
    if let Some(task) = stdin {
        task.abort();
    }
    Ok((ending, collect(stdout).await, collect(stderr).await))
}

/// Reads a stream to its end, keeping at most [`OUTPUT_LIMIT`] bytes.
async fn read_limited(mut pipe: impl AsyncRead + Unpin) -> String {
    let mut kept = Vec::new();
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        match pipe.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                let room = OUTPUT_LIMIT.saturating_sub(kept.len());
                kept.extend_from_slice(&buf[..n.min(room)]);
            }
        }
    }
    String::from_utf8_lossy(&kept).into_owned()
}

/// The output a reader task collected, given a moment once the hook's processes are gone.
async fn collect(task: Option<tokio::task::JoinHandle<String>>) -> String {
    let Some(mut task) = task else {
        return String::new();
    };
    match tokio::time::timeout(DRAIN_GRACE, &mut task).await {
        Ok(Ok(text)) => text,
        Ok(Err(_)) => String::new(),
        Err(_) => {
            task.abort();
            String::new()
        }
    }
}

fn ending_of(status: ExitStatus) -> Ending {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => Ending::Exited(code),
        (None, Some(signal)) => Ending::Signalled(signal),
        (None, None) => Ending::Signalled(0),
    }
}

/// Ends the hook's processes on every way out: awaited when the run finishes, or from a thread
/// of its own when the run is dropped (the agent's turn was interrupted).
struct Guard(Option<LiveCall>);

impl Guard {
    /// Kills the hook's process group now, without waiting.
    fn kill_group(&self) {
        if let Some(live) = &self.0 {
            live.kill_group();
        }
    }

    /// Kills the group and every process marked as the hook's, and waits until they are gone.
    async fn end(mut self) {
        let Some(live) = self.0.take() else {
            return;
        };
        live.kill_group();
        if let Some(live) = live.end_without_waiting() {
            if let Err(err) = tokio::task::spawn_blocking(move || live.end()).await {
                tracing::debug!(error = %err, "ending a hook's processes");
            }
        }
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        if let Some(live) = self.0.take() {
            live.kill_group();
            std::thread::spawn(move || live.end());
        }
    }
}
