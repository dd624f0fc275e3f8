//! What a caller changes between turns: the permission mode or the whole policy, and the
//! model (the Agent SDK's `set_permission_mode`/`set_model`, `/model`, a slash command's
//! `allowed-tools` and `model` for its turn).

use super::Agent;
use crate::permissions::Policy;
use std::sync::Arc;
use troupe_model::Model;

impl Agent {
    /// Changes the permission mode from the next call on (the rules stay).
    pub fn set_permission_mode(&mut self, mode: crate::permissions::PermissionMode) {
        self.policy.mode = mode;
        self.live_mode.set(mode);
    }

    /// Replaces the permission policy from the next call on (a slash command's
    /// `allowed-tools` for its turn).
    pub fn set_policy(&mut self, policy: Policy) {
        self.live_mode.set(policy.mode);
        self.policy = policy;
    }

    /// The model client in use, to switch back to after a turn on another one.
    pub fn model_client(&self) -> Arc<dyn Model> {
        self.model.clone()
    }

    /// Switches to another model from the next model call on.
    pub fn set_model(&mut self, model: Arc<dyn Model>, name: impl Into<String>) {
        self.model = model;
        self.config.model = name.into();
    }
}
