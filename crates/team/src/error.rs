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
    /// The team store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}
