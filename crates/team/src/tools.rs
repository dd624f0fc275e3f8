//! The team tools: the lead's (spawn_teammate, list_teammates, broadcast) and everyone's
//! (send_message, read_inbox).

use crate::render::roster_table;
use crate::runtime::{members_list, SpawnRequest, Team, TeamShared, LEAD};
use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use std::sync::Arc;
use troupe_protocol::MailKind;
use troupe_tools::{parse_input, schema_of, Effect, Tool, ToolContext, ToolOutput};

pub use troupe_tools::summarize_input as summarize;

/// Input of `send_message`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct SendMessageInput {
    /// Recipient: a teammate's name, or "lead".
    pub to: String,
    /// The message.
    pub content: String,
}

/// `send_message{to, content}`: mail to one member; unknown names are an error listing the members.
pub struct SendMessage {
    shared: Arc<TeamShared>,
}

impl SendMessage {
    /// The tool bound to a team.
    pub fn new(shared: Arc<TeamShared>) -> SendMessage {
        SendMessage { shared }
    }
}

#[async_trait]
impl Tool for SendMessage {
    fn name(&self) -> &str {
        "send_message"
    }
    fn description(&self) -> &str {
        "Send a message to one teammate (by name) or to \"lead\". It is delivered to their inbox and wakes them if idle."
    }
    fn input_schema(&self) -> Value {
        schema_of::<SendMessageInput>()
    }
    fn effect(&self, _input: &Value) -> Effect {
        Effect::Coordinate
    }
    async fn call(&self, input: Value, ctx: &ToolContext) -> ToolOutput {
        let input: SendMessageInput = match parse_input(self.name(), input) {
            Ok(i) => i,
            Err(e) => return e,
        };
        if input.to == ctx.agent {
            return ToolOutput::error("you cannot send a message to yourself");
        }
        match self.shared.send(troupe_protocol::Envelope::new(
            MailKind::Message,
            &ctx.agent,
            &input.to,
            &input.content,
            troupe_agent::transcript::now_ms(),
        )) {
            Ok(env) => ToolOutput::ok(format!("Sent to {} (id {}).", input.to, env.id)),
            Err(e) => ToolOutput::error(e.to_string()),
        }
    }
}

/// Input of `read_inbox` (none).
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ReadInboxInput {}

/// `read_inbox`: shows unread mail. Mail is also delivered automatically before each step, so
/// this usually finds nothing new; it never consumes, so nothing can be lost through it.
pub struct ReadInbox {
    shared: Arc<TeamShared>,
}

impl ReadInbox {
    /// The tool bound to a team.
    pub fn new(shared: Arc<TeamShared>) -> ReadInbox {
        ReadInbox { shared }
    }
}

#[async_trait]
impl Tool for ReadInbox {
    fn name(&self) -> &str {
        "read_inbox"
    }
    fn description(&self) -> &str {
        "Check your inbox for unread messages. New mail is also delivered to you automatically, as <inbox> blocks, before each of your steps."
    }
    fn input_schema(&self) -> Value {
        schema_of::<ReadInboxInput>()
    }
    fn effect(&self, _input: &Value) -> Effect {
        Effect::Coordinate
    }
    async fn call(&self, _input: Value, ctx: &ToolContext) -> ToolOutput {
        match self.shared.store.peek(&ctx.agent) {
            Ok(batch) if batch.messages.is_empty() => ToolOutput::ok(
                "No unread messages. Everything sent to you so far is already in this conversation as <inbox> blocks.",
            ),
            Ok(batch) => {
                let text: Vec<String> = batch.messages.iter().map(crate::inbox::render_mail).collect();
                ToolOutput::ok(format!(
                    "{} unread (they will also be delivered to you before your next step):\n{}",
                    batch.messages.len(),
                    text.join("\n")
                ))
            }
            Err(e) => ToolOutput::error(format!("could not read the inbox: {e}")),
        }
    }
}

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
    fn effect(&self, _input: &Value) -> Effect {
        Effect::Coordinate
    }
    async fn call(&self, input: Value, ctx: &ToolContext) -> ToolOutput {
        let input: BroadcastInput = match parse_input(self.name(), input) {
            Ok(i) => i,
            Err(e) => return e,
        };
        match self.team.broadcast(&ctx.agent, &input.content) {
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
    fn effect(&self, _input: &Value) -> Effect {
        Effect::ReadOnly
    }
    async fn call(&self, _input: Value, _ctx: &ToolContext) -> ToolOutput {
        match self.team.roster() {
            Ok(roster) if roster.members.is_empty() => {
                ToolOutput::ok("The team has no teammates yet. Spawn one with spawn_teammate.")
            }
            Ok(roster) => ToolOutput::ok(roster_table(&roster)),
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
    /// Start in plan mode: it must have a plan approved (review_plan) before it can edit files or run commands.
    #[serde(default)]
    pub require_plan: bool,
}

/// `spawn_teammate{name, role, prompt, model?, require_plan?}`: starts a persistent teammate.
pub struct SpawnTeammate {
    team: Team,
}

impl SpawnTeammate {
    /// The tool bound to a team.
    pub fn new(team: Team) -> SpawnTeammate {
        SpawnTeammate { team }
    }
}

#[async_trait]
impl Tool for SpawnTeammate {
    fn name(&self) -> &str {
        "spawn_teammate"
    }
    fn description(&self) -> &str {
        "Start a persistent teammate with its own conversation and tools. It works on the prompt, reports back to you automatically when it finishes, then idles until it receives mail."
    }
    fn input_schema(&self) -> Value {
        schema_of::<SpawnTeammateInput>()
    }
    fn effect(&self, _input: &Value) -> Effect {
        Effect::Coordinate
    }
    async fn call(&self, input: Value, ctx: &ToolContext) -> ToolOutput {
        let input: SpawnTeammateInput = match parse_input(self.name(), input) {
            Ok(i) => i,
            Err(e) => return e,
        };
        if ctx.agent != LEAD {
            return ToolOutput::error("only the lead can spawn teammates");
        }
        let req = SpawnRequest {
            name: input.name,
            role: input.role,
            prompt: input.prompt,
            model: input.model,
            require_plan: input.require_plan,
        };
        match self.team.spawn(req) {
            Ok(m) => ToolOutput::ok(format!(
                "Spawned teammate '{}' (role: {}, epoch {}). It is working now.{}",
                m.name,
                m.role,
                m.epoch,
                if m.require_plan {
                    " It is in plan mode: it will send you a plan to review with review_plan before it can change anything."
                } else {
                    ""
                }
            )),
            Err(e) => {
                let roster = self
                    .team
                    .roster()
                    .map(|r| members_list(&r))
                    .unwrap_or_default();
                ToolOutput::error(format!("{e}. Current team: {roster}"))
            }
        }
    }
}

/// Registers the lead's team tools into a registry.
pub fn register_lead_tools(team: &Team, tools: &mut troupe_tools::Registry) {
    tools.register(Arc::new(SpawnTeammate::new(team.clone())));
    tools.register(Arc::new(ListTeammates::new(team.clone())));
    tools.register(Arc::new(SendMessage::new(team.shared().clone())));
    tools.register(Arc::new(Broadcast::new(team.clone())));
    tools.register(Arc::new(ReadInbox::new(team.shared().clone())));
    crate::protocols::register_lead_tools(team.shared(), tools);
}
