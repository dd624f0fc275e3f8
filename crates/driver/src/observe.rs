//! Who watches every session of the process: one [`Observer`], set once by the composition
//! root (telemetry), told each turn's start with its input and every event a driver emits.
//! Unset, a turn pays one atomic load per event.

use crate::{Cause, Event};
use std::sync::OnceLock;

/// Watches the events of every driver in the process, whichever front end runs it.
pub trait Observer: Send + Sync {
    /// A turn of `agent` starts, for `cause`, with this input (a prompt's text).
    fn turn_started(&self, agent: &str, cause: Cause, input: Option<&str>);

    /// An event of `agent`'s driver, before its front end sees it.
    fn event(&self, agent: &str, event: &Event<'_>);
}

static OBSERVER: OnceLock<Box<dyn Observer>> = OnceLock::new();

/// Makes `observer` watch every driver of this process; the first call wins (it returns
/// false when one was set already).
pub fn observe_with(observer: Box<dyn Observer>) -> bool {
    OBSERVER.set(observer).is_ok()
}

/// The process's observer, if one was set.
pub(crate) fn observer() -> Option<&'static dyn Observer> {
    OBSERVER.get().map(|o| o.as_ref())
}
