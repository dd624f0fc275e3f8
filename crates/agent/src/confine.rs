//! Which sandbox a tool call runs in, and what to do when this machine cannot provide it.
//!
//! The level follows why the call was allowed ([`Grant::sandbox`]); a gate that let the call
//! through only because it is read-only (the plan gate) makes it read-only whatever the mode;
//! `"sandbox": "off"` in settings makes it unconfined. A call that runs programs and needs a
//! sandbox this machine lacks is not run unconfined silently: it becomes a question (refused
//! where nobody can answer) that says why.

use crate::permissions::Grant;
use serde_json::Value;
use troupe_tools::sandbox::unsupported;
use troupe_tools::{Sandbox, SandboxConfig};

/// The sandbox a call allowed by `grant` runs in.
pub fn sandbox_for(grant: Grant, gate_confines: bool, config: &SandboxConfig) -> Sandbox {
    let wanted = match gate_confines {
        true => grant.sandbox().stricter(Sandbox::ReadOnly),
        false => grant.sandbox(),
    };
    config.effective(wanted)
}

/// Why a call that runs programs cannot get `sandbox` here, or `None` when it can (or needs none):
/// no usable Landlock, no seccomp filter, or no private mount namespace where the level needs
/// one (see `troupe_tools::sandbox::unsupported`).
pub fn unconfinable(
    tool: &str,
    input: &Value,
    sandbox: Sandbox,
    config: &SandboxConfig,
) -> Option<String> {
    if sandbox == Sandbox::Unsandboxed {
        return None;
    }
    let why = unsupported(sandbox, config)?;
    let detail = match input.get("command").and_then(Value::as_str) {
        Some(command) => format!(": {:?}", shorten(command)),
        None => String::new(),
    };
    Some(format!(
        "this machine lacks what the sandbox needs ({why}), so troupe cannot confine {tool} to \
         the {sandbox} sandbox{detail}. Re-run with --permission-mode bypassPermissions, or set \
         \"sandbox\": \"off\" in .troupe/settings.json, to run commands unconfined"
    ))
}

/// What to ask about a call, and what a headless run (nobody to ask) answers instead: the
/// permission question the policy `asked`, the reason it cannot be confined, or both.
pub fn question(
    asked: Option<String>,
    unconfinable: Option<String>,
    headless_refusal: impl FnOnce() -> String,
) -> Option<(String, String)> {
    match (asked, unconfinable) {
        (None, None) => None,
        (Some(reason), None) => Some((reason, headless_refusal())),
        (None, Some(why)) => Some((why.clone(), why)),
        (Some(reason), Some(why)) => Some((
            format!("{reason}; {why}"),
            format!("{}; {why}", headless_refusal()),
        )),
    }
}

/// Cuts long commands so a message stays one readable line.
fn shorten(text: &str) -> String {
    const LIMIT: usize = 200;
    match text.char_indices().nth(LIMIT) {
        Some((end, _)) => format!("{}…", &text[..end]),
        None => text.to_string(),
    }
}
