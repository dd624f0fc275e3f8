//! [`LiveMode`]: the permission mode an agent is in now (Shift-Tab, the SDK's
//! `set_permission_mode` and a command's turn change it), shared with what acts for the agent,
//! so a subagent started at a call works under its parent's mode as it is then, not as it was
//! when the parent was built.

use crate::permissions::PermissionMode;
use std::sync::{Arc, RwLock};

/// An agent's current permission mode, readable by whoever holds a clone.
#[derive(Debug, Clone)]
pub struct LiveMode(Arc<RwLock<PermissionMode>>);

impl LiveMode {
    /// A mode cell starting at `mode`.
    pub fn new(mode: PermissionMode) -> LiveMode {
        LiveMode(Arc::new(RwLock::new(mode)))
    }

    /// The mode now.
    pub fn get(&self) -> PermissionMode {
        match self.0.read() {
            Ok(mode) => *mode,
            Err(poisoned) => *poisoned.into_inner(),
        }
    }

    /// Switches the agent to `mode` from its next call on: its own tool's doing (entering or
    /// leaving plan mode); the loop takes it up, and front ends see it in the agent's policy
    /// once the turn ends.
    pub fn switch(&self, mode: PermissionMode) {
        self.set(mode);
    }

    /// Records that the agent is now in `mode`.
    pub(crate) fn set(&self, mode: PermissionMode) {
        match self.0.write() {
            Ok(mut held) => *held = mode,
            Err(poisoned) => *poisoned.into_inner() = mode,
        }
    }
}
