//! `troupe plugin`: lists the plugins of the known local marketplaces (the settings'
//! `extraKnownMarketplaces`, the workspace's own marketplace file, Claude Code's installed
//! list) and writes `enabledPlugins` into the settings file Claude Code edits for a scope.

use crate::args_plugin::{PluginArgs, PluginCommand, PluginScope, PluginTarget};
use anyhow::{bail, Context, Result};
use serde_json::{Map, Value};
use std::path::{Path, PathBuf};
use troupe_plugins::marketplace::{self, Known};
use troupe_plugins::{Origin, Plugin};

/// Runs `troupe plugin …`.
pub fn run(args: &PluginArgs) -> Result<i32> {
    let workspace = crate::workspace::root(args.cwd.as_deref())?;
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let loaded = crate::settings::load(&workspace, None)?;
    let views = crate::plugins::views(&loaded);
    let known = marketplace::known(&workspace, home.as_deref(), &views);
    for warning in &known.warnings {
        eprintln!("troupe: warning: {warning}");
    }
    match &args.command {
        PluginCommand::List { plugin_dir } => {
            let enabled = marketplace::enabled(&views);
            list(&known, &enabled, plugin_dir);
            Ok(0)
        }
        PluginCommand::Install(target) | PluginCommand::Enable(target) => {
            set(&workspace, home.as_deref(), &known, target, true)
        }
        PluginCommand::Disable(target) => set(&workspace, home.as_deref(), &known, target, false),
    }
}

/// One line per plugin: `name@marketplace  enabled|disabled  N commands, N agents, N skills`.
fn list(known: &Known, enabled: &[(String, bool, bool)], dirs: &[PathBuf]) {
    let mut lines = Vec::new();
    for dir in dirs {
        match troupe_plugins::load(dir, Origin::CommandLine, None) {
            Ok(plugin) => lines.push(line(&plugin.id, "enabled (--plugin-dir)", Some(&plugin))),
            Err(why) => eprintln!("troupe: warning: {why}"),
        }
    }
    for market in &known.marketplaces {
        if let Some(problem) = &market.problem {
            eprintln!("troupe: warning: marketplace {}: {problem}", market.name);
            continue;
        }
        for entry in &market.entries {
            let Some(name) = entry.get("name").and_then(Value::as_str) else {
                continue;
            };
            let id = format!("{name}@{}", market.name);
            let state = match enabled.iter().find(|(i, ..)| *i == id) {
                Some((_, true, _)) => "enabled",
                Some((_, false, _)) => "disabled",
                None => "not installed",
            };
            let plugin = market
                .plugin_root(entry)
                .and_then(|root| troupe_plugins::load(&root, Origin::User, Some(entry)));
            match plugin {
                Ok(plugin) => lines.push(line(&id, state, Some(&plugin))),
                Err(why) => lines.push(format!("{}  ({why})", line(&id, state, None))),
            }
        }
    }
    for (id, on, _) in enabled {
        if !known_id(known, id) {
            let state = if *on { "enabled" } else { "disabled" };
            lines.push(format!(
                "{id}  {state}  (its marketplace is not a known local one)"
            ));
        }
    }
    match lines.is_empty() {
        true => println!(
            "No plugins: add a local marketplace to extraKnownMarketplaces, or use --plugin-dir."
        ),
        false => lines.iter().for_each(|l| println!("{l}")),
    }
}

fn known_id(known: &Known, id: &str) -> bool {
    marketplace::find(known, id).is_ok()
}

fn line(id: &str, state: &str, plugin: Option<&Plugin>) -> String {
    match plugin {
        Some(p) => {
            let mut parts = vec![
                count(p.commands.commands.len(), "command"),
                count(p.agents.agents.len(), "agent"),
                count(p.skills.skills.len(), "skill"),
            ];
            let hooks: usize = p
                .hooks
                .values()
                .filter_map(Value::as_array)
                .map(Vec::len)
                .sum();
            if hooks > 0 {
                parts.push(count(hooks, "hook"));
            }
            if !p.mcp_servers.is_empty() {
                parts.push(count(p.mcp_servers.len(), "MCP server"));
            }
            let version = p
                .manifest
                .version
                .as_deref()
                .map(|v| format!(" v{v}"))
                .unwrap_or_default();
            format!("{id}{version}  {state}  {}", parts.join(", "))
        }
        None => format!("{id}  {state}"),
    }
}

fn count(n: usize, what: &str) -> String {
    match n {
        1 => format!("1 {what}"),
        n => format!("{n} {what}s"),
    }
}

/// Writes `enabledPlugins[plugin] = on` into the scope's settings file.
fn set(
    workspace: &Path,
    home: Option<&Path>,
    known: &Known,
    target: &PluginTarget,
    on: bool,
) -> Result<i32> {
    if on {
        if let Err(why) = marketplace::find(known, &target.plugin) {
            bail!("{}", why.replacen("enabledPlugins ", "", 1));
        }
    }
    let file = match target.scope {
        PluginScope::User => home
            .context("no home directory (HOME) for the user settings")?
            .join(".claude/settings.json"),
        PluginScope::Project => workspace.join(".claude/settings.json"),
        PluginScope::Local => workspace.join(".claude/settings.local.json"),
    };
    let mut doc = match std::fs::read_to_string(&file) {
        Ok(text) => serde_json::from_str::<Value>(&text)
            .with_context(|| format!("{} is not JSON; fix it first", file.display()))?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Value::Object(Map::new()),
        Err(e) => return Err(e).with_context(|| format!("reading {}", file.display())),
    };
    let Value::Object(root) = &mut doc else {
        bail!("{} is not a JSON object", file.display());
    };
    let enabled = root
        .entry("enabledPlugins")
        .or_insert_with(|| Value::Object(Map::new()));
    let Value::Object(enabled) = enabled else {
        bail!("{}: enabledPlugins is not an object", file.display());
    };
    enabled.insert(target.plugin.clone(), Value::Bool(on));
    if let Some(parent) = file.parent() {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("creating {}", parent.display()))?;
    }
    let mut text = serde_json::to_string_pretty(&doc)?;
    text.push('\n');
    troupe_durable::atomic::write_atomic(&file, text.as_bytes())
        .with_context(|| format!("writing {}", file.display()))?;
    crate::settings::forget_read();
    println!(
        "{} {} in {}",
        if on { "Enabled" } else { "Disabled" },
        target.plugin,
        file.display()
    );
    Ok(0)
}
