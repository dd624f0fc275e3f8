//! Agent status, as recorded in the roster: `working -> idle -> working ... -> shutdown | stopped | failed`.

use serde::{Deserialize, Serialize};

/// Where an agent is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AgentStatus {
    /// Running a turn.
    Working,
    /// Waiting for mail; any new message wakes it.
    Idle,
    /// Ended after approving a shutdown request.
    Shutdown,
    /// Force-stopped by the lead (for example after a shutdown request expired).
    Stopped,
    /// Ended by an error or a crash.
    Failed,
}

impl AgentStatus {
    /// True once the agent has ended and will not run again in this incarnation.
    pub fn is_ended(self) -> bool {
        match self {
            AgentStatus::Working | AgentStatus::Idle => false,
            AgentStatus::Shutdown | AgentStatus::Stopped | AgentStatus::Failed => true,
        }
    }

    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            AgentStatus::Working => "working",
            AgentStatus::Idle => "idle",
            AgentStatus::Shutdown => "shutdown",
            AgentStatus::Stopped => "stopped",
            AgentStatus::Failed => "failed",
        }
    }
}

impl std::fmt::Display for AgentStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ended_states_and_wire_names() {
        let all = [
            (AgentStatus::Working, "working", false),
            (AgentStatus::Idle, "idle", false),
            (AgentStatus::Shutdown, "shutdown", true),
            (AgentStatus::Stopped, "stopped", true),
            (AgentStatus::Failed, "failed", true),
        ];
        for (status, name, ended) in all {
            assert_eq!(status.is_ended(), ended);
            assert_eq!(status.to_string(), name);
            assert_eq!(
                serde_json::to_value(status).unwrap_or_default(),
                serde_json::Value::String(name.into())
            );
        }
    }
}
