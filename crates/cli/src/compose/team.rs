//! The team side of a run, assembled once for the lead and a teammate process alike: the
//! workspace's hooks on the team's store, the recipe every agent of the team is built from,
//! the team's configuration and the open [`Team`].

use super::Resolved;
use anyhow::{Context, Result};
use std::sync::Arc;
use troupe_agent::Extension;
use troupe_store::SharedStore;
use troupe_team::{NoticeSink, Team, TeamConfig, TeammateMode};

/// What differs between the lead's team side and a teammate process's.
pub struct TeamSide {
    /// The team's name.
    pub name: String,
    /// How the team's teammates run (a teammate process starts none: in-process).
    pub mode: TeammateMode,
    /// What a teammate process is resolved from (`Null` for a process that starts none).
    pub process_options: serde_json::Value,
    /// The scheduling tools (the lead's own scheduler's, or a teammate's).
    pub cron: Arc<dyn Extension>,
    /// Where the team's notices go.
    pub notices: NoticeSink,
}

impl Resolved {
    /// Opens the team `side` names on `store`: its hooks, its recipe (the team's
    /// `config.recipe`), the team itself; the workspace keeps `.troupe` out of git.
    pub async fn open_team(&self, store: SharedStore, side: TeamSide) -> Result<Team> {
        let hooks = crate::hooks::extension(
            crate::hook_services::of(&self.model, &self.client, &self.mcp, &self.workspace),
            &self.settings,
            &self.workspace,
            self.policy.mode,
            store.clone(),
        )
        .await?;
        let config = TeamConfig {
            team: side.name.clone(),
            workspace: self.workspace.clone(),
            troupe_dir: self.troupe_dir.clone(),
            recipe: self.recipe(hooks, side.cron),
            mode: side.mode,
            exe: None,
            agents: self.agents.clone(),
            mcp_servers: self.mcp.names().into_iter().map(str::to_string).collect(),
            process_options: side.process_options,
        };
        crate::workspace::exclude_troupe_dir(&self.workspace);
        Team::open(config, store, side.notices)
            .await
            .with_context(|| format!("opening team '{}'", side.name))
    }
}
