//! `troupe config`: which settings files were read, in which order, and what they add up to —
//! the permission rules with the file each came from, the model, the sandbox, hooks, MCP
//! servers — plus the memory files, skills and agent definitions a session here would load.

use crate::args::ConfigArgs;
use anyhow::{Context, Result};
use serde_json::{json, Value};
use std::path::PathBuf;
use troupe_settings::{settings_files, Loaded};

/// Runs `troupe config`; exit 0, or an error naming the malformed file.
pub fn run(args: &ConfigArgs) -> Result<i32> {
    let workspace = crate::workspace::root(args.cwd.as_deref())?;
    let workspace = workspace
        .canonicalize()
        .with_context(|| format!("opening workspace {}", workspace.display()))?;
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let loaded = crate::settings::load(&workspace, args.settings.as_deref())?;
    let report = report(&workspace, home.as_deref(), &loaded);
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{}", text(&report));
    }
    Ok(0)
}

fn report(workspace: &std::path::Path, home: Option<&std::path::Path>, loaded: &Loaded) -> Value {
    let read: Vec<&str> = loaded.layers.iter().map(|l| l.origin.as_str()).collect();
    let mut files: Vec<Value> = settings_files(workspace, home)
        .into_iter()
        .map(|(scope, path)| {
            let shown = path.display().to_string();
            json!({"path": shown, "scope": format!("{scope:?}").to_lowercase(), "read": read.contains(&shown.as_str())})
        })
        .collect();
    if let Some(inline) = loaded
        .layers
        .iter()
        .find(|l| !files.iter().any(|f| f["path"] == l.origin.as_str()))
    {
        files.push(json!({"path": inline.origin, "scope": "command line", "read": true}));
    }
    // Each rule with the layer that contributed it, lowest precedence first.
    let rules = |pick: fn(&troupe_settings::Permissions) -> &Vec<String>| -> Vec<Value> {
        loaded
            .layers
            .iter()
            .flat_map(|l| {
                pick(&l.settings.permissions)
                    .iter()
                    .map(move |r| json!({"rule": r, "from": l.origin}))
            })
            .collect()
    };
    let s = &loaded.settings;
    let memory = troupe_agent::memory::load(workspace, home);
    let skills = troupe_catalog::skills::load(workspace, home);
    let agents = troupe_catalog::agents::load(workspace, home);
    json!({
        "workspace": workspace.display().to_string(),
        "files": files,
        "permissions": {
            "defaultMode": s.permissions.default_mode,
            "allow": rules(|p| &p.allow),
            "ask": rules(|p| &p.ask),
            "deny": rules(|p| &p.deny),
            "additionalDirectories": s.permissions.additional_directories,
        },
        "model": shown_model(s).0,
        "model_source": shown_model(s).1,
        "env": s.env.keys().collect::<Vec<_>>(),
        "sandbox": s.sandbox.as_ref().map(|b| format!("{:?}", b.mode).to_lowercase()),
        "hooks": s.hooks.keys().collect::<Vec<_>>(),
        "mcpServers": s.mcp_servers.keys().collect::<Vec<_>>(),
        "memory": memory.files.iter().map(|f| f.shown.clone()).collect::<Vec<_>>(),
        "skills": skills.skills.iter().map(|k| k.name.clone()).collect::<Vec<_>>(),
        "agents": agents.agents.iter().map(|a| a.name.clone()).collect::<Vec<_>>(),
        "skipped": skills.skipped.iter().map(|k| json!({"path": k.path, "why": k.why}))
            .chain(agents.skipped.iter().map(|a| json!({"path": a.path, "why": a.why})))
            .collect::<Vec<_>>(),
    })
}

/// The model a run here would use and where it comes from: the settings' `model`, else what
/// the environment resolves to (`TROUPE_MODEL`, the provider's default).
fn shown_model(s: &troupe_settings::Settings) -> (Option<String>, String) {
    if let Some(model) = &s.model {
        return (Some(model.clone()), "settings".to_string());
    }
    let env = |key: &str| troupe_tools::child_env::var(key).filter(|v| !v.is_empty());
    match troupe_model::ModelConfig::resolve(None, None, &env) {
        Ok(config) => {
            let from = match env("TROUPE_MODEL") {
                Some(_) => "TROUPE_MODEL".to_string(),
                None => format!(
                    "{}'s default; --model or \"model\" in settings changes it",
                    config.provider
                ),
            };
            (Some(config.model), from)
        }
        Err(e) => (None, format!("none resolves here: {e}")),
    }
}

fn text(r: &Value) -> String {
    let mut out = format!(
        "workspace {}\n\nsettings files (lowest precedence first):\n",
        str_of(&r["workspace"])
    );
    for f in r["files"].as_array().into_iter().flatten() {
        let mark = if f["read"] == true {
            "read   "
        } else {
            "absent "
        };
        out.push_str(&format!(
            "  {mark} {:<8} {}\n",
            str_of(&f["scope"]),
            str_of(&f["path"])
        ));
    }
    let p = &r["permissions"];
    out.push_str(&format!(
        "\npermissions (deny beats ask beats allow)\n  defaultMode: {}\n",
        p["defaultMode"].as_str().unwrap_or("default")
    ));
    for kind in ["deny", "ask", "allow"] {
        for rule in p[kind].as_array().into_iter().flatten() {
            out.push_str(&format!(
                "  {kind:<5} {:<30} from {}\n",
                str_of(&rule["rule"]),
                str_of(&rule["from"])
            ));
        }
    }
    match r["model"].as_str() {
        Some(model) => out.push_str(&format!(
            "model: {model} ({})\n",
            str_of(&r["model_source"])
        )),
        None => out.push_str(&format!("model: {}\n", str_of(&r["model_source"]))),
    }
    if let Some(v) = r["sandbox"].as_str() {
        out.push_str(&format!("sandbox: {v}\n"));
    }
    for (label, key) in [
        ("env", "env"),
        ("hooks", "hooks"),
        ("MCP servers", "mcpServers"),
        ("memory files", "memory"),
        ("skills", "skills"),
        ("agent definitions", "agents"),
    ] {
        let items: Vec<&str> = r[key]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        if !items.is_empty() {
            out.push_str(&format!("{label}: {}\n", items.join(", ")));
        }
    }
    for s in r["skipped"].as_array().into_iter().flatten() {
        out.push_str(&format!(
            "skipped {}: {}\n",
            str_of(&s["path"]),
            str_of(&s["why"])
        ));
    }
    out
}

fn str_of(v: &Value) -> &str {
    v.as_str().unwrap_or("")
}
