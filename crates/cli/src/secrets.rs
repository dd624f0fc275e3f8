//! Which of troupe's variables are credentials, taken out of its environment at start and held
//! in memory (`troupe_tools::secrets`): the providers' keys and tokens, the NATS password and
//! token, and the credentials a `TROUPE_STORE` URL carries (held as `NATS_USER` and
//! `NATS_PASSWORD` or `NATS_TOKEN`; the variable keeps the URL without them).

use crate::nats::{without_credentials, NatsUrl};
use troupe_tools::{child_env, secrets};

/// The variable teammate processes read their store from (set for them by the lead).
pub const STORE_VAR: &str = "TROUPE_STORE";

/// Takes the credentials out of the environment. Call it first in `main`, before any thread.
pub fn take_from_environment() {
    secrets::take_all(is_secret);
    let Some(url) = std::env::var(STORE_VAR)
        .ok()
        .filter(|url| url.contains('@'))
    else {
        return;
    };
    if let Ok(parsed) = NatsUrl::parse(&url) {
        crate::nats::hold_credentials(&parsed);
    }
    secrets::take(STORE_VAR);
    // Before any thread: see `secrets::take`.
    std::env::set_var(STORE_VAR, without_credentials(&url));
}

/// Whether the variable `name` is a credential troupe keeps to itself.
fn is_secret(name: &str) -> bool {
    child_env::is_provider_credential(name) || matches!(name, "NATS_PASSWORD" | "NATS_TOKEN")
}
