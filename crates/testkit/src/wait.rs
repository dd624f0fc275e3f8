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

/// [`wait_for`] for a check that awaits (a team store's reads): the pauses are the runtime's
/// timer, so the test's runtime keeps running meanwhile.
pub async fn wait_for_async<T>(
    what: &str,
    limit: Duration,
    mut found: impl AsyncFnMut() -> Option<T>,
) -> T {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(value) = found().await {
            return value;
        }
        assert!(
            Instant::now() < deadline,
            "never happened within {limit:?}: {what}"
        );
        tokio::time::sleep(RECHECK).await;
    }
}

/// [`wait_until`] for a check that awaits, as [`wait_for_async`].
pub async fn wait_until_async(what: &str, limit: Duration, mut ready: impl AsyncFnMut() -> bool) {
    wait_for_async(what, limit, async || ready().await.then_some(())).await
}

/// [`eventually`] for a check that awaits, as [`wait_for_async`].
pub async fn eventually_async(limit: Duration, mut ready: impl AsyncFnMut() -> bool) -> bool {
    let deadline = Instant::now() + limit;
    loop {
        if ready().await {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(RECHECK).await;
    }
}

/// Runs `fut` to completion on a thread and runtime of its own, from synchronous test code
/// that may itself run on a runtime (a fake server's reply callback reading the team store).
pub fn block_on<F>(fut: F) -> F::Output
where
    F: std::future::Future + Send,
    F::Output: Send,
{
    std::thread::scope(|scope| {
        scope
            .spawn(|| {
                match tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                {
                    Ok(runtime) => runtime.block_on(fut),
                    Err(e) => panic!("no runtime for the test's store call: {e}"),
                }
            })
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    })
}
