//! The flags of the subcommands that look at a team from another terminal: `troupe team`,
//! `troupe task` and `troupe worktree`.

use clap::{Args, Subcommand, ValueEnum};
use std::path::PathBuf;

/// Which team a command from another terminal looks at, and where: the flags `troupe team`,
/// `troupe task` and `troupe worktree` share.
#[derive(Debug, Args)]
pub struct TeamPlace {
    /// Team name (default: the only running team, else the workspace's team `default`; several
    /// running teams are listed and one must be named).
    #[arg(long, global = true, env = "TROUPE_TEAM")]
    pub team: Option<String>,

    /// Where the team's state lives: `file` (the default, `.troupe/teams/` in the workspace) or
    /// a NATS JetStream server shared by several machines, `nats://[user:password@]host:4222`
    /// (setting `store`).
    #[arg(long, global = true, env = "TROUPE_STORE")]
    pub store: Option<String>,

    /// Workspace directory (default: the current directory).
    #[arg(long, global = true)]
    pub cwd: Option<PathBuf>,
}

/// `troupe worktree …`
#[derive(Debug, Args)]
pub struct WorktreeArgs {
    /// The team whose board the bindings are on and whose log records the changes.
    #[command(flatten)]
    pub place: TeamPlace,
    /// Print the result as JSON.
    #[arg(long, global = true)]
    pub json: bool,
    #[command(subcommand)]
    pub command: WorktreeCommand,
}

/// What to do with worktrees.
#[derive(Debug, Subcommand)]
pub enum WorktreeCommand {
    /// The worktrees: status, branch, base, task or teammate, uncommitted and unmerged work.
    List,
    /// Create .troupe/worktrees/<name> on a new branch wt/<name>.
    Create {
        /// Name (letters, digits, '-', '_', '.').
        name: String,
        /// Bind it to this task: whoever owns the task works in it.
        #[arg(long)]
        task: Option<u64>,
        /// Branch or commit to start from (default: HEAD).
        #[arg(long)]
        base: Option<String>,
    },
    /// Remove a worktree and its branch; refused while it holds uncommitted or unmerged work.
    Remove {
        /// The worktree.
        name: String,
        /// Throw that work away (recorded in the team's event log).
        #[arg(long)]
        discard: bool,
    },
    /// Mark a worktree kept: it stays in place after its work is done.
    Keep {
        /// The worktree.
        name: String,
    },
}

/// `troupe team …`
#[derive(Debug, Args)]
pub struct TeamArgs {
    #[command(flatten)]
    pub place: TeamPlace,

    #[command(subcommand)]
    pub command: TeamCommand,
}

/// What to do with the team.
#[derive(Debug, Subcommand)]
pub enum TeamCommand {
    /// The roster: name, role, status, epoch, tokens, what each is doing; then the pending
    /// requests.
    Status {
        /// Print roster, pending requests, board and usage as one JSON object.
        #[arg(long)]
        json: bool,
    },
    /// The event log, one line an event (teammates' tool calls included).
    Log {
        /// Keep printing new events as they happen.
        #[arg(short, long)]
        follow: bool,
        /// Only the events of this agent (a teammate or "lead").
        #[arg(long, value_name = "NAME")]
        agent: Option<String>,
    },
    /// Follow one teammate's transcript live: its prompts and mail, replies, tool calls and
    /// their results (Ctrl-C stops).
    Tail {
        /// The teammate.
        name: String,
        /// How many entries of what is already there to show first.
        #[arg(short = 'n', long, default_value_t = 20)]
        lines: usize,
    },
    /// Unread mail of an agent (shown, not consumed).
    Inbox {
        /// Agent name (a teammate or "lead").
        agent: String,
    },
    /// Write to a teammate (or the lead) as a person; it wakes like any other mail.
    Send {
        /// Recipient.
        agent: String,
        /// The message.
        text: String,
    },
    /// Ask a teammate to shut down (a shutdown request from the lead), or force-stop it.
    Stop {
        /// The teammate.
        name: String,
        /// Stop it at once without its consent (operator override): roster `stopped`, its
        /// process signalled; an in-process teammate stops at its next tool call or wake.
        #[arg(long)]
        force: bool,
        /// Why, for the teammate.
        #[arg(long)]
        reason: Option<String>,
    },
    /// A live dashboard: roster, traffic, pending requests and board, updated as the team
    /// works; approve or reject requests and message members from it (q quits). Waits for a
    /// team that does not exist yet.
    Watch,
    /// Approve a pending request (plan, permission or shutdown) as the person, in the place of
    /// the agent it is addressed to; recorded as `user:$USER`.
    Approve {
        /// The request's id (`troupe team requests` lists them).
        request_id: String,
        /// Why (a note for the teammate).
        #[arg(long)]
        reason: Option<String>,
    },
    /// Reject a pending request (plan, permission or shutdown) as the person, in the place of
    /// the agent it is addressed to; recorded as `user:$USER`.
    Reject {
        /// The request's id (`troupe team requests` lists them).
        request_id: String,
        /// Why (the feedback a teammate revises its plan by).
        #[arg(long)]
        reason: Option<String>,
    },
    /// Protocol requests (shutdown, plan, permission): kind, parties, status, age.
    Requests {
        /// Only requests in this status (pending, approved, rejected, expired, cancelled).
        #[arg(long)]
        status: Option<String>,
        /// Print the requests as JSON.
        #[arg(long)]
        json: bool,
    },
}

/// `troupe task …` (exit 0 done, 1 refused, 2 usage).
#[derive(Debug, Args)]
pub struct TaskArgs {
    #[command(flatten)]
    pub place: TeamPlace,

    /// Print JSON: a task as it is stored; `list` prints an array of them.
    #[arg(long, global = true)]
    pub json: bool,

    /// Who acts: a person `user:<name>` (default `user:$USER`), a teammate's name, or `lead`.
    #[arg(long = "as", global = true, value_name = "NAME")]
    pub actor: Option<String>,

    #[command(subcommand)]
    pub command: TaskCommand,
}

/// A task status on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum TaskStatusArg {
    /// Waiting for an owner.
    Pending,
    /// Claimed (setting it claims the task for `--as`).
    #[value(name = "in_progress", alias = "in-progress")]
    InProgress,
    /// Done (needs `--result`).
    Completed,
    /// Given up (needs `--result` saying why).
    Failed,
    /// Withdrawn.
    Cancelled,
}

/// What to do with the task board.
#[derive(Debug, Subcommand)]
pub enum TaskCommand {
    /// Every task (or those matching): id, status, owner, blockers, subject.
    List {
        /// Only tasks in this status.
        #[arg(long, value_enum)]
        status: Option<TaskStatusArg>,
        /// Only tasks owned by this agent or person.
        #[arg(long)]
        owner: Option<String>,
    },
    /// One task in full, with its history.
    Show {
        /// Task id.
        id: u64,
    },
    /// Put a task on the board (creates the team's store if no lead has run yet).
    Create {
        /// One line saying what is to be done.
        subject: String,
        /// Details.
        #[arg(long)]
        description: Option<String>,
        /// Ids of tasks that must be completed first.
        #[arg(long = "blocked-by", num_args = 1.., value_delimiter = ',')]
        blocked_by: Vec<u64>,
    },
    /// Claim a ready task for an owner: a teammate (told by mail), `lead`, or a person
    /// `user:<name>` (then no teammate takes it).
    Claim {
        /// Task id.
        id: u64,
        /// The new owner.
        #[arg(long)]
        owner: String,
    },
    /// Change a task's status, description, blockers or result, all at once or not at all.
    Update {
        /// Task id.
        id: u64,
        /// New status.
        #[arg(long, value_enum)]
        status: Option<TaskStatusArg>,
        /// New description.
        #[arg(long)]
        description: Option<String>,
        /// The result (status completed) or the reason (failed, cancelled).
        #[arg(long)]
        result: Option<String>,
        /// New blockers, replacing the old ones (`--blocked-by` alone clears them).
        #[arg(long = "blocked-by", num_args = 0.., value_delimiter = ',')]
        blocked_by: Option<Vec<u64>>,
    },
    /// Mark a task completed with its result (as its owner or the lead, see `--as`).
    Complete {
        /// Task id.
        id: u64,
        /// What came of it.
        #[arg(long)]
        result: String,
    },
}
