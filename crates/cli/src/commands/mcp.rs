//! `troupe mcp list`: every configured server, started now and checked (each waits at most its
//! start-up timeout), with its status, transport, tool count and last error. The commands that
//! edit the configuration are [`super::mcp_edit`]'s.

use crate::args::{McpArgs, McpCommand};
use crate::render::sanitize::{json_line, terminal};
use anyhow::{Context, Result};
use serde_json::json;
use std::time::Duration;
use troupe_mcp::McpManager;

/// Runs `troupe mcp …` and returns the exit code.
pub fn run(args: &McpArgs) -> Result<i32> {
    match &args.command {
        McpCommand::List {
            json,
            cwd,
            settings,
            mcp,
        } => {
            let workspace = crate::workspace::root(cwd.as_deref())?;
            let workspace = workspace
                .canonicalize()
                .with_context(|| format!("workspace {} is not accessible", workspace.display()))?;
            let mut loaded = crate::settings::load(&workspace, settings.as_deref())?;
            // Starting the servers runs the workspace's commands: the same decision as `-p`.
            let workspace_servers = crate::trust::apply(
                &workspace,
                &mut loaded,
                mcp.strict_mcp_config,
                crate::trust::Asking::Script,
            )?;
            crate::settings::apply_env(&loaded.settings);
            crate::settings::apply_command_env(&loaded);
            let config = crate::mcp::config(&workspace, &loaded, mcp, workspace_servers)?;
            let options = crate::mcp::options(&workspace, &loaded.settings);
            let limit = options.startup_timeout + Duration::from_secs(1);
            let manager = McpManager::new(&config, options);
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .context("starting the async runtime")?;
            manager.start(runtime.handle());
            runtime.block_on(manager.settle(limit));
            let statuses = manager.statuses();
            // Written even to a closed pipe without a panic: the servers still end below.
            let text = match json {
                true => format!(
                    "{}\n",
                    json_line(
                        &json!({
                            "servers": statuses.iter().map(crate::mcp::status_json).collect::<Vec<_>>(),
                            "problems": manager.problems(),
                        })
                        .to_string()
                    )
                ),
                false => terminal(&crate::mcp::status_table(&statuses, manager.problems()))
                    .into_owned(),
            };
            crate::render::sanitize::write_stdout(&text);
            manager.shutdown();
            drop(runtime);
            troupe_tools::process::end_all();
            Ok(0)
        }
        McpCommand::Add {
            name,
            command_or_url,
            args,
            transport,
            env,
            header,
            scope,
            cwd,
        } => super::mcp_edit::add(super::mcp_edit::Added {
            name,
            command_or_url,
            args,
            transport,
            env,
            header,
            scope: *scope,
            cwd: cwd.as_ref(),
        }),
        McpCommand::AddJson {
            name,
            json,
            scope,
            cwd,
        } => super::mcp_edit::add_json(name, json, *scope, cwd.as_ref()),
        McpCommand::Get { name, json, cwd } => super::mcp_edit::get(name, *json, cwd.as_ref()),
        McpCommand::Remove { name, scope, cwd } => {
            super::mcp_edit::remove(name, *scope, cwd.as_ref())
        }
    }
}
