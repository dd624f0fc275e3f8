//! No process outlives its owner: troupe is the child subreaper of everything its tools start,
//! marks each call's processes, ends them with the call, and ends them all when it exits.

mod child;
mod clone;
mod live;
mod marked_child;
mod plain;
mod shared_look;
mod spawn;
mod sweep;

pub use child::setup_child;
pub use live::{end_all, Exiting, LiveCall, CALL_MARKER_ENV};
pub use marked_child::MarkedChild;
pub use plain::plain_words;
pub use spawn::{ChildIo, MarkedCommand};

use std::io;
use std::sync::atomic::Ordering;

/// Whether [`become_undumpable`] made this process undumpable.
static UNDUMPABLE: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Makes this process undumpable (`PR_SET_DUMPABLE` 0): a process of the same user can then no
/// longer read its memory, environment or descriptors through `/proc` or ptrace, which is what
/// a tool call that shares troupe's PID namespace (none where calls get their own) could try.
/// A child that makes a user namespace makes the shared memory dumpable for a moment to write
/// its id maps; [`keep_undumpable`] puts it back once the child has its own.
pub fn become_undumpable() -> io::Result<()> {
    rustix::process::set_dumpable_behavior(rustix::process::DumpableBehavior::NotDumpable)?;
    UNDUMPABLE.store(true, Ordering::Relaxed);
    Ok(())
}

/// After a spawn: makes this process undumpable again if it was (see [`become_undumpable`]).
pub(crate) fn keep_undumpable() {
    if UNDUMPABLE.load(Ordering::Relaxed) {
        let _ =
            rustix::process::set_dumpable_behavior(rustix::process::DumpableBehavior::NotDumpable);
    }
}

/// Makes this process the child subreaper: orphaned descendants (double-forked daemons, `setsid`
/// servers) are re-parented to it rather than to init, so they can be found and ended. Call once
/// at start-up, before any tool runs.
pub fn become_subreaper() -> io::Result<()> {
    rustix::process::set_child_subreaper(Some(rustix::process::getpid()))?;
    let _ = sweep::SINCE_START.set(sweep::Window::open());
    sweep::SUBREAPER.store(true, Ordering::Relaxed);
    Ok(())
}

#[cfg(test)]
mod tests {
    use rustix::process::{dumpable_behavior, set_dumpable_behavior, DumpableBehavior};

    #[test]
    fn an_undumpable_process_is_made_undumpable_again_after_a_spawn() {
        super::become_undumpable().unwrap();
        assert_eq!(dumpable_behavior().unwrap(), DumpableBehavior::NotDumpable);
        // What a user-namespace child does to the shared memory, and what the spawn undoes.
        set_dumpable_behavior(DumpableBehavior::Dumpable).unwrap();
        super::keep_undumpable();
        assert_eq!(dumpable_behavior().unwrap(), DumpableBehavior::NotDumpable);
    }
}
