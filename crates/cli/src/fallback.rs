//! `--fallback-model`: when the lead's model stays overloaded or failing on the server's side
//! after the client's own retries, the turn is tried once more on the fallback model (which
//! then serves the rest of the run), saying so on stderr.

use troupe_agent::AgentError;
use troupe_model::ModelError;

/// Whether a failed turn is one another model might serve: every retry failed transiently
/// (overloaded, 5xx, network), or the server answered 5xx or 529.
pub(crate) fn worth_falling_back(error: &AgentError) -> bool {
    match error {
        AgentError::Model(ModelError::RetriesExhausted { .. }) => true,
        AgentError::Model(ModelError::Http { status, .. }) => *status >= 500,
        _ => false,
    }
}
