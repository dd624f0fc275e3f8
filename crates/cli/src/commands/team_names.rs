//! Names given to the team subcommands, checked against the roster: a name not on the team is
//! an error that lists who is (never "no unread mail" for a typo).

use troupe_store::TeamStore;
use troupe_team::shared::members_list;
use troupe_team::LEAD;

/// `Ok` when `name` is the lead or on the roster; else why not, with the members.
pub async fn known(store: &dyn TeamStore, name: &str) -> Result<(), String> {
    if name == LEAD {
        return Ok(());
    }
    teammate(store, name).await
}

/// `Ok` when `name` is on the roster (the lead is not a teammate); else why not, with the
/// members.
pub async fn teammate(store: &dyn TeamStore, name: &str) -> Result<(), String> {
    let roster = store
        .roster()
        .await
        .map_err(|e| format!("reading team '{}': {e}", store.team()))?;
    if roster.get(name).is_some() {
        return Ok(());
    }
    let what = if name == LEAD {
        format!(
            "'{LEAD}' is the lead, not a teammate of team '{}'",
            store.team()
        )
    } else {
        format!("no teammate named '{name}' on team '{}'", store.team())
    };
    Err(format!("{what}. Members: {}", members_list(&roster)))
}
