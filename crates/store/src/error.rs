//! The store's one error type, in backend-neutral terms: every variant says what failed and what
//! to do; where a record lives (a file, a bucket's key) is a `place` for people to read.

use thiserror::Error;
use troupe_protocol::{validate_agent_name, NameError, RequestError, TaskError, TaskId};

/// Everything that can go wrong in a team store.
#[derive(Debug, Error)]
pub enum StoreError {
    /// The backend's own storage failed (what it keeps its records in, the disk under it).
    #[error("could not {action} {place}: {detail} ({hint})")]
    Storage {
        /// What was being done ("append to", "read", "lock", ...).
        action: &'static str,
        /// Where, in the backend's terms (a file, a directory), for people.
        place: String,
        /// What went wrong.
        detail: String,
        /// What to check, in the backend's terms.
        hint: &'static str,
    },
    /// A whole record (a file, a key) could not be parsed.
    #[error("{place} is corrupt ({detail}); fix it by hand or move it aside — troupe will not overwrite it")]
    Corrupt {
        /// Where the record is, in the backend's terms (a file, a bucket's key), for people.
        place: String,
        /// The parse error.
        detail: String,
    },
    /// A value could not be serialized (should not happen for troupe's own types).
    #[error("could not serialize {what}: {source}")]
    Serialize {
        /// What was being serialized.
        what: &'static str,
        /// The serde error.
        #[source]
        source: serde_json::Error,
    },
    /// A team or agent name is not safe to use as a file name.
    #[error("invalid {what} name: {source}")]
    BadName {
        /// "team" or "agent".
        what: &'static str,
        /// The rule that was broken.
        #[source]
        source: NameError,
    },
    /// A request id contains characters that are not allowed in ids.
    #[error("invalid request id {id:?}: ids are letters, digits, '-' and '_' (use the id exactly as it was given)")]
    BadRequestId {
        /// The refused id.
        id: String,
    },
    /// No request with this id exists.
    #[error(
        "unknown request id {id}: there is no {place}; list the requests to find the right id"
    )]
    UnknownRequest {
        /// The id that was asked for.
        id: String,
        /// Where the record would be, in the backend's terms.
        place: String,
    },
    /// A request with this id already exists.
    #[error("request {id} already exists at {place}; open a new request with a fresh id")]
    DuplicateRequest {
        /// The clashing id.
        id: String,
        /// Where the existing record is, in the backend's terms.
        place: String,
    },
    /// The request FSM refused the transition (the message says why and what to do).
    #[error(transparent)]
    Request(#[from] RequestError),
    /// An ack named a position that is not one a fetch of this mailbox returned.
    #[error(
        "cannot ack {agent}'s mailbox there: {detail} (ack exactly the token of the latest fetch)"
    )]
    BadAck {
        /// Whose mailbox.
        agent: String,
        /// What is wrong with the position, in the backend's terms.
        detail: String,
    },
    /// Another live process holds the agent's lease (`live/<agent>.lock`, or a key on a server).
    #[error("{agent} of team '{team}' is already running ({}); it holds {place} until it exits", holder.as_ref().map_or_else(|| "it has not recorded its pid yet".to_string(), |h| h.to_string()))]
    LeaseHeld {
        /// Whose lease.
        agent: String,
        /// The team.
        team: String,
        /// Where the lease is kept (the lock file, a key on a server), for people.
        place: String,
        /// Who holds it, as it recorded itself; `None` while it is still writing that.
        holder: Option<Box<crate::live::LeaseHolder>>,
    },
    /// A lease a parent process was to hand over is not there (`--lease` names a descriptor
    /// that is not open or not the agent's lock file, or a token the lease no longer carries).
    #[error("cannot take over {agent}'s lease from handoff {handoff:?}: {reason} (it is passed only by the lead that starts the teammate; run without it to take the lease anew)")]
    LeaseNotInherited {
        /// Whose lease.
        agent: String,
        /// The handoff named (a descriptor number, a token).
        handoff: String,
        /// What is wrong with it.
        reason: String,
    },
    /// No task with this id exists.
    #[error("unknown task id {id}: there is no {place}; list the tasks to find the right id")]
    UnknownTask {
        /// The id that was asked for.
        id: TaskId,
        /// Where the record would be, in the backend's terms.
        place: String,
    },
    /// The task FSM or the dependency check refused the change (the message says why).
    #[error(transparent)]
    Task(#[from] TaskError),
    /// A networked backend could not do what was asked: its server is unreachable, refused,
    /// or did not answer in time. `hint` says what to check.
    #[error("could not {action} on {server}: {detail} ({hint})")]
    Backend {
        /// What was being done ("connect to", "append to the mailbox of bob", ...).
        action: String,
        /// The server, credentials left out.
        server: String,
        /// What went wrong.
        detail: String,
        /// What to check.
        hint: &'static str,
    },
    /// The backend does not offer this (yet).
    #[error("the {backend} team store does not support {what}")]
    Unsupported {
        /// What was asked for.
        what: &'static str,
        /// Which backend.
        backend: &'static str,
    },
    /// Watching the team for changes failed; `detail` says why and what to check.
    #[error("could not watch {place} for changes: {detail}")]
    Watch {
        /// What was watched, in the backend's terms (a directory).
        place: String,
        /// What the watcher said.
        detail: String,
    },
}

/// Refuses a team or agent name (`what`) that is unsafe as a file name, a subject or a key
/// (agents become `inbox/<agent>.jsonl`, `mail.<agent>`): every backend checks with this.
pub fn check_name(what: &'static str, name: &str) -> Result<(), StoreError> {
    validate_agent_name(name).map_err(|source| StoreError::BadName { what, source })
}

/// Refuses an agent name that is unsafe as a file name, a subject or a key.
pub fn check_agent(agent: &str) -> Result<(), StoreError> {
    check_name("agent", agent)
}
