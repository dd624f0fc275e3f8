//! The types every part of the team shares — the lead's name, the team's settings, what a
//! spawn asks for and who a member runs as — kept apart so no module needs the runtime for them.

use std::path::PathBuf;
use std::sync::Arc;
use troupe_agent::permissions::Policy;
use troupe_agent::Extension;
use troupe_catalog::agents::Definitions;
use troupe_model::{Model, ModelConfig};
use troupe_protocol::MemberProfile;
use troupe_settings::Settings;

/// The lead's name on every team.
pub const LEAD: &str = "lead";

/// Where spawned teammates run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TeammateMode {
    /// As tasks in the lead's process.
    InProcess,
    /// Each as its own `troupe teammate` process on the same store.
    Process,
}

impl std::str::FromStr for TeammateMode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "in-process" | "in_process" | "inprocess" | "thread" => Ok(TeammateMode::InProcess),
            "process" => Ok(TeammateMode::Process),
            other => Err(format!(
                "unknown teammate mode '{other}' (use in-process or process)"
            )),
        }
    }
}

/// Settings shared by every member of a team.
#[derive(Clone)]
pub struct TeamConfig {
    /// Team name (`--team`).
    pub team: String,
    /// Workspace root.
    pub workspace: PathBuf,
    /// `<workspace>/.troupe`.
    pub troupe_dir: PathBuf,
    /// The lead's model; teammates use it unless spawned with another model name.
    pub model: ModelConfig,
    /// The model client every in-process member calls through: one per process (one HTTP
    /// connection pool, one bound on concurrent calls); the model name goes with each request.
    pub client: Arc<dyn Model>,
    /// Output token limit per call.
    pub max_tokens: u32,
    /// Teammates' permission policy.
    pub policy: Policy,
    /// Where teammates run.
    pub mode: TeammateMode,
    /// The troupe binary, for process mode.
    pub exe: Option<PathBuf>,
    /// The effective settings every teammate is built from.
    pub settings: Arc<Settings>,
    /// Extensions every teammate built in this process gets besides the team's own (the
    /// workspace's hooks and MCP servers, shared by every agent of the process).
    pub extensions: Vec<Arc<dyn Extension>>,
    /// The workspace's (and the user's) agent definitions, for `spawn_teammate{agent}`.
    pub agents: Arc<Definitions>,
    /// The names of the configured MCP servers, for `spawn_teammate{mcp_servers}`.
    pub mcp_servers: Vec<String>,
    /// The user's home, for the user's memory and skills (`None`: none).
    pub home: Option<PathBuf>,
    /// Directories besides the workspace every teammate's tools may use (`--add-dir`,
    /// `permissions.additionalDirectories`), canonical.
    pub added_dirs: Vec<PathBuf>,
    /// Which memory files (CLAUDE.md) go into every teammate's prompt: the lead's setting
    /// sources.
    pub memory_sources: troupe_agent::memory::MemorySources,
    /// What the program running the team hands each teammate process besides the team's own
    /// configuration, so it sets itself up as the lead was (its own format, opaque to the
    /// team: see [`crate::launch::ProcessLaunch::options`]).
    pub process_options: serde_json::Value,
}

/// Which copy of the repository a teammate's tools work in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Isolation {
    /// The team's workspace, shared with the lead and the other teammates.
    #[default]
    Shared,
    /// A git worktree of its own (`.troupe/worktrees/<name>`, branch `wt/<name>`), for its whole life.
    Worktree,
}

impl std::str::FromStr for Isolation {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "none" | "shared" | "" => Ok(Isolation::Shared),
            "worktree" => Ok(Isolation::Worktree),
            other => Err(format!(
                "unknown isolation '{other}' (use \"worktree\", or leave it out)"
            )),
        }
    }
}

/// What `spawn_teammate` asks for.
#[derive(Debug, Clone)]
pub struct SpawnRequest {
    /// Unique name.
    pub name: String,
    /// Role, e.g. coder, tester.
    pub role: String,
    /// First instructions.
    pub prompt: String,
    /// Model name, if not the lead's.
    pub model: Option<String>,
    /// Start in plan mode: mutating tools are refused until the lead approves a plan.
    pub require_plan: bool,
    /// Which copy of the repository it works in.
    pub isolation: Isolation,
    /// Take ready tasks from the board when idle (`spawn_teammate{auto_claim: false}` opts out).
    pub auto_claim: bool,
    /// The agent definition it is made from and the tools and servers it is restricted to.
    pub profile: MemberProfile,
}

/// Who to run.
#[derive(Debug, Clone)]
pub struct MemberSpec {
    /// Name.
    pub name: String,
    /// Role.
    pub role: String,
    /// Incarnation.
    pub epoch: u64,
    /// First instructions; `None` when resuming from a transcript.
    pub prompt: Option<String>,
    /// Model name, if not the lead's.
    pub model: Option<String>,
    /// Its own git worktree, by name, when it has one for its whole life.
    pub worktree: Option<String>,
    /// Take ready tasks from the board when idle (from the roster member, so a respawn keeps it).
    pub auto_claim: bool,
    /// Its agent definition and tool restrictions (from the roster member).
    pub profile: MemberProfile,
}
