//! The `bash` tool: runs a shell command in the workspace, in its own process group, with a
//! timeout, capturing stdout and stderr interleaved under an output budget.

pub use crate::shell::is_read_only_command;

use crate::output::{HeadTail, DEFAULT_OUTPUT_BUDGET};
use crate::{parse_input, schema_of, Effect, Tool, ToolContext, ToolOutput};
use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use std::io;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{ExitStatus, Stdio};
use std::time::Duration;
use tokio::io::AsyncReadExt;
use tokio::net::unix::pipe;
use tokio::process::{Child, Command};

/// Timeout when the call names none.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);

/// Longest timeout a call may ask for.
pub const MAX_TIMEOUT: Duration = Duration::from_secs(600);

/// How long to keep reading after the shell exited and its group was killed; only a process that
/// left the group (setsid) while holding the output pipe makes this wait.
const DRAIN_GRACE: Duration = Duration::from_secs(2);

/// Input of the `bash` tool.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct BashInput {
    /// The command to run with `bash -c`, in the workspace root.
    pub command: String,
    /// Timeout in milliseconds (default 120000, at most 600000).
    pub timeout_ms: Option<u64>,
    /// A short description of what the command does, in 5-10 words, for the user.
    pub description: Option<String>,
}

/// Runs shell commands in the workspace.
#[derive(Debug, Default, Clone, Copy)]
pub struct BashTool;

const DESCRIPTION: &str =
    "Runs a shell command with `bash -c` in the workspace root and returns its \
combined stdout and stderr followed by `exit code: N`. Stdin is closed, so interactive programs \
fail. The timeout defaults to 120000 ms (max 600000); on timeout the command and everything it \
started are killed. Processes left running in the background when the command ends are killed \
too; to keep a server running, detach it: `setsid cmd > log 2>&1 &`. Long output keeps its \
beginning and end. Prefer read_file, glob and grep over cat, find and grep for reading files.";

#[async_trait]
impl Tool for BashTool {
    fn name(&self) -> &str {
        "bash"
    }

    fn description(&self) -> &str {
        DESCRIPTION
    }

    fn input_schema(&self) -> Value {
        schema_of::<BashInput>()
    }

    fn effect(&self, input: &Value) -> Effect {
        match input.get("command").and_then(Value::as_str) {
            Some(command) if is_read_only_command(command) => Effect::ReadOnly,
            _ => Effect::Execute,
        }
    }

    async fn call(&self, input: Value, ctx: &ToolContext) -> ToolOutput {
        let input: BashInput = match parse_input(self.name(), input) {
            Ok(input) => input,
            Err(output) => return output,
        };
        let timeout = match input.timeout_ms {
            None | Some(0) => DEFAULT_TIMEOUT,
            Some(ms) => Duration::from_millis(ms).min(MAX_TIMEOUT),
        };
        match run(&input.command, ctx.workspace.root(), timeout).await {
            Ok(run) => run.into_output(timeout),
            Err(err) => ToolOutput::error(format!("Could not run the command: {err}")),
        }
    }
}

/// How the shell ended.
#[derive(Debug)]
enum Ending {
    /// It exited (or was killed by a signal) on its own.
    Exited(ExitStatus),
    /// The timeout expired and the group was killed.
    TimedOut,
}

/// Everything learned from one run.
#[derive(Debug)]
struct Run {
    ending: Ending,
    output: String,
    /// A process that left the group still held the output pipe when reading stopped.
    pipe_held_open: bool,
}

impl Run {
    /// Phrases the run for the model.
    fn into_output(self, timeout: Duration) -> ToolOutput {
        let mut text = self.output;
        if text.is_empty() {
            text.push_str("(no output)");
        }
        if !text.ends_with('\n') {
            text.push('\n');
        }
        if self.pipe_held_open {
            text.push_str(
                "(a detached process still holds the output open; later output is not shown)\n",
            );
        }
        match self.ending {
            Ending::TimedOut => {
                text.push_str(&format!(
                    "Command timed out after {} ms; it and every process it started were killed.",
                    timeout.as_millis()
                ));
                ToolOutput::error(text)
            }
            Ending::Exited(status) => match (status.code(), status.signal()) {
                (Some(code), _) => {
                    text.push_str(&format!("exit code: {code}"));
                    ToolOutput {
                        content: text,
                        is_error: code != 0,
                    }
                }
                (None, Some(signal)) => {
                    text.push_str(&format!(
                        "killed by signal {signal} ({})",
                        signal_name(signal)
                    ));
                    ToolOutput::error(text)
                }
                (None, None) => {
                    text.push_str("ended without an exit code");
                    ToolOutput::error(text)
                }
            },
        }
    }
}

/// Kills a whole process group when dropped, so a cancelled call (Ctrl-C drops the future)
/// leaves nothing running. Disarmed once the group has been killed on purpose.
struct GroupKiller {
    pgid: Option<libc::pid_t>,
}

impl GroupKiller {
    /// Sends SIGKILL to the group now and disarms the guard.
    fn kill_now(&mut self) {
        if let Some(pgid) = self.pgid.take() {
            kill_group(pgid);
        }
    }
}

impl Drop for GroupKiller {
    fn drop(&mut self) {
        self.kill_now();
    }
}

/// SIGKILLs every process in group `pgid`.
fn kill_group(pgid: libc::pid_t) {
    if pgid <= 0 {
        // kill(0 or -1) would hit our own group or every process we may signal.
        return;
    }
    // SAFETY: kill(2) has no memory-safety preconditions; a negative pid addresses a group.
    let result = unsafe { libc::kill(-pgid, libc::SIGKILL) };
    if result != 0 {
        // ESRCH: the group is already empty, which is the usual case after a clean exit.
        tracing::trace!(pgid, error = %io::Error::last_os_error(), "kill process group");
    }
}

/// Starts the shell, falling back from bash to sh, with stdout and stderr on one pipe.
fn spawn_shell(command: &str, cwd: &Path) -> io::Result<(Child, pipe::Receiver)> {
    let mut last_err = None;
    for shell in ["bash", "sh"] {
        let (reader, writer) = io::pipe()?;
        let writer_for_stderr = writer.try_clone()?;
        let mut cmd = Command::new(shell);
        cmd.arg("-c")
            .arg(command)
            .current_dir(cwd)
            .stdin(Stdio::null())
            .stdout(writer)
            .stderr(writer_for_stderr)
            // Its own group: one kill reaches every descendant, and the terminal's Ctrl-C does not.
            .process_group(0)
            // A git credential prompt would open /dev/tty and hang until the timeout.
            .env("GIT_TERMINAL_PROMPT", "0");
        match cmd.spawn() {
            Ok(child) => {
                // The command owns our copies of the write end; drop them or EOF never comes.
                drop(cmd);
                let receiver = pipe::Receiver::from_owned_fd(reader.into())?;
                return Ok((child, receiver));
            }
            Err(err) if err.kind() == io::ErrorKind::NotFound => last_err = Some(err),
            Err(err) => return Err(err),
        }
    }
    Err(last_err.unwrap_or_else(|| io::Error::other("no shell found")))
}

/// Runs `command` to completion or timeout, collecting its output under the default budget.
async fn run(command: &str, cwd: &Path, timeout: Duration) -> io::Result<Run> {
    let (mut child, mut receiver) = spawn_shell(command, cwd)?;
    let mut killer = GroupKiller {
        pgid: child.id().and_then(|id| libc::pid_t::try_from(id).ok()),
    };
    let mut collected = HeadTail::new(DEFAULT_OUTPUT_BUDGET);
    let mut buf = vec![0u8; 64 * 1024];
    let mut eof = false;
    let deadline = tokio::time::sleep(timeout);
    tokio::pin!(deadline);
    let ending = loop {
        tokio::select! {
            read = receiver.read(&mut buf), if !eof => match read {
                Ok(0) => eof = true,
                Ok(n) => collected.push(&buf[..n]),
                Err(err) => {
                    tracing::debug!(error = %err, "reading command output");
                    eof = true;
                }
            },
            status = child.wait() => break Ending::Exited(status?),
            () = &mut deadline => break Ending::TimedOut,
        }
    };
    // Whether it finished or timed out, nothing it started may outlive the call.
    killer.kill_now();
    if matches!(ending, Ending::TimedOut) {
        child.wait().await?;
    }
    let drained = tokio::time::timeout(DRAIN_GRACE, async {
        while !eof {
            match receiver.read(&mut buf).await {
                Ok(0) | Err(_) => eof = true,
                Ok(n) => collected.push(&buf[..n]),
            }
        }
    })
    .await;
    Ok(Run {
        ending,
        output: collected.into_text(),
        pipe_held_open: drained.is_err(),
    })
}

/// Conventional name of a signal number, for messages.
fn signal_name(signal: i32) -> &'static str {
    match signal {
        libc::SIGHUP => "SIGHUP",
        libc::SIGINT => "SIGINT",
        libc::SIGQUIT => "SIGQUIT",
        libc::SIGILL => "SIGILL",
        libc::SIGABRT => "SIGABRT",
        libc::SIGBUS => "SIGBUS",
        libc::SIGFPE => "SIGFPE",
        libc::SIGKILL => "SIGKILL",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGPIPE => "SIGPIPE",
        libc::SIGALRM => "SIGALRM",
        libc::SIGTERM => "SIGTERM",
        _ => "unknown signal",
    }
}
