//! The types every part of the team shares — the lead's name, the team's settings, what a
//! spawn asks for and who a member runs as — kept apart so no module needs the runtime for them.

use std::path::PathBuf;
use std::sync::Arc;
use troupe_agent::Recipe;
use troupe_catalog::agents::Definitions;
use troupe_protocol::MemberProfile;

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
    /// What every agent of the run is made from, as the lead resolved it (model, client,
    /// settings, policy, limit, memory, added directories, shared extensions): each teammate is
    /// built from it by [`troupe_agent::Recipe::build`], with a teammate's role.
    pub recipe: Recipe,
    /// Where teammates run.
    pub mode: TeammateMode,
    /// The troupe binary, for process mode.
    pub exe: Option<PathBuf>,
    /// The workspace's (and the user's) agent definitions, for `spawn_teammate{agent}`.
    pub agents: Arc<Definitions>,
    /// The names of the configured MCP servers, for `spawn_teammate{mcp_servers}`.
    pub mcp_servers: Vec<String>,
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
