//! The lead's own team tools: spawn_teammate, list_teammates, broadcast.

use super::mail::{ReadInbox, SendMessage};
use crate::render::roster_table;
use crate::runtime::Team;
use crate::shared::members_list;
use crate::spec::{Isolation, SpawnRequest, LEAD};
use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use std::sync::Arc;
use tokio::sync::Semaphore;
use troupe_tools::{parse_input, schema_of, DynTool, Effect, Tool, ToolContext, ToolOutput};

/// Input of `broadcast`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct BroadcastInput {
    /// The message for every teammate.
    pub content: String,
}

/// `broadcast{content}`: the same message to every live teammate.
pub struct Broadcast {
    team: Team,
}

impl Broadcast {
    /// The tool bound to a team.
    pub fn new(team: Team) -> Broadcast {
        Broadcast { team }
    }
}

#[async_trait]
impl Tool for Broadcast {
    fn name(&self) -> &str {
        "broadcast"
    }
    fn description(&self) -> &str {
        "Send the same message to every teammate that has not ended."
    }
    fn input_schema(&self) -> Value {
        schema_of::<BroadcastInput>()
    }

    fn built_schema(&self) -> Option<&'static str> {
        Some(crate::tool_schemas::BROADCAST)
    }
    fn effect(&self, _input: &Value) -> Effect {
        Effect::Coordinate
    }
    async fn call(&self, input: Value, ctx: &ToolContext) -> ToolOutput {
        let input: BroadcastInput = match parse_input(self.name(), input) {
            Ok(i) => i,
            Err(e) => return e,
        };
        match self.team.broadcast(&ctx.agent, &input.content).await {
            Ok(sent) if sent.is_empty() => ToolOutput::error(
                "nobody to broadcast to: the team has no live teammates; spawn some first",
            ),
            Ok(sent) => ToolOutput::ok(format!("Broadcast to {}.", sent.join(", "))),
            Err(e) => ToolOutput::error(e.to_string()),
        }
    }
}

/// Input of `list_teammates` (none).
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ListTeammatesInput {}

/// `list_teammates`: the roster with status, activity and tokens.
pub struct ListTeammates {
    team: Team,
}

impl ListTeammates {
    /// The tool bound to a team.
    pub fn new(team: Team) -> ListTeammates {
        ListTeammates { team }
    }
}

#[async_trait]
impl Tool for ListTeammates {
    fn name(&self) -> &str {
        "list_teammates"
    }
    fn description(&self) -> &str {
        "List the team's members with role, status (working, idle, shutdown, stopped, failed), what each is doing, and tokens used."
    }
    fn input_schema(&self) -> Value {
        schema_of::<ListTeammatesInput>()
    }

    fn built_schema(&self) -> Option<&'static str> {
        Some(crate::tool_schemas::LIST_TEAMMATES)
    }
    fn effect(&self, _input: &Value) -> Effect {
        Effect::ReadOnly
    }
    async fn call(&self, _input: Value, _ctx: &ToolContext) -> ToolOutput {
        match self.team.roster().await {
            Ok(roster) if roster.members.is_empty() => {
                ToolOutput::ok("The team has no teammates yet. Spawn one with spawn_teammate.")
            }
            Ok(roster) => {
                let store = self.team.shared().store.clone();
                let board = async {
                    let s: &dyn troupe_store::TeamStore = &*store;
                    s.list_tasks(&troupe_store::TaskFilter::default()).await
                }
                .await
                .map(|b| b.tasks)
                .unwrap_or_default();
                ToolOutput::ok(roster_table(&roster, &board))
            }
            Err(e) => ToolOutput::error(e.to_string()),
        }
    }
}

/// Input of `spawn_teammate`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct SpawnTeammateInput {
    /// Unique name: lowercase letters, digits, '-' and '_'.
    pub name: String,
    /// Role, e.g. "coder" or "tester".
    pub role: String,
    /// The teammate's first instructions.
    pub prompt: String,
    /// Model name, if not the lead's.
    #[serde(default)]
    pub model: Option<String>,
    /// Start in plan mode: it cannot change anything until you approve its plan (review_plan).
    #[serde(default)]
    pub require_plan: bool,
    /// "worktree": a git worktree of its own for its whole life (.troupe/worktrees/<name>, branch wt/<name>). Leave out to share the workspace.
    #[serde(default)]
    pub isolation: Option<String>,
    /// Take ready tasks from the board whenever idle (default true).
    #[serde(default = "default_auto_claim")]
    pub auto_claim: bool,
    /// An agent definition to make it from: its instructions, tools, model and permission mode apply.
    #[serde(default)]
    pub agent: Option<String>,
    /// The only tools it may use, e.g. ["read_file", "grep", "mcp__time__*"]; team tools always stay. Leave out for all.
    #[serde(default)]
    pub tools: Option<Vec<String>>,
    /// The only MCP servers it may use, e.g. ["time"]. Leave out for all.
    #[serde(default)]
    pub mcp_servers: Option<Vec<String>>,
}

fn default_auto_claim() -> bool {
    true
}

/// Spawns of one response that run at once (each takes the roster lock and a lease, and
/// starts a task or a process).
const SPAWNS_AT_ONCE: usize = 8;

/// `spawn_teammate{name, role, prompt, model?, require_plan?, auto_claim?, agent?, tools?,
/// mcp_servers?}`: starts a persistent teammate. Several calls in one response run side by side,
/// off the async workers.
pub struct SpawnTeammate {
    team: Team,
    description: String,
    /// Bounds the spawns running at once.
    turns: Arc<Semaphore>,
    /// Creating git worktrees one at a time (git locks the repository's config and index).
    worktrees: Arc<Semaphore>,
}

impl SpawnTeammate {
    /// The tool bound to a team; its description lists the team's agent definitions.
    pub fn new(team: Team) -> SpawnTeammate {
        let mut description = String::from(
            "Start a persistent teammate with its own conversation and tools. It works on the prompt, reports back to you automatically when it finishes, then idles until it receives mail. Restrict what it may use with tools and mcp_servers.",
        );
        let agents = &team.shared().config.agents.agents;
        if !agents.is_empty() {
            description.push_str("\nAgent definitions (agent):");
            for a in agents {
                description.push_str(&format!("\n- {}: {}", a.name, a.description));
            }
        }
        SpawnTeammate {
            team,
            description,
            turns: Arc::new(Semaphore::new(SPAWNS_AT_ONCE)),
            worktrees: Arc::new(Semaphore::new(1)),
        }
    }
}

#[async_trait]
impl Tool for SpawnTeammate {
    fn name(&self) -> &str {
        "spawn_teammate"
    }
    fn description(&self) -> &str {
        &self.description
    }
    fn input_schema(&self) -> Value {
        schema_of::<SpawnTeammateInput>()
    }

    fn built_schema(&self) -> Option<&'static str> {
        Some(crate::tool_schemas::SPAWN_TEAMMATE)
    }
    fn effect(&self, _input: &Value) -> Effect {
        Effect::Coordinate
    }
    fn concurrent(&self) -> bool {
        true
    }
    async fn call(&self, input: Value, ctx: &ToolContext) -> ToolOutput {
        let input: SpawnTeammateInput = match parse_input(self.name(), input) {
            Ok(i) => i,
            Err(e) => return e,
        };
        if ctx.agent != LEAD {
            return ToolOutput::error("only the lead can spawn teammates");
        }
        let isolation = match input.isolation.as_deref().unwrap_or("").parse() {
            Ok(i) => i,
            Err(e) => return ToolOutput::error(e),
        };
        let req = SpawnRequest {
            name: input.name,
            role: input.role,
            prompt: input.prompt,
            model: input.model,
            require_plan: input.require_plan,
            isolation,
            auto_claim: input.auto_claim,
            profile: troupe_protocol::MemberProfile {
                agent: input.agent.filter(|a| !a.is_empty()),
                tools: input.tools,
                mcp_servers: input.mcp_servers,
            },
        };
        // Closed never: a failed acquire would only mean running without the bound.
        let _turn = self.turns.acquire().await.ok();
        let _worktree = match isolation {
            Isolation::Worktree => self.worktrees.acquire().await.ok(),
            Isolation::Shared => None,
        };
        let team = self.team.clone();
        let spawned = team.spawn(req).await;
        match spawned {
            Ok(m) => ToolOutput::ok(format!(
                "Spawned teammate '{}' (role: {}, epoch {}). It is working now.{}{}{}",
                m.name,
                m.role,
                m.epoch,
                profile_note(&m.profile),
                if m.require_plan {
                    " It is in plan mode: it will send you a plan to review with review_plan before it can change anything."
                } else {
                    ""
                },
                match &m.worktree {
                    Some(w) => format!(" It works in its own worktree '{w}' on branch wt/{w}; merge that branch when its work is done."),
                    None => String::new(),
                }
            )),
            Err(e) => {
                let roster = self
                    .team
                    .roster().await
                    .map(|r| members_list(&r))
                    .unwrap_or_default();
                ToolOutput::error(format!("{e}. Current team: {roster}"))
            }
        }
    }
}

/// What the spawn message says about a teammate's definition and restrictions.
fn profile_note(profile: &troupe_protocol::MemberProfile) -> String {
    let mut note = String::new();
    if let Some(agent) = &profile.agent {
        note.push_str(&format!(" It is made from the agent definition '{agent}'."));
    }
    if let Some(tools) = &profile.tools {
        note.push_str(&format!(
            " Its tools are limited to {} (and its team tools).",
            tools.join(", ")
        ));
    }
    if let Some(servers) = &profile.mcp_servers {
        note.push_str(&format!(
            " Its MCP tools are limited to the servers {}.",
            servers.join(", ")
        ));
    }
    note
}

/// The lead's team tools: its own (spawn, list, broadcast), everyone's mail tools, the
/// protocol tools only the lead has, and the task board's tools.
pub fn lead_tools(team: &Team) -> Vec<DynTool> {
    let mut tools: Vec<DynTool> = vec![
        Arc::new(SpawnTeammate::new(team.clone())),
        Arc::new(ListTeammates::new(team.clone())),
        Arc::new(SendMessage::new(team.shared().clone())),
        Arc::new(Broadcast::new(team.clone())),
        Arc::new(ReadInbox::new(team.shared().clone())),
    ];
    tools.extend(crate::protocols::lead_tools(team.shared()));
    tools.extend(super::tasks::task_tools(team.shared()));
    tools
}
