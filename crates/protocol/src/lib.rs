//! Pure data shared by every troupe crate: the conversation, team mail, protocol requests,
//! agent statuses and events, with the few rules every crate shares: the clock ([`now_ms`]),
//! the retry policy ([`RetryPolicy`]) and JSON Schema clean-up ([`schema`]). No I/O beyond
//! reading the clock, no async.
//!
//! Must not know: any other troupe crate, a runtime, a file or the network.

pub mod chat;
pub mod claude_names;
pub mod clock;
pub mod envelope;
pub mod error_chain;
pub mod event;
pub mod ids;
pub mod request;
pub mod retry;
pub mod roster;
pub mod schema;
pub mod session;
pub mod status;
pub mod task;
pub mod trace_context;
pub mod usage;

pub use chat::{ChatMessage, ContentBlock, ImageData, Role};
pub use clock::now_ms;
pub use envelope::{Envelope, MailKind};
pub use error_chain::error_chain;
pub use event::{Event, EventKind};
pub use ids::{new_id, validate_agent_name, NameError};
pub use request::{Request, RequestError, RequestKind, RequestStatus, Response, Transition};
pub use retry::{Backoff, RetryPolicy};
pub use roster::{BackgroundCommand, BackgroundState, Member, MemberProfile, Roster};
pub use status::AgentStatus;
pub use task::{
    check_dependencies, BlockerStatus, Task, TaskError, TaskId, TaskStatus, TaskTransition,
    TASK_LEAD, USER_OWNER_PREFIX,
};
pub use usage::{AgentUsage, Usage, UsageByModel};
