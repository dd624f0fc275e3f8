//! The team roster (`roster.json`): who is on the team, in what state, at which incarnation.

use serde::{Deserialize, Serialize};

use crate::status::AgentStatus;
use crate::usage::{Usage, UsageByModel};

/// One teammate (or the lead) as recorded in the roster.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Member {
    /// Unique agent name (see [`crate::ids::validate_agent_name`]).
    pub name: String,
    /// What the member is for, as given at spawn.
    pub role: String,
    /// Current status.
    pub status: AgentStatus,
    /// Incarnation counter, bumped on every respawn; requests carry it.
    pub epoch: u64,
    /// Model the member runs on, when not the default.
    #[serde(default)]
    pub model: Option<String>,
    /// Git worktree the member works in, when it has its own.
    #[serde(default)]
    pub worktree: Option<String>,
    /// Tokens used so far.
    #[serde(default)]
    pub usage: Usage,
    /// The same tokens per model called (empty from older versions: all on `model` or the
    /// team's default), so each call is priced at the model it used.
    #[serde(default, skip_serializing_if = "UsageByModel::is_empty")]
    pub usage_by_model: UsageByModel,
    /// Last sign of life, in ms since the Unix epoch.
    #[serde(default)]
    pub last_seen: u64,
    /// What it is doing now, in a few words (for the dashboard).
    #[serde(default)]
    pub activity: Option<String>,
    /// OS process id when the member runs as its own process.
    #[serde(default)]
    pub pid: Option<u32>,
    /// Whether the member must have a plan approved before mutating tools run.
    #[serde(default)]
    pub require_plan: bool,
    /// Whether its plan has been approved.
    #[serde(default)]
    pub plan_approved: bool,
    /// Whether the harness hands it ready tasks from the board when it goes idle (s17).
    #[serde(default = "auto_claim_default")]
    pub auto_claim: bool,
    /// The final text of its latest work phase (also delivered to the lead).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_report: Option<String>,
    /// Its background commands that keep it busy: running, or finished with a notification it
    /// has not read yet (a headless run waits for them).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub background: Vec<BackgroundCommand>,
    /// The agent definition it was made from and the tools it is restricted to, as spawned.
    #[serde(flatten)]
    pub profile: MemberProfile,
}

/// What a teammate was made from besides its role, as `spawn_teammate` asked: an agent
/// definition, and the tools and MCP servers it is restricted to. On the roster, so every
/// incarnation (a respawn, `--continue`, its own process) is made the same way.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemberProfile {
    /// The agent definition (`.troupe/agents/<name>.md`, `.claude/agents/<name>.md`) whose body
    /// is part of its system prompt and whose `tools`, `model` and `permissionMode` apply.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// The only tools it may use (names, `prefix*` patterns, `mcp__<server>` for all of a
    /// server's tools); `None` for no restriction. Its team tools always stay.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<String>>,
    /// The only MCP servers whose tools it may use; `None` for all.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mcp_servers: Option<Vec<String>>,
}

impl MemberProfile {
    /// True when nothing shapes the member beyond its role.
    pub fn is_plain(&self) -> bool {
        self.agent.is_none() && self.tools.is_none() && self.mcp_servers.is_none()
    }
}

/// One background command of a member, as the roster shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BackgroundCommand {
    /// Its id (`bg-1`).
    pub id: String,
    /// The command line.
    pub command: String,
    /// When it started, in ms since the Unix epoch.
    pub started_ms: u64,
    /// Where it stands.
    pub state: BackgroundState,
}

/// Where a member's background command stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BackgroundState {
    /// Still running.
    Running,
    /// Finished; the member is about to be told.
    Finished,
}

impl Member {
    /// A freshly spawned member: working, epoch given, everything else empty.
    pub fn new(
        name: impl Into<String>,
        role: impl Into<String>,
        epoch: u64,
        now_ms: u64,
    ) -> Member {
        Member {
            name: name.into(),
            role: role.into(),
            status: AgentStatus::Working,
            epoch,
            model: None,
            worktree: None,
            usage: Usage::default(),
            usage_by_model: UsageByModel::default(),
            last_seen: now_ms,
            activity: None,
            pid: None,
            require_plan: false,
            plan_approved: false,
            auto_claim: true,
            last_report: None,
            background: Vec::new(),
            profile: MemberProfile::default(),
        }
    }
}

/// Members recorded before the task board existed claim work like new ones.
fn auto_claim_default() -> bool {
    true
}

/// The whole roster of one team.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Roster {
    /// Team name (the directory under `.troupe/teams/`).
    #[serde(default)]
    pub team: String,
    /// The lead's agent name.
    #[serde(default)]
    pub lead: String,
    /// Every member, in spawn order.
    #[serde(default)]
    pub members: Vec<Member>,
    /// The lead's tokens and model, as it last published them (filled in by the roster view
    /// from the store's presence; absent from `roster.json` itself).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lead_usage: Option<crate::usage::AgentUsage>,
}

impl Roster {
    /// An empty roster for a team.
    pub fn new(team: impl Into<String>, lead: impl Into<String>) -> Roster {
        Roster {
            team: team.into(),
            lead: lead.into(),
            members: Vec::new(),
            lead_usage: None,
        }
    }

    /// The member with this name.
    pub fn get(&self, name: &str) -> Option<&Member> {
        self.members.iter().find(|m| m.name == name)
    }

    /// The member with this name, for changing it.
    pub fn get_mut(&mut self, name: &str) -> Option<&mut Member> {
        self.members.iter_mut().find(|m| m.name == name)
    }

    /// Names of members that have not ended, in roster order.
    pub fn live_names(&self) -> Vec<String> {
        self.members
            .iter()
            .filter(|m| !m.status.is_ended())
            .map(|m| m.name.clone())
            .collect()
    }

    /// Every member's name, in roster order (for "unknown recipient" errors).
    pub fn names(&self) -> Vec<String> {
        self.members.iter().map(|m| m.name.clone()).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lookups_and_live_names() {
        let mut roster = Roster::new("t", "lead");
        roster.members.push(Member::new("alice", "tests", 0, 1));
        roster.members.push(Member::new("bob", "docs", 0, 1));
        roster.members.push(Member::new("carol", "ops", 1, 1));
        if let Some(bob) = roster.get_mut("bob") {
            bob.status = AgentStatus::Shutdown;
        }
        if let Some(carol) = roster.get_mut("carol") {
            carol.status = AgentStatus::Idle;
        }
        assert_eq!(
            roster.get("bob").map(|m| m.status),
            Some(AgentStatus::Shutdown)
        );
        assert!(roster.get("dave").is_none());
        assert_eq!(roster.live_names(), vec!["alice", "carol"]);
        assert_eq!(roster.names(), vec!["alice", "bob", "carol"]);
    }

    #[test]
    fn minimal_json_fills_defaults() {
        let text = r#"{"team":"t","lead":"lead","members":[
            {"name":"alice","role":"r","status":"idle","epoch":3}]}"#;
        let roster: Roster = serde_json::from_str(text).unwrap_or_else(|e| panic!("{e}"));
        let alice = roster.get("alice").unwrap_or_else(|| panic!("missing"));
        assert_eq!(alice.epoch, 3);
        assert_eq!(alice.status, AgentStatus::Idle);
        assert_eq!(alice.usage, Usage::default());
        assert!(!alice.require_plan);
        assert!(alice.auto_claim, "auto-claim defaults to on");
        let back = serde_json::to_string(&roster).unwrap_or_default();
        let again: Roster = serde_json::from_str(&back).unwrap_or_default();
        assert_eq!(again, roster);
    }
}
