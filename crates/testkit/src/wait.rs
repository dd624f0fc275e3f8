//! The one way tests wait for something another thread or process brings about: re-check a
//! condition until it holds, bounded by a generous limit a broken build might never reach.
//! Nothing here asserts on time: the limit only turns a hang into a failure that says what
//! never happened.

use std::time::{Duration, Instant};

/// How often a condition is checked again.
const RECHECK: Duration = Duration::from_millis(20);

/// Waits until `found` finds something, checking again every 20 ms for at most `limit`, and
/// returns it; fails the test naming `what` when it never does.
#[track_caller]
pub fn wait_for<T>(what: &str, limit: Duration, mut found: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(value) = found() {
            return value;
        }
        assert!(
            Instant::now() < deadline,
            "never happened within {limit:?}: {what}"
        );
        std::thread::sleep(RECHECK);
    }
}

/// Waits until `ready` holds, checking again every 20 ms for at most `limit`; fails the test
/// naming `what` when it never does.
#[track_caller]
pub fn wait_until(what: &str, limit: Duration, mut ready: impl FnMut() -> bool) {
    wait_for(what, limit, || ready().then_some(()))
}

/// Whether `ready` comes to hold within `limit` (checked every 20 ms), for a caller that
/// asserts with its own message.
pub fn eventually(limit: Duration, mut ready: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + limit;
    loop {
        if ready() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(RECHECK);
    }
}
