//! `apiKeyHelper`: a program whose standard output is the Anthropic API key, run once at start
//! as Claude Code runs it (`sh -c`, in the workspace), bounded by a timeout. Only settings the
//! person stands behind reach here: the user's own and `--settings`, or a project's after the
//! workspace is trusted (trust takes the key out of an untrusted folder's settings). As in
//! Claude Code, a key or token in the environment comes first and the helper is not run. The
//! key it prints is held in memory (`troupe_tools::secrets`), never put in the environment:
//! no command, hook or server sees it; teammate processes get it on their launch pipe.

use anyhow::{bail, Context, Result};
use std::path::Path;
use std::time::Duration;
use tokio::io::AsyncReadExt;
use troupe_settings::Settings;
use troupe_tools::process::{ChildIo, LiveCall, MarkedCommand};
use troupe_tools::{child_env, secrets};

/// The settings key.
const KEY: &str = "apiKeyHelper";

/// The longest the helper may take.
const TIMEOUT: Duration = Duration::from_secs(30);

/// Runs the settings' `apiKeyHelper`, when there is one and the environment names no Anthropic
/// key or token, and holds what it prints as `ANTHROPIC_API_KEY`. True when it did. A helper
/// that fails, times out or prints nothing is an error naming it.
pub fn apply(settings: &Settings, workspace: &Path, openai: bool) -> Result<bool> {
    let Some(helper) = settings
        .other
        .get(KEY)
        .and_then(serde_json::Value::as_str)
        .map(str::trim)
        .filter(|h| !h.is_empty())
    else {
        return Ok(false);
    };
    let set = |name: &str| child_env::var(name).is_some_and(|v| !v.trim().is_empty());
    if openai || set("ANTHROPIC_API_KEY") || set("ANTHROPIC_AUTH_TOKEN") {
        return Ok(false);
    }
    let key = std::thread::scope(|scope| {
        scope
            .spawn(|| {
                tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .context("starting a runtime for apiKeyHelper")?
                    .block_on(run(helper, workspace))
            })
            .join()
            .unwrap_or_else(|_| bail!("settings {KEY}: running `{helper}` failed"))
    })?;
    secrets::hold("ANTHROPIC_API_KEY", key);
    Ok(true)
}

/// `sh -c helper` in `workspace` with troupe's environment without its credentials; its
/// trimmed standard output.
async fn run(helper: &str, workspace: &Path) -> Result<String> {
    let live = LiveCall::start().map_err(anyhow::Error::msg)?;
    let mut marked = MarkedCommand::new("sh", &live);
    let cmd = marked.command();
    child_env::scrub(cmd);
    cmd.arg("-c").arg(helper).current_dir(workspace);
    marked.stdout(ChildIo::Piped).stderr(ChildIo::Piped);
    let mut child = marked
        .spawn()
        .with_context(|| format!("settings {KEY}: starting `{helper}`"))?;
    let mut live = live;
    if let Some(pgid) = child.id().and_then(|id| libc::pid_t::try_from(id).ok()) {
        live.set_group(pgid);
    }
    let (mut out, mut err) = (child.stdout.take(), child.stderr.take());
    let read = async {
        let (mut stdout, mut stderr) = (Vec::new(), Vec::new());
        // Both at once: a helper writing much to one must not block on the other.
        tokio::join!(
            async {
                if let Some(pipe) = out.as_mut() {
                    let _ = pipe.read_to_end(&mut stdout).await;
                }
            },
            async {
                if let Some(pipe) = err.as_mut() {
                    let _ = pipe.read_to_end(&mut stderr).await;
                }
            }
        );
        let status = child.wait().await;
        (status, stdout, stderr)
    };
    let finished = tokio::time::timeout(TIMEOUT, read).await;
    // Whatever happened, nothing it started outlives it.
    live.kill_group();
    let ended = tokio::task::spawn_blocking(move || live.end()).await;
    if let Err(e) = ended {
        tracing::debug!(error = %e, "ending apiKeyHelper's processes");
    }
    let Ok((status, stdout, stderr)) = finished else {
        bail!(
            "settings {KEY}: `{helper}` did not finish within {} s",
            TIMEOUT.as_secs()
        );
    };
    let status = status.with_context(|| format!("settings {KEY}: waiting for `{helper}`"))?;
    let stderr = String::from_utf8_lossy(&stderr);
    if !status.success() {
        bail!(
            "settings {KEY}: `{helper}` failed ({status}){}",
            match stderr.trim() {
                "" => String::new(),
                text => format!(": {text}"),
            }
        );
    }
    let key = String::from_utf8(stdout)
        .with_context(|| format!("settings {KEY}: `{helper}` printed no text"))?
        .trim()
        .to_string();
    if key.is_empty() {
        bail!("settings {KEY}: `{helper}` printed nothing (it must print the API key)");
    }
    Ok(key)
}
