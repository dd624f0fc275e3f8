//! The `bash` tool: runs a shell command in the workspace, in its own process group, with a
//! timeout, capturing stdout and stderr interleaved under an output budget.

pub use crate::shell::is_read_only_command;

use crate::output::{HeadTail, DEFAULT_OUTPUT_BUDGET};
use crate::process::{plain_words, ChildIo, LiveCall, MarkedChild, MarkedCommand};
use crate::sandbox::{retire, Confinement, Protected, Sandbox, SandboxError, Scratch};
use crate::{parse_input, schema_of, Effect, Tool, ToolContext, ToolOutput};
use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use std::io;
use std::os::fd::OwnedFd;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::ExitStatus;
use std::time::Duration;
use tokio::io::AsyncReadExt;
use tokio::net::unix::pipe;

/// Timeout when the call names none.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);

/// Longest timeout a call may ask for.
pub const MAX_TIMEOUT: Duration = Duration::from_secs(600);

/// How long to keep reading after the call's processes were ended; only a process that left
/// both the group and the call's environment marker while holding the output pipe makes this wait.
const DRAIN_GRACE: Duration = Duration::from_secs(2);

/// The descriptor a foreground call's shell reports its final directory on (`pwd -P`, from an
/// EXIT trap): high enough that a command's own redirections (3 to 9) leave it alone.
const CWD_FD: libc::c_int = 63;

/// Input of the `bash` tool.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct BashInput {
    /// The command to run with `bash -c`, in the working directory: where the previous call
    /// ended (a `cd` persists) inside the workspace, at first the workspace root or the folder
    /// inside it troupe was started from.
    pub command: String,
    /// Timeout in milliseconds (default 120000, at most 600000).
    pub timeout_ms: Option<u64>,
    /// A short description of what the command does, in 5-10 words, for the user.
    pub description: Option<String>,
    /// Start the command and return at once with its id and log (see the description).
    pub run_in_background: Option<bool>,
}

/// Runs shell commands in the workspace.
#[derive(Debug, Default, Clone, Copy)]
pub struct BashTool;

const DESCRIPTION: &str =
    "Runs a shell command with `bash -c` in the working directory and returns its \
combined stdout and stderr, then `exit code: N`. The working directory persists between calls \
(`cd sub && make` leaves the next call in sub) inside the workspace; a call that ends outside \
it resets it to the start, and the result says so. Stdin is closed. Timeout 120000 ms by default \
(max 600000); on timeout, or when the call ends, every process it started is killed, detached \
ones included. The command may run in a sandbox: read-only commands can write only to $TMPDIR; \
explicitly allowed ones also to the workspace. Long output keeps its beginning and end. Prefer \
read_file, glob and grep for reading files. `run_in_background: true` returns at once with an id \
and a log path (for servers, watchers, long builds): `bash_output{id}` reads new output, \
`kill_background{id}` ends it, a <task_notification> says when it finishes; no timeout unless \
given.";

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

    fn built_schema(&self) -> Option<&'static str> {
        Some(crate::tool_schemas::BASH)
    }

    fn runs_programs(&self) -> bool {
        true
    }

    fn effect(&self, input: &Value) -> Effect {
        match input.get("command").and_then(Value::as_str) {
            Some(command) if is_read_only_command(command) => Effect::ReadOnly,
            _ => Effect::Execute,
        }
    }

    /// A read-only command run in the foreground (one in the background adds a job).
    fn reads_only(&self, input: &Value) -> bool {
        let background = input.get("run_in_background").and_then(Value::as_bool);
        background != Some(true) && self.effect(input) == Effect::ReadOnly
    }

    async fn call(&self, input: Value, ctx: &ToolContext) -> ToolOutput {
        let input: BashInput = match parse_input(self.name(), input) {
            Ok(input) => input,
            Err(output) => return output,
        };
        if input.run_in_background == Some(true) {
            return crate::background::start_output(&input, ctx).await;
        }
        let timeout = match input.timeout_ms {
            None | Some(0) => DEFAULT_TIMEOUT,
            Some(ms) => Duration::from_millis(ms).min(MAX_TIMEOUT),
        };
        match run(&input, ctx, timeout).await {
            Ok(Finished::Ran(run)) => run.into_output(timeout),
            Ok(Finished::Moved(output)) => output,
            Err(RunError::Sandbox(err)) => {
                ToolOutput::error(format!("The command did not run: {err}"))
            }
            Err(RunError::Io(err)) => {
                ToolOutput::error(format!("Could not run the command: {err}"))
            }
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
    /// How it was confined.
    sandbox: Sandbox,
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
        let failed = match self.ending {
            Ending::Exited(status) => !status.success(),
            Ending::TimedOut => true,
        };
        // Only when something was refused, so an ordinary failure (grep found nothing) is not
        // blamed on the sandbox.
        let refused = text.contains("Permission denied")
            || text.contains("Operation not permitted")
            || text.contains("Read-only file system");
        if failed && refused {
            if let Some(note) = sandbox_note(self.sandbox) {
                text.push_str(note);
            }
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
                        images: Vec::new(),
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

/// Ends the call's processes and removes its temporary directory on every way out of [`run`]:
/// awaited when the call finishes, or from a thread of its own when the call is dropped
/// (Ctrl-C drops the future), so a cancelled call leaves nothing running either.
pub(crate) struct CallGuard {
    pub(crate) live: Option<LiveCall>,
    pub(crate) scratch: Option<Scratch>,
    /// The protected paths as they were before the call; those it created are removed at its end.
    pub(crate) protected: Protected,
}

impl CallGuard {
    /// Kills the shell's process group now, without waiting; closes the output pipe quickly.
    pub(crate) fn kill_group(&self) {
        if let Some(live) = &self.live {
            live.kill_group();
        }
    }

    /// Kills everything the call started, waits until it is gone, then has the temporary
    /// directory removed, and removes the protected files the call created; returns what it
    /// tells the model about those.
    pub(crate) async fn end(mut self) -> Option<String> {
        if let Some(live) = self.live.take().and_then(LiveCall::end_without_waiting) {
            // Something is still dying (or another call's look at the process tree was
            // running): wait for it on a thread that may block.
            if let Err(err) = tokio::task::spawn_blocking(move || live.end()).await {
                // Only when the runtime is shutting down; troupe ends every call on its way out.
                tracing::debug!(error = %err, "ending a tool call");
            }
        }
        if let Some(scratch) = self.scratch.take() {
            retire(scratch);
        }
        std::mem::take(&mut self.protected).after_call()
    }
}

impl Drop for CallGuard {
    fn drop(&mut self) {
        let Some(live) = self.live.take() else {
            return;
        };
        live.kill_group();
        let scratch = self.scratch.take();
        let protected = std::mem::take(&mut self.protected);
        std::thread::spawn(move || {
            live.end();
            if let Some(scratch) = scratch {
                retire(scratch);
            }
            if let Some(note) = protected.after_call() {
                tracing::warn!("{}", note.trim());
            }
        });
    }
}

/// Why a command did not run.
#[derive(Debug, thiserror::Error)]
enum RunError {
    #[error(transparent)]
    Sandbox(#[from] SandboxError),
    #[error(transparent)]
    Io(#[from] io::Error),
}

/// The shell command line for one call, everything but its output set: `shell -c command` in
/// `cwd`, stdin on /dev/null, its own process group, marked as `live`'s and confined as
/// `confinement` says. Shared with background commands, so they run exactly as a foreground
/// call would.
pub(crate) fn shell_command(
    shell: &str,
    command: &str,
    cwd: &Path,
    confinement: &Confinement,
    live: &LiveCall,
) -> MarkedCommand {
    let mut marked = call_command(shell, command, cwd, confinement, live);
    marked.command().arg("-c").arg(command);
    marked
}

/// A plain `command` (see [`plain_words`]) as its program and arguments, run in place of bash
/// with the environment bash would give it; otherwise as [`shell_command`].
fn plain_command(
    words: &[&str],
    command: &str,
    cwd: &Path,
    confinement: &Confinement,
    live: &LiveCall,
) -> MarkedCommand {
    let (program, args) = words.split_first().unwrap_or((&"", &[]));
    let mut marked = call_command(program, command, cwd, confinement, live);
    marked.command().args(args);
    marked.in_place_of_bash();
    marked
}

/// What every call's process gets: `program` in `cwd`, without troupe's provider keys, git
/// held to reading in a read-only call, its own scratch directory, confined and marked.
fn call_command(
    program: &str,
    command: &str,
    cwd: &Path,
    confinement: &Confinement,
    live: &LiveCall,
) -> MarkedCommand {
    let mut marked = MarkedCommand::new(program, live);
    let cmd = marked.command();
    // Without troupe's provider keys; a read-only call's git runs no program the repository
    // names (the analysis let it run unasked because it only reads).
    crate::child_env::scrub(cmd);
    if confinement.level() == Sandbox::ReadOnly {
        crate::git_env::GitEnv::for_command(cwd, command).apply(cmd);
    }
    cmd.current_dir(cwd)
        // A git credential prompt would open /dev/tty and hang until the timeout.
        .env("GIT_TERMINAL_PROMPT", "0");
    if let Some(scratch) = confinement.scratch_dir() {
        for var in ["TMPDIR", "TMP", "TEMP"] {
            cmd.env(var, scratch);
        }
    }
    marked.confine(confinement);
    marked
}

/// Starts the call's process with stdout and stderr on one pipe, marked as `live`'s and
/// confined as `confinement` says: a plain command in place of bash (bash's start-up
/// is most of a short call), else bash, falling back to sh. A plain command that cannot start
/// so (not found, not executable, an environment bash acts on) goes to bash, which runs it or
/// says why not in its own words.
fn spawn_shell(
    command: &str,
    cwd: &Path,
    confinement: &Confinement,
    live: &LiveCall,
    report: &OwnedFd,
) -> io::Result<(MarkedChild, pipe::Receiver)> {
    if let Some(words) = plain_words(command) {
        match spawn_piped(plain_command(&words, command, cwd, confinement, live)) {
            Ok(spawned) => return Ok(spawned),
            Err(err) => tracing::debug!(error = %err, "the plain command runs through bash"),
        }
    }
    let mut last_err = None;
    // The trap joins the command's first line, so bash's line numbers stay the command's own.
    // Nobody reads the report of a call moved to the background: the write must not kill the
    // shell with SIGPIPE then.
    let script = format!("trap 'trap \"\" PIPE; pwd -P 2>/dev/null >&{CWD_FD}' EXIT; {command}");
    for shell in ["bash", "sh"] {
        let mut marked = call_command(shell, command, cwd, confinement, live);
        marked.command().arg("-c").arg(&script);
        marked.side(report.try_clone()?, CWD_FD);
        match spawn_piped(marked) {
            Ok(spawned) => return Ok(spawned),
            Err(err) if err.kind() == io::ErrorKind::NotFound => last_err = Some(err),
            Err(err) => return Err(err),
        }
    }
    Err(last_err.unwrap_or_else(|| io::Error::other("no shell found")))
}

/// Starts `cmd` with stdout and stderr on one pipe, whose reading end comes back with it.
fn spawn_piped(mut cmd: MarkedCommand) -> io::Result<(MarkedChild, pipe::Receiver)> {
    let (reader, writer) = io::pipe()?;
    let writer_for_stderr = writer.try_clone()?;
    cmd.stdout(ChildIo::Fd(writer.into()))
        .stderr(ChildIo::Fd(writer_for_stderr.into()));
    // The spawn closes our copies of the write end, or EOF would never come.
    let child = cmd.spawn()?;
    let receiver = pipe::Receiver::from_owned_fd(reader.into())?;
    Ok((child, receiver))
}

/// How a foreground call came back.
enum Finished {
    /// It ran to its end (or timeout).
    Ran(Run),
    /// It ran past the agent's auto-background threshold and goes on as a background job; the
    /// placeholder result says so.
    Moved(ToolOutput),
}

/// Runs the call's command to completion or timeout under the call's sandbox, collecting its
/// output under the default budget; everything it started is ended before this returns —
/// unless it runs past the agent's auto-background threshold, when it is handed to the agent's
/// background jobs as it runs.
async fn run(
    input: &BashInput,
    ctx: &ToolContext,
    timeout: Duration,
) -> Result<Finished, RunError> {
    let command = input.command.as_str();
    let started_ms = crate::background::now_ms();
    let root = ctx.workspace.root();
    let confinement = Confinement::prepare(ctx.sandbox, root, &ctx.sandbox_config)?;
    let start = ctx.workspace.cwd();
    let sandbox = confinement.level();
    let mut live = LiveCall::start().map_err(io::Error::other)?;
    let (report, reported) = io::pipe()?;
    let reported = OwnedFd::from(reported);
    let spawned = spawn_shell(command, &start, &confinement, &live, &reported);
    drop(reported);
    let protected = confinement.protected().clone();
    let scratch = confinement.into_scratch();
    if let Ok((child, _)) = &spawned {
        if let Some(pgid) = child.id().and_then(|id| libc::pid_t::try_from(id).ok()) {
            live.set_group(pgid);
        }
    }
    let guard = CallGuard {
        live: Some(live),
        scratch,
        protected,
    };
    let (mut child, mut receiver) = spawned?;
    let mut collected = HeadTail::new(DEFAULT_OUTPUT_BUDGET);
    // Filled through its spare capacity: a buffer zeroed up front would touch (and fault in)
    // all its pages for a command that prints a line.
    let mut buf = Vec::with_capacity(64 * 1024);
    let mut eof = false;
    let deadline = tokio::time::sleep(timeout);
    tokio::pin!(deadline);
    // The agent's jobs and the threshold, when long calls move to the background.
    let auto = ctx.background.as_ref().and_then(|jobs| {
        jobs.auto_background()
            .filter(|after| *after < timeout)
            .map(|after| (jobs, after))
    });
    let handover = async {
        match auto {
            Some((jobs, after)) => {
                tokio::time::sleep(after).await;
                (jobs, after)
            }
            None => std::future::pending().await,
        }
    };
    tokio::pin!(handover);
    let ending = loop {
        tokio::select! {
            read = receiver.read_buf(&mut buf), if !eof => match read {
                Ok(0) => eof = true,
                Ok(_) => {
                    collected.push(&buf);
                    if let Some(progress) = &ctx.progress {
                        progress.output(&buf);
                    }
                    buf.clear();
                }
                Err(err) => {
                    tracing::debug!(error = %err, "reading command output");
                    eof = true;
                }
            },
            status = child.wait() => break Ok(Ending::Exited(status?)),
            () = &mut deadline => break Ok(Ending::TimedOut),
            moved = &mut handover => break Err(moved),
        }
    };
    let ending = match ending {
        Ok(ending) => ending,
        Err((jobs, after)) => {
            let so_far = collected.into_text();
            let handover = crate::background::Handover {
                command: command.to_string(),
                description: input.description.clone(),
                started_ms,
                child,
                receiver,
                guard,
                so_far: so_far.clone(),
                timeout: Some(timeout.saturating_sub(after)),
            };
            let output = match jobs.adopt(handover) {
            Ok(job) => ToolOutput::ok(crate::background::moved(&job, after, &so_far)),
            Err(e) => ToolOutput::error(format!(
                "The command ran longer than {} s and could not be moved to the background ({e}); it was ended.",
                after.as_secs()
            )),
        };
            return Ok(Finished::Moved(output));
        }
    };
    // Whether it finished or timed out, nothing it started may outlive the call.
    guard.kill_group();
    if matches!(ending, Ending::TimedOut) {
        child.wait().await?;
    }
    let removed = guard.end().await;
    let drained = tokio::time::timeout(DRAIN_GRACE, async {
        while !eof {
            match receiver.read_buf(&mut buf).await {
                Ok(0) | Err(_) => eof = true,
                Ok(_) => {
                    collected.push(&buf);
                    buf.clear();
                }
            }
        }
    })
    .await;
    let mut output = collected.into_text();
    if let Some(note) = removed {
        output.push_str(&note);
    }
    if matches!(ending, Ending::Exited(_)) {
        if let Some(note) = follow_cwd(report, ctx) {
            if !output.is_empty() && !output.ends_with('\n') {
                output.push('\n');
            }
            output.push_str(&note);
        }
    }
    Ok(Finished::Ran(Run {
        ending,
        output,
        pipe_held_open: drained.is_err(),
        sandbox,
    }))
}

/// Takes the directory the shell reported at its exit as the next call's start; what to tell
/// the model when it lay outside the workspace and the start was reset.
fn follow_cwd(report: io::PipeReader, ctx: &ToolContext) -> Option<String> {
    use std::io::Read;
    let fd = OwnedFd::from(report);
    rustix::io::ioctl_fionbio(&fd, true).ok()?;
    let mut text = String::new();
    // Written before the shell exited; what is not there now never comes.
    let _ = std::fs::File::from(fd).read_to_string(&mut text);
    let dir = text.lines().next().filter(|l| !l.is_empty())?;
    match ctx.workspace.set_cwd(Path::new(dir)) {
        crate::CwdChange::Kept => None,
        crate::CwdChange::Reset(start) => Some(format!(
            "Shell cwd was reset to {} (the command ended in {dir}, outside the workspace)\n",
            start.display()
        )),
    }
}

/// What a failed command is told about its sandbox, so a refused write is not a mystery.
pub(crate) fn sandbox_note(sandbox: Sandbox) -> Option<&'static str> {
    match sandbox {
        Sandbox::ReadOnly => Some(
            "(it ran in the read-only sandbox: writing files anywhere but $TMPDIR is refused)\n",
        ),
        Sandbox::WorkspaceWrite => Some(
            "(it ran in the workspace-write sandbox: writing files outside the workspace and \
             $TMPDIR is refused, and so is writing troupe's and git's controls — the .troupe and \
             .claude folders, .mcp.json, git's config and hooks, hook scripts and their folders \
             — which only a person may change; unix sockets are closed unless settings say \
             \"sandbox\": {\"network\": \"allow\"})\n",
        ),
        Sandbox::Unsandboxed => None,
    }
}

/// Conventional name of a signal number, for messages.
pub(crate) fn signal_name(signal: i32) -> &'static str {
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
