//! Protected files: the files whose content makes git or troupe run commands or grant
//! permissions — anything under a `.git` directory (config, hooks; a worktree's `.git` file too),
//! the `.troupe` and `.claude` settings files, `.mcp.json`, and hook scripts named in settings.
//!
//! A write to one is never allowed by `acceptEdits` or by a path pattern such as `Edit(**)`: it
//! is asked about (refused in a headless run) unless an allow rule names the exact file, as in
//! `Edit(.git/config)`. `bypassPermissions` still allows it, because bypass means "everything
//! that no deny rule refuses"; the refusal text of the other modes says so.
//!
//! The path is judged where the write would really land: the same resolution the file tools use
//! (symlinks, `..` and `./` seen through), so `cfg/config` with `cfg -> .git` is caught. Settings
//! names and `.mcp.json` are protected at any depth, since a nested project is its own workspace
//! root when troupe is started there.

use super::path_glob::CallPath;
use super::{relevant, shell_quote, CallInfo, PermissionMode, Policy};
use serde_json::Value;
use std::collections::BTreeMap;
use std::ops::Not;
use std::path::{Path, PathBuf};
use troupe_settings::HookMatcher;
use troupe_tools::{Effect, Workspace};

/// Files to protect beyond the built-in ones, as absolute paths or paths relative to the
/// workspace root: the hook scripts the settings name ([`ProtectedPaths::from_hooks`]), so the
/// model cannot rewrite a script troupe will run. The agent builder puts them in the policy and
/// in the sandbox's configuration (where the kernel keeps them read-only).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProtectedPaths {
    paths: Vec<PathBuf>,
}

impl ProtectedPaths {
    /// Protects `paths` (absolute, or relative to the workspace root) besides the built-in files.
    pub fn new(paths: impl IntoIterator<Item = PathBuf>) -> ProtectedPaths {
        ProtectedPaths {
            paths: paths.into_iter().collect(),
        }
    }

    /// The extra paths, as given.
    pub fn paths(&self) -> &[PathBuf] {
        &self.paths
    }

    /// The scripts the hook commands of `hooks` name: every word of a command that is a path
    /// (has a `/`), with `$CLAUDE_PROJECT_DIR` / `$TROUPE_PROJECT_DIR` read as the workspace root
    /// (so relative to it). Programs on the `PATH` (`python3`, `jq`) are not files of the
    /// workspace and are left out.
    pub fn from_hooks(hooks: &BTreeMap<String, Vec<HookMatcher>>) -> ProtectedPaths {
        let mut paths: Vec<PathBuf> = Vec::new();
        let commands = hooks
            .values()
            .flatten()
            .flat_map(|matcher| &matcher.hooks)
            .map(|hook| hook.command.as_str());
        for command in commands {
            for word in command.split(|c: char| c.is_whitespace() || ";|&()<>`".contains(c)) {
                let word = word.replace(['"', '\''], "");
                let mut rest = word.as_str();
                let mut in_project = false;
                for var in ["CLAUDE_PROJECT_DIR", "TROUPE_PROJECT_DIR"] {
                    for spelled in [format!("${{{var}}}"), format!("${var}")] {
                        if let Some(after) = rest.strip_prefix(spelled.as_str()) {
                            rest = after;
                            in_project = true;
                        }
                    }
                }
                let path = match in_project {
                    true => rest.trim_start_matches('/'),
                    false => rest,
                };
                let looks_like_path = (in_project || path.contains('/'))
                    && !path.is_empty()
                    && !path.contains('$')
                    && !path.starts_with('-');
                let path = PathBuf::from(path);
                if looks_like_path && !paths.contains(&path) {
                    paths.push(path);
                }
            }
        }
        ProtectedPaths { paths }
    }
}

/// Why a file is protected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    /// Under `.git` (or the `.git` file of a worktree).
    Git,
    /// A `.troupe` or `.claude` settings file.
    Settings,
    /// `.mcp.json`.
    Mcp,
    /// A hook script named in settings, or a file beside it (an interpreter imports from the
    /// script's folder first).
    Hook,
    /// Anything else in a `.troupe` or `.claude` folder: troupe's own state and configuration
    /// (teams, sessions, cron, agents, commands, skills).
    Control,
}

/// A write to a protected file that no allow rule names exactly.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Hit {
    /// The protected file, relative to the workspace root (absolute when outside it).
    path: String,
    /// The protected file as an absolute path.
    absolute: String,
    kind: Kind,
}

/// The protected file `call` would write without an allow rule naming it, if any.
///
/// Only file edits are judged (`Edit` calls), and never in `bypassPermissions`.
pub(super) fn unnamed_write(policy: &Policy, call: &CallInfo<'_>, tool: &str) -> Option<Hit> {
    if tool != "Edit" || call.effect != Effect::Edit {
        return None;
    }
    match policy.mode {
        PermissionMode::BypassPermissions => return None,
        PermissionMode::Default
        | PermissionMode::AcceptEdits
        | PermissionMode::Plan
        | PermissionMode::DontAsk
        | PermissionMode::Auto => {}
    }
    let raw = call.input.get("path").and_then(Value::as_str)?;
    let root = call.workspace_root;
    let extra = extra_paths(&policy.protected, root);
    let hits: Vec<Hit> = candidates(raw, root)
        .into_iter()
        .filter_map(|(relative, absolute)| {
            let kind = kind_of(&relative, &absolute, &extra, root)?;
            Some(Hit {
                path: relative.unwrap_or_else(|| absolute.clone()),
                absolute,
                kind,
            })
        })
        .collect();
    let allow = relevant(&policy.rules.allow, tool);
    let named = |hit: &Hit| {
        allow
            .iter()
            .any(|rule| names_exactly(rule.as_str(), hit, root))
    };
    match hits.iter().all(named) {
        true => None,
        false => hits.into_iter().next(),
    }
}

/// The decision's reason: what the file is and why no mode or pattern covers it.
pub(super) fn reason(tool: &str, hit: &Hit) -> String {
    let why = match hit.kind {
        Kind::Git => {
            "git's own files: its config and hooks can make the next git command run anything"
        }
        Kind::Settings => "a settings file, which decides what troupe may do without asking",
        Kind::Mcp => "it names the MCP servers, programs troupe starts",
        Kind::Hook => {
            "a hook script named in the settings or a file in its folder, which troupe runs"
        }
        Kind::Control => {
            "this changes troupe's own configuration: its team state, sessions, agents, \
             commands and skills steer what troupe does next"
        }
    };
    format!(
        "{tool} would change `{}`, a protected file ({why}); acceptEdits and path rules such as \
         Edit(**) never allow that, only an allow rule naming the exact file",
        hit.path
    )
}

/// What a headless run says: the reason, then exactly how to allow it next time.
pub(super) fn headless(reason: &str, hit: &Hit) -> String {
    format!(
        "{reason}. To allow it, re-run with --allowedTools {} (or --permission-mode \
         bypassPermissions, which allows protected files along with everything else)",
        shell_quote(&format!("Edit({})", hit.path))
    )
}

/// The paths a write to `raw` may land on, each as (relative to the root, absolute): the
/// lexical path, and where the file tools' own resolution says it really is.
fn candidates(raw: &str, root: &Path) -> Vec<(Option<String>, String)> {
    let lexical = CallPath::resolve(raw, root);
    let mut out = vec![(lexical.relative, lexical.absolute)];
    // The same resolution write_file uses, so a symlinked directory cannot hide `.git`. A path
    // outside the root (in a directory added with --add-dir) is resolved the same way from `/`.
    let joined = root.join(raw).to_string_lossy().into_owned();
    let resolve = |base: &Path| Workspace::new(base).and_then(|ws| ws.resolve_for_write(&joined));
    let real = resolve(root)
        .or_else(|_| resolve(Path::new("/")))
        .map(|real| CallPath::resolve(&real.to_string_lossy(), root));
    if let Ok(real) = real {
        let real = (real.relative, real.absolute);
        if !out.contains(&real) {
            out.push(real);
        }
    }
    out
}

/// Why the file at `relative` / `absolute` is protected, if it is.
fn kind_of(
    relative: &Option<String>,
    absolute: &str,
    extra: &[String],
    root: &Path,
) -> Option<Kind> {
    // The folder of a hook script, unless that is the workspace root itself.
    let beside = |path: &String| {
        Path::new(path)
            .parent()
            .filter(|folder| *folder != root && root.starts_with(folder).not())
            .is_some_and(|folder| Path::new(absolute).starts_with(folder))
    };
    if extra.iter().any(|path| path == absolute) {
        return Some(Kind::Hook);
    }
    // Outside the workspace (a directory added with --add-dir), the whole path is judged.
    let relative = relative
        .as_deref()
        .unwrap_or_else(|| absolute.trim_start_matches('/'));
    let parts: Vec<&str> = relative.split('/').collect();
    let is = |part: &str, name: &str| part.eq_ignore_ascii_case(name);
    if parts.iter().any(|part| is(part, ".git")) {
        return Some(Kind::Git);
    }
    match parts.as_slice() {
        [.., dir, file]
            if (is(dir, ".troupe") || is(dir, ".claude"))
                && (is(file, "settings.json") || is(file, "settings.local.json")) =>
        {
            Some(Kind::Settings)
        }
        [.., file] if is(file, ".mcp.json") => Some(Kind::Mcp),
        _ if parts
            .iter()
            .any(|part| is(part, ".troupe") || is(part, ".claude")) =>
        {
            Some(Kind::Control)
        }
        _ if extra.iter().any(beside) => Some(Kind::Hook),
        _ => None,
    }
}

/// The extra protected paths as absolute, normalised paths (real paths where they exist).
fn extra_paths(protected: &ProtectedPaths, root: &Path) -> Vec<String> {
    protected
        .paths()
        .iter()
        .flat_map(|path| {
            let joined = root.join(path);
            let lexical = CallPath::resolve(&joined.to_string_lossy(), root).absolute;
            let real = joined
                .canonicalize()
                .ok()
                .map(|real| CallPath::resolve(&real.to_string_lossy(), root).absolute);
            std::iter::once(lexical).chain(real)
        })
        .collect()
}

/// Whether the rule text `rule` (`Edit(spec)`) names the file of `hit` exactly: a spec without
/// glob characters that spells that very file, relative to the root or as an absolute path.
fn names_exactly(rule: &str, hit: &Hit, root: &Path) -> bool {
    let Some(spec) = rule
        .split_once('(')
        .and_then(|(_, rest)| rest.strip_suffix(')'))
        .map(str::trim)
    else {
        return false;
    };
    if spec.is_empty() || spec.contains(['*', '?', '[', ']', '{', '}']) {
        return false;
    }
    let spelled = match spec.strip_prefix("//") {
        // `//abs/path` is an absolute path, as in every path rule.
        Some(absolute) => CallPath::resolve(&format!("/{absolute}"), root),
        // `/x` and `./x` are relative to the workspace root, and so is a plain `x`.
        None => CallPath::resolve(spec.trim_start_matches('/'), root),
    };
    // A `/abs/path` that spells the file's absolute path names it too, though as a pattern it
    // is read relative to the root (so in default mode it does not grant the call by itself).
    let absolute = spec.starts_with('/') && CallPath::resolve(spec, root).absolute == hit.absolute;
    absolute
        || spelled.relative.as_deref() == Some(hit.path.as_str())
        || spelled.absolute == hit.absolute
}
