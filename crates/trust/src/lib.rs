//! Workspace trust: what a folder's own settings set beyond the allow-list of what needs no
//! trust (`trust/allow.rs`: its hooks, MCP servers, `statusLine`, environment, team store,
//! permission-loosening settings, unknown keys…), whether the person trusts it, and the settings
//! with all of that taken out when they do not.
//!
//! The decision is made once per process, before anything the workspace defines runs, and
//! everything after it (the lead, in-process teammates, subagents) is built from the settings it
//! leaves. Teammate processes follow their lead through [`DECISION_VAR`].

mod allow;
mod definitions;
mod rules;
mod store;

pub use definitions::{definitions, Definitions};
pub use store::{Stored, TrustStore};

use anyhow::Result;
use std::io::{BufRead, IsTerminal, Write};
use std::path::Path;
use troupe_settings::{Loaded, Scope, Settings};
use troupe_term::sanitize::{errln, terminal};

/// The exit code of a headless run refused because the workspace is not trusted and trust is
/// required (`TROUPE_REQUIRE_TRUST=1` or the user setting `requireTrust`).
pub const EXIT_UNTRUSTED: i32 = 3;

/// The lead's decision, passed to the teammate processes it starts: `untrusted`, or
/// `trusted:<hash>` (honoured only while the definitions still hash the same).
pub const DECISION_VAR: &str = "TROUPE_WORKSPACE_TRUST";

/// Set to `1` (or `true`): a headless run refuses a workspace that is not trusted.
pub const REQUIRE_VAR: &str = "TROUPE_REQUIRE_TRUST";

/// Who answers the trust question.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Asking {
    /// The REPL: a person at a terminal is asked (without a terminal it decides as a script).
    Person,
    /// `-p`, the Agent SDK, `troupe teammate`, `troupe mcp list`: nobody is asked.
    Script,
}

/// A headless run refused: the workspace is not trusted and trust is required.
#[derive(Debug)]
pub struct Refused {
    message: String,
}

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Refused {}

/// Decides whether `workspace`'s own definitions run, and leaves in `loaded` only what may
/// apply. Returns whether `.mcp.json` may be read (the other definitions are gone from
/// `loaded` when it may not). `strict_mcp` (`--strict-mcp-config`) leaves MCP definitions out.
pub fn apply(
    workspace: &Path,
    loaded: &mut Loaded,
    strict_mcp: bool,
    asking: Asking,
) -> Result<bool> {
    let defs = definitions(workspace, loaded, strict_mcp);
    let trusted = decide(workspace, loaded, &defs, asking)?;
    if defs.is_empty() {
        // Nothing to decide: an inherited decision stays as it was for whatever starts next.
        return Ok(true);
    }
    // Teammate processes started from here follow this decision.
    let value = match trusted {
        true => format!("trusted:{}", defs.hash),
        false => "untrusted".to_string(),
    };
    troupe_tools::child_env::set_overlay([(DECISION_VAR.to_string(), value)]);
    if !trusted {
        drop_workspace_definitions(loaded);
        errln!(
            "troupe: note: this folder is not trusted: its own {} are not used ({}). `troupe trust` shows them; `troupe trust --yes` trusts the folder.",
            defs.kinds(),
            workspace.display()
        );
    }
    Ok(trusted)
}

/// Whether the workspace's definitions run.
fn decide(workspace: &Path, loaded: &Loaded, defs: &Definitions, asking: Asking) -> Result<bool> {
    if defs.is_empty() {
        return Ok(true);
    }
    // A teammate process, or a troupe started by a command of a session here: the lead decided.
    match troupe_tools::child_env::var(DECISION_VAR).as_deref() {
        Some("untrusted") => return Ok(false),
        Some(given) if given.strip_prefix("trusted:") == Some(defs.hash.as_str()) => {
            return Ok(true)
        }
        _ => {}
    }
    let store = TrustStore::open();
    let (stored, writable) = match &store {
        Some(store) => match store.lookup(workspace) {
            Ok(stored) => (stored, true),
            Err(problem) => {
                errln!("troupe: warning: {problem:#}; nothing in it counts as trust, and no answer is remembered until the file is fixed or removed");
                (Stored::Unknown, false)
            }
        },
        None => {
            eprintln!("troupe: warning: no home directory (HOME, XDG_CONFIG_HOME) to remember trust in; no answer counts as trust or is remembered");
            (Stored::Unknown, false)
        }
    };
    let person = asking == Asking::Person
        && std::io::stdin().is_terminal()
        && std::io::stderr().is_terminal();
    let refuse = |why: &str| -> anyhow::Error {
        Refused {
            message: format!(
                "this folder is not trusted ({why}) and trust is required ({REQUIRE_VAR} or the user setting `requireTrust`); it would run or apply:\n{}\nTrust it with `troupe trust --yes` (after reading the list), or run troupe there once and answer the question.",
                defs.listing()
            ),
        }
        .into()
    };
    match &stored {
        Stored::Answer { trusted, hash } if *hash == defs.hash => {
            if !trusted && !person && require_trust(workspace, loaded) {
                return Err(refuse("the answer was no"));
            }
            return Ok(*trusted);
        }
        _ => {}
    }
    let changed = matches!(stored, Stored::Answer { .. });
    if !person {
        if require_trust(workspace, loaded) {
            return Err(refuse(match changed {
                true => "what it defines changed since the answer",
                false => "never answered",
            }));
        }
        // Claude Code's -p: scripts and the Agent SDK run the workspace as it is.
        return Ok(true);
    }
    let yes = ask(workspace, defs, changed);
    if writable {
        if let Some(store) = &store {
            if let Err(e) = store.record(workspace, yes, &defs.hash) {
                eprintln!("troupe: warning: could not remember the answer: {e:#}");
            }
        }
    }
    Ok(yes)
}

/// Asks the person on the terminal; anything but yes (or the end of input) is no.
fn ask(workspace: &Path, defs: &Definitions, changed: bool) -> bool {
    let mut err = std::io::stderr();
    let why = match changed {
        true => "What this folder defines changed since you last answered.\n",
        false => "",
    };
    let _ = write!(
        err,
        "\n{why}Do you trust the files in this folder?\n  {}\nIt would run or apply:\n{}\nOnly trust a folder whose files you know. Trust it and run these? [y/N] ",
        terminal(&workspace.display().to_string()),
        terminal(&defs.listing())
    );
    let _ = err.flush();
    let mut line = String::new();
    let yes = match std::io::stdin().lock().read_line(&mut line) {
        Ok(0) | Err(_) => false,
        Ok(_) => matches!(line.trim().to_ascii_lowercase().as_str(), "y" | "yes"),
    };
    let _ = writeln!(
        err,
        "{}",
        match yes {
            true => "Trusted: remembered until what it defines changes.\n",
            false =>
                "Not trusted: troupe goes on without them (`troupe trust --yes` changes it).\n",
        }
    );
    yes
}

/// Whether an untrusted workspace stops a headless run: `TROUPE_REQUIRE_TRUST=1`, or
/// `requireTrust: true` in the user's own settings or `--settings` (never the project's).
fn require_trust(workspace: &Path, loaded: &Loaded) -> bool {
    if let Ok(value) = std::env::var(REQUIRE_VAR) {
        let value = value.trim().to_ascii_lowercase();
        if !(value.is_empty() || value == "0" || value == "false") {
            return true;
        }
    }
    let says = |s: &Settings| s.other.get("requireTrust") == Some(&serde_json::Value::Bool(true));
    let mine = |scope: Scope| matches!(scope, Scope::User | Scope::CommandLine);
    if loaded
        .layers
        .iter()
        .any(|l| mine(l.scope) && says(&l.settings))
    {
        return true;
    }
    // `--setting-sources` may have left the user's files out: read them anyway.
    let home = std::env::var_os("HOME").map(std::path::PathBuf::from);
    match troupe_settings::load_sources(workspace, home.as_deref(), None, &[Scope::User]) {
        Ok(user) => says(&user.settings),
        // A user settings file that does not load cannot say "not required"... nor "required";
        // the run has already failed on it unless --setting-sources left it out.
        Err(_) => true,
    }
}

/// Takes the workspace's own definitions out of its project and local layers and merges the
/// layers again: only what the allow-list names (rules that ask or deny, the model, pricing…)
/// still applies from them.
fn drop_workspace_definitions(loaded: &mut Loaded) {
    let plane = rules::ControlPlane::of(loaded);
    let mut merged = Settings::default();
    for layer in &mut loaded.layers {
        if matches!(layer.scope, Scope::Project | Scope::Local) {
            definitions::strip(&mut layer.settings, &plane);
        }
        merged.merge(&layer.settings);
    }
    loaded.settings = merged;
}
