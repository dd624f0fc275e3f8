//! Why a protocol step was refused, phrased so the model (or person) can act on it.

use crate::error::TeamError;
use troupe_protocol::{AgentStatus, RequestError, RequestKind};
use troupe_store::StoreError;

/// A refused protocol step; tools turn it into an error tool_result.
#[derive(Debug, thiserror::Error)]
pub enum ProtocolError {
    /// No request has this id.
    #[error("unknown request id '{0}': there is no such request. Use the request_id exactly as it appears in the request_id=\"…\" attribute of the message (the lead can see every request with list_requests)")]
    UnknownRequest(String),
    /// The id names a request of another protocol.
    #[error("request {id} is a {actual} request, but {tool} answers {expected} requests only")]
    WrongKind {
        /// The request.
        id: String,
        /// Its kind.
        actual: RequestKind,
        /// The kind the tool answers.
        expected: RequestKind,
        /// The tool used.
        tool: &'static str,
    },
    /// A lead-only step attempted by someone else.
    #[error("only the lead can {0}")]
    LeadOnly(&'static str),
    /// The named teammate is not on the roster.
    #[error("no teammate named '{name}' on the team. Members: {members}")]
    UnknownTeammate {
        /// The name given.
        name: String,
        /// Who is on the roster.
        members: String,
    },
    /// The teammate has already ended.
    #[error("teammate '{name}' has already ended (status {status}); there is nothing to stop")]
    AlreadyEnded {
        /// The teammate.
        name: String,
        /// Its final status.
        status: AgentStatus,
    },
    /// A force-stop before the shutdown handshake had its chance.
    #[error("cannot force-stop '{name}' yet: {why}. Ask first with shutdown_request{{teammate}}; if the request expires unanswered you may force-stop")]
    ForceTooEarly {
        /// The teammate.
        name: String,
        /// What is still in the way.
        why: String,
    },
    /// The request was opened by an incarnation of the teammate that has since ended.
    #[error("request {id} was opened by an earlier incarnation of {opener} (epoch {epoch}) that has ended; it is void and was cancelled")]
    OpenerGone {
        /// The request.
        id: String,
        /// Its opener.
        opener: String,
        /// The opener's epoch.
        epoch: u64,
    },
    /// The FSM refused the transition (wrong responder, already resolved, expired, stale epoch).
    #[error(transparent)]
    Request(#[from] RequestError),
    /// The team runtime failed (for example mail to an unknown recipient).
    #[error(transparent)]
    Team(#[from] TeamError),
}

impl ProtocolError {
    /// Maps a store error about request `id`: FSM refusals and unknown ids become their own
    /// variants so the message speaks to the model, everything else stays a team error.
    pub fn from_store(id: &str, e: StoreError) -> ProtocolError {
        match e {
            StoreError::Request(r) => ProtocolError::Request(r),
            StoreError::UnknownRequest { .. } | StoreError::BadRequestId { .. } => {
                ProtocolError::UnknownRequest(id.to_string())
            }
            other => ProtocolError::Team(TeamError::Store(other)),
        }
    }
}

impl From<StoreError> for ProtocolError {
    fn from(e: StoreError) -> ProtocolError {
        match e {
            StoreError::Request(r) => ProtocolError::Request(r),
            StoreError::UnknownRequest { id, .. } | StoreError::BadRequestId { id } => {
                ProtocolError::UnknownRequest(id)
            }
            other => ProtocolError::Team(TeamError::Store(other)),
        }
    }
}
