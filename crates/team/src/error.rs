//! Errors of the team runtime, phrased so a model (or a person) can act on them.

use troupe_store::StoreError;

/// What can go wrong running a team.
#[derive(Debug, thiserror::Error)]
pub enum TeamError {
    /// A name that breaks the naming rule.
    #[error("invalid teammate name '{name}': {reason}")]
    InvalidName {
        /// The name given.
        name: String,
        /// The rule it breaks.
        reason: String,
    },
    /// A live member already has this name.
    #[error("a teammate named '{0}' is already on the team and has not ended; pick another name or shut it down first")]
    NameTaken(String),
    /// Mail to a name that is not on the roster.
    #[error("no teammate named '{name}' on team '{team}'. Members: {members}")]
    UnknownRecipient {
        /// The name given.
        name: String,
        /// The team.
        team: String,
        /// Who is on the roster.
        members: String,
    },
    /// A teammate process could not be started.
    #[error("could not start teammate '{name}': {reason}")]
    Spawn {
        /// The teammate.
        name: String,
        /// Why.
        reason: String,
    },
    /// `spawn_teammate{agent}` names no agent definition.
    #[error("no agent definition named '{name}' (.troupe/agents/*.md, .claude/agents/*.md); known: {known}")]
    UnknownAgent {
        /// The name given.
        name: String,
        /// The definitions there are.
        known: String,
    },
    /// `spawn_teammate{mcp_servers}` names a server that is not configured.
    #[error("no MCP server named '{name}' is configured; configured: {known}")]
    UnknownMcpServer {
        /// The name given.
        name: String,
        /// The configured servers.
        known: String,
    },
    /// `spawn_teammate{tools}` is malformed.
    #[error("invalid tools: {0}")]
    BadTools(String),
    /// The team store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Why a member's loop failed: the reason recorded on the roster and mailed to the lead.
#[derive(Debug, thiserror::Error)]
pub enum MemberError {
    /// The worktree it was spawned to live in is gone or unusable.
    #[error("its own worktree '{name}' cannot be used: {reason}")]
    Worktree {
        /// The worktree's name.
        name: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The agent definition it was spawned from is gone: made without it, it would lose the
    /// definition's restrictions.
    #[error("its agent definition '{0}' is no longer there (.troupe/agents/, .claude/agents/)")]
    Definition(String),
    /// The directory its tools work in cannot be opened.
    #[error("its workspace cannot be opened: {0}")]
    Workspace(#[from] troupe_tools::GuardError),
    /// The agent builder refused the configuration.
    #[error("its agent could not be built: {0}")]
    Build(#[from] troupe_agent::BuildError),
    /// Building the agent panicked.
    #[error("building its agent panicked: {0}")]
    Panicked(String),
    /// A turn failed (the model or the transcript).
    #[error(transparent)]
    Turn(#[from] troupe_agent::AgentError),
    /// The team refused something (its protocol state, mail).
    #[error(transparent)]
    Team(#[from] TeamError),
    /// The team store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}
