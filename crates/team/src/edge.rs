//! The one place synchronous code of the team waits for the async store: hooks the agent
//! calls synchronously (its restatement after a compaction, its transcript mirror, which runs
//! inside the agent's own synchronous file sync). Everything else awaits; the tool gates do
//! too, since a wait here takes a blocking-pool thread for as long as it lasts.

/// Waits for `fut` from synchronous code that may run on a tokio worker: on a multi-threaded
/// runtime's worker the worker is handed off first (its queued tasks move to other workers),
/// anywhere else a helper thread with a runtime of its own runs it.
pub(crate) fn wait_for<T: Send>(fut: impl std::future::Future<Output = T> + Send) -> T {
    use tokio::runtime::{Handle, RuntimeFlavor};
    match Handle::try_current() {
        Ok(h) if h.runtime_flavor() == RuntimeFlavor::MultiThread => {
            tokio::task::block_in_place(|| h.block_on(fut))
        }
        _ => std::thread::scope(|scope| {
            scope
                .spawn(|| {
                    tokio::runtime::Builder::new_current_thread()
                        .enable_all()
                        .build()
                        .map(|rt| rt.block_on(fut))
                })
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
                .unwrap_or_else(|e| panic!("cannot start a runtime for the transcript mirror: {e}"))
        }),
    }
}
