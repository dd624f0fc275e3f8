//! The one place synchronous code of the team waits for the async store: the hook the agent
//! calls synchronously after a compaction (its restatement). Everything else awaits; the tool
//! gates and the transcript mirror do too, since a wait here takes a blocking-pool thread for
//! as long as it lasts.

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
                .unwrap_or_else(|e| panic!("cannot start a runtime for the restatement: {e}"))
        }),
    }
}
