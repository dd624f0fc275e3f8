//! `troupe doctor [--json]`: is this machine and workspace ready? The settings files parse, the
//! model answers a one-token request, the sandbox confines a child, and the team store is
//! writable (or its NATS server reachable). Each check is one line with ✓ or ✗, and a fix for
//! each ✗; exit 0 when all pass, 1 otherwise.

use crate::args::DoctorArgs;
use crate::render::sanitize::{json_line, terminal};
use anyhow::{Context, Result};
use serde_json::{json, Value};
use std::path::Path;
use troupe_model::{ConfigError, ModelConfig, ModelError, ModelRequest, Provider};
use troupe_protocol::ChatMessage;

/// One check's outcome.
struct Check {
    /// What was checked.
    name: &'static str,
    /// Whether it passed.
    ok: bool,
    /// What was found.
    detail: String,
    /// What to do about a failure.
    fix: Option<String>,
    /// What passed with a remark (settings troupe does not do as written), one line each.
    warnings: Vec<String>,
}

impl Check {
    fn pass(name: &'static str, detail: impl Into<String>) -> Check {
        Check {
            name,
            ok: true,
            detail: detail.into(),
            fix: None,
            warnings: Vec::new(),
        }
    }

    fn fail(name: &'static str, detail: impl Into<String>, fix: impl Into<String>) -> Check {
        Check {
            name,
            ok: false,
            detail: detail.into(),
            fix: Some(fix.into()),
            warnings: Vec::new(),
        }
    }
}

/// Runs `troupe doctor`; returns the exit code.
pub fn run(args: &DoctorArgs) -> Result<i32> {
    let workspace = crate::workspace::root(args.cwd.as_deref())?;
    let workspace = workspace
        .canonicalize()
        .with_context(|| format!("workspace {} is not accessible", workspace.display()))?;
    let (config_check, settings) = configuration(&workspace);
    let mut checks = vec![config_check];
    if let Some(settings) = &settings {
        // As a run would: the settings' env may name the model's endpoint.
        crate::settings::apply_env(settings);
    }
    let default = troupe_settings::Settings::default();
    let settings = settings.as_ref().unwrap_or(&default);
    checks.push(model(args, settings));
    checks.push(match super::sandbox::summary(settings) {
        Ok((true, detail)) => Check::pass("sandbox", detail),
        Ok((false, detail)) => Check::fail(
            "sandbox",
            detail,
            "`troupe sandbox check` shows what fails; Landlock needs Linux 5.13 or newer with \
             `landlock` in the kernel's LSM list. Until then commands that need the sandbox are \
             asked about (REPL) or refused (headless)",
        ),
        Err(e) => Check::fail(
            "sandbox",
            format!("{e:#}"),
            "`troupe sandbox check` shows the details",
        ),
    });
    checks.push(crate::block_on(team_store(&workspace, settings))?);
    let ok = checks.iter().all(|c| c.ok);
    if args.json {
        let list: Vec<Value> = checks
            .iter()
            .map(|c| {
                json!({"check": c.name, "ok": c.ok, "detail": c.detail, "fix": c.fix, "warnings": c.warnings})
            })
            .collect();
        let value = json!({"ok": ok, "workspace": workspace, "checks": list});
        println!("{}", json_line(&serde_json::to_string_pretty(&value)?));
    } else {
        print!("{}", text(&checks, &workspace));
    }
    Ok(if ok { 0 } else { 1 })
}

/// The report for people: one line a check, the fix under each failure.
fn text(checks: &[Check], workspace: &Path) -> String {
    let width = checks.iter().map(|c| c.name.len()).max().unwrap_or(0);
    let mut out = format!("troupe doctor — {}\n", workspace.display());
    for c in checks {
        let mark = if c.ok { "✓" } else { "✗" };
        out.push_str(&format!(
            "{mark} {:<width$}  {}\n",
            c.name,
            terminal(&c.detail)
        ));
        if let Some(fix) = &c.fix {
            out.push_str(&format!("  {:<width$}  fix: {}\n", "", terminal(fix)));
        }
        for warning in &c.warnings {
            out.push_str(&format!(
                "  {:<width$}  warning: {}\n",
                "",
                terminal(warning)
            ));
        }
    }
    let failed = checks.iter().filter(|c| !c.ok).count();
    out.push_str(&match failed {
        0 => "all checks passed\n".to_string(),
        n => format!("{n} check{} failed\n", if n == 1 { "" } else { "s" }),
    });
    out
}

/// Every settings file parses; the merged settings when they do. What they say that troupe
/// does not do as written are the check's warnings (it passes with them).
fn configuration(workspace: &Path) -> (Check, Option<troupe_settings::Settings>) {
    match crate::settings::load(workspace, None) {
        Ok(loaded) => {
            let files: Vec<&str> = loaded.layers.iter().map(|l| l.origin.as_str()).collect();
            let warnings = crate::settings_warnings::warnings(&loaded);
            let noted = match warnings.len() {
                0 => String::new(),
                1 => " (1 warning)".to_string(),
                n => format!(" ({n} warnings)"),
            };
            let detail = match files.as_slice() {
                [] => "no settings files (the defaults apply)".to_string(),
                files => format!("settings parse: {}{noted}", files.join(", ")),
            };
            let mut check = Check::pass("configuration", detail);
            check.warnings = warnings;
            (check, Some(loaded.settings))
        }
        Err(e) => (
            Check::fail(
                "configuration",
                format!("{e:#}"),
                "correct the file named above (the error gives the line), or move it aside",
            ),
            None,
        ),
    }
}

/// The model configuration resolves and the model answers a one-token request.
fn model(args: &DoctorArgs, settings: &troupe_settings::Settings) -> Check {
    let provider = match args.provider.as_deref().map(str::parse::<Provider>) {
        None => None,
        Some(Ok(p)) => Some(p),
        Some(Err(e)) => {
            return Check::fail(
                "model",
                e.to_string(),
                "use --provider anthropic or --provider openai",
            )
        }
    };
    let env = |key: &str| troupe_tools::child_env::var(key).filter(|v| !v.is_empty());
    let name = args.model.clone().or_else(|| settings.model.clone());
    let mut config = match ModelConfig::resolve(provider, name, &env) {
        Ok(config) => config,
        Err(e) => {
            let fix = match &e {
                ConfigError::BadBaseUrl { .. } => "write the URL with its scheme, as shown".to_string(),
                ConfigError::UnknownProvider(_) => "use anthropic or openai".to_string(),
                ConfigError::BadCustomHeader(_) => format!("write each line of {} as `Name: value`", troupe_model::CUSTOM_HEADERS_VAR),
                ConfigError::BadToolChoice(_) => format!("unset {} or set it to auto or required", troupe_model::tool_choice::TOOL_CHOICE_VAR),
                ConfigError::NoProvider | ConfigError::MissingKey { .. } => "export ANTHROPIC_API_KEY=…, or OPENAI_BASE_URL=http://host:port/v1 for a local server (README: \"Try it without an API key\")".to_string(),
            };
            return Check::fail("model", e.to_string(), fix);
        }
    };
    // One attempt: a doctor reports what is wrong rather than waiting it out.
    config.retry.max_attempts = 1;
    let note = troupe_model::ambiguity_note(provider, &env)
        .map(|n| format!(" (note: {n})"))
        .unwrap_or_default();
    let what = format!(
        "{} {} at {}",
        config.provider, config.model, config.base_url
    );
    match ping(&config) {
        Ok(()) => Check::pass("model", format!("{what} answered{note}")),
        Err(e) => {
            let url_var = match config.provider {
                Provider::Anthropic => "ANTHROPIC_BASE_URL",
                Provider::OpenAi => "OPENAI_BASE_URL",
            };
            let fix = match &e {
                ModelError::Auth { key_var, .. } => format!("put a valid API key in {key_var}"),
                ModelError::ConnectionRefused { .. } | ModelError::Connect { .. } => format!(
                    "start the model server at {}, or point {url_var} at one that runs",
                    config.base_url
                ),
                ModelError::Http { status: 404, .. } => format!(
                    "check the model name (--model, TROUPE_MODEL) and {url_var} (an OpenAI-compatible one ends in /v1)"
                ),
                _ => format!("check {url_var}, the key and the model name"),
            };
            Check::fail("model", format!("{what}: {e}{note}"), fix)
        }
    }
}

/// Sends the smallest request there is: one word in, one token out.
fn ping(config: &ModelConfig) -> Result<(), ModelError> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| ModelError::Client {
            message: format!("starting the async runtime: {e}"),
        })?;
    let model = config.build();
    let request = ModelRequest {
        model: config.model.clone(),
        system: "".into(),
        messages: vec![ChatMessage::user_text("ping")],
        tools: Vec::new().into(),
        max_tokens: 1,
        agent: "doctor".to_string(),
        cache: None,
    };
    runtime
        .block_on(model.stream(&request, &mut |_| {}))
        .map(|_| ())
}

/// The team store: `.troupe/` writable here, or the NATS server the settings name reachable.
async fn team_store(workspace: &Path, settings: &troupe_settings::Settings) -> Check {
    let troupe_dir = workspace.join(".troupe");
    let flag = std::env::var(crate::store::STORE_VAR).ok();
    let choice = match crate::store::choose(flag.as_deref(), Some(settings)) {
        Ok(choice) => choice,
        Err(e) => return Check::fail(
            "team store",
            format!("{e:#}"),
            "set \"store\" to \"file\" or nats://host:4222 (TROUPE_STORE or --store overrides it)",
        ),
    };
    match choice {
        crate::store::StoreChoice::File => {
            // Where troupe would write: `.troupe/`, or the workspace that would hold it.
            let dir = if troupe_dir.is_dir() {
                &troupe_dir
            } else {
                workspace
            };
            let probe = dir.join(format!(".troupe-doctor-{}", std::process::id()));
            let written = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&probe)
                .and_then(|_| std::fs::remove_file(&probe));
            match written {
                Ok(()) => Check::pass(
                    "team store",
                    format!("{} is writable", troupe_dir.display()),
                ),
                Err(e) => Check::fail(
                    "team store",
                    format!("cannot write in {}: {e}", dir.display()),
                    format!(
                        "make {} writable for you (chmod u+w), or run troupe in a workspace you own",
                        dir.display()
                    ),
                ),
            }
        }
        crate::store::StoreChoice::Nats(_, url) => {
            match crate::nats::inspect(&url, "default").await {
                Ok(report) => Check::pass(
                    "team store",
                    format!("NATS at {} is reachable: {report}", url.display()),
                ),
                Err(e) => Check::fail(
                    "team store",
                    e.to_string(),
                    format!(
                        "start the NATS server (with JetStream: nats-server -js) at {}, or set \"store\": \"file\"",
                        url.display()
                    ),
                ),
            }
        }
    }
}
