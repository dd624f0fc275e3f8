//! How a refused call was decided, for Claude Code's `system/permission_denied` event: it
//! announces the refusals nobody was asked about — a deny rule, the mode — and leaves out those
//! Claude Code leaves out (a file tool refused by a path-scoped deny rule).

use super::{CallInfo, Outcome, PermissionMode, Policy};

/// What refused a call without asking anybody (Claude Code's `decision_reason_type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DenialSource {
    /// A deny rule.
    Rule,
    /// The permission mode (`plan`, `dontAsk`).
    Mode,
    /// Nobody to ask: a headless run without a permission prompt.
    NoApprover,
}

impl DenialSource {
    /// The source as Claude Code's `decision_reason_type` spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            DenialSource::Rule => "rule",
            DenialSource::Mode => "mode",
            DenialSource::NoApprover => "asyncAgent",
        }
    }
}

impl Policy {
    /// What refused `call` (which [`Policy::decide`] denied), when Claude Code announces it.
    pub fn denial_source(&self, call: &CallInfo<'_>) -> Option<DenialSource> {
        match self.evaluate(call) {
            Outcome::DeniedByRule(rule) if rule.is_path_scoped() && is_file_tool(call.tool) => None,
            Outcome::DeniedByRule(_) | Outcome::DeniedReadByCommand(..) => Some(DenialSource::Rule),
            Outcome::DeniedByPlanMode => Some(DenialSource::Mode),
            Outcome::AskedByRule(_) | Outcome::AskedByMode | Outcome::AskedProtected(_)
                if self.mode == PermissionMode::DontAsk =>
            {
                Some(DenialSource::Mode)
            }
            _ => None,
        }
    }
}

/// The tools Claude Code calls Read, Write and Edit.
fn is_file_tool(tool: &str) -> bool {
    matches!(
        tool,
        "read_file"
            | "write_file"
            | "edit_file"
            | "notebook_edit"
            | "Read"
            | "Write"
            | "Edit"
            | "MultiEdit"
            | "NotebookEdit"
    )
}
