//! No process outlives its owner: troupe is the child subreaper of everything its tools start,
//! marks each call's processes, ends them with the call, and ends them all when it exits.

mod child;
mod clone;
mod live;
mod marked_child;
mod plain;
mod spawn;
mod sweep;

pub use child::setup_child;
pub use live::{end_all, Exiting, LiveCall, CALL_MARKER_ENV};
pub use marked_child::MarkedChild;
pub use plain::plain_words;
pub use spawn::{ChildIo, MarkedCommand};

use std::io;
use std::sync::atomic::Ordering;

/// Makes this process the child subreaper: orphaned descendants (double-forked daemons, `setsid`
/// servers) are re-parented to it rather than to init, so they can be found and ended. Call once
/// at start-up, before any tool runs.
pub fn become_subreaper() -> io::Result<()> {
    rustix::process::set_child_subreaper(Some(rustix::process::getpid()))?;
    let _ = sweep::SINCE_START.set(sweep::Window::open());
    sweep::SUBREAPER.store(true, Ordering::Relaxed);
    Ok(())
}
