//! The permission mode Shift-Tab cycles at the prompt (default → acceptEdits → plan, as in
//! Claude Code): the editor thread changes it, the REPL applies it to the lead before each turn.

use std::sync::{Arc, Mutex, PoisonError};
use troupe_agent::permissions::PermissionMode;

/// The mode the person chose, shared by the editor and the REPL, with the team the footer
/// names.
#[derive(Debug, Clone)]
pub struct ModeCell(Arc<Mutex<PermissionMode>>, Arc<str>);

impl ModeCell {
    /// A cell holding `mode` (the session's mode at start), on `team` (empty: none shown).
    pub fn new(mode: PermissionMode, team: &str) -> ModeCell {
        ModeCell(Arc::new(Mutex::new(mode)), Arc::from(team))
    }

    /// The mode chosen now.
    pub fn get(&self) -> PermissionMode {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Records `mode` as the one in force (the agent switched to it itself).
    pub fn set(&self, mode: PermissionMode) {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = mode;
    }

    /// Moves to the next mode of the cycle and returns it.
    pub fn cycle(&self) -> PermissionMode {
        let mut mode = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        *mode = next(*mode);
        *mode
    }

    /// The footer under the prompt: the mode in force from the next turn on, and the team.
    pub fn footer(&self) -> String {
        let mode = match self.get() {
            PermissionMode::Default => "⏵ default mode".to_string(),
            PermissionMode::AcceptEdits => "⏵⏵ accept edits on".to_string(),
            PermissionMode::Plan => "⏸ plan mode on".to_string(),
            other => format!("⏵⏵ {other} on"),
        };
        match self.1.is_empty() {
            true => format!("{mode} (shift+tab to cycle)"),
            false => format!("{mode} (shift+tab to cycle) · team {}", self.1),
        }
    }
}

/// The mode after `mode`: default → acceptEdits → plan → default; any other mode (bypass,
/// dontAsk, auto) goes back to default.
pub fn next(mode: PermissionMode) -> PermissionMode {
    match mode {
        PermissionMode::Default => PermissionMode::AcceptEdits,
        PermissionMode::AcceptEdits => PermissionMode::Plan,
        _ => PermissionMode::Default,
    }
}

/// The line shown when the agent changed the mode itself (entering or leaving plan mode).
pub fn announce_switch(mode: PermissionMode) -> String {
    announce(mode).replacen(
        "⏵ permission mode",
        "⏵ the agent switched to permission mode",
        1,
    )
}

/// The line shown when the mode changes.
pub fn announce(mode: PermissionMode) -> String {
    let what = match mode {
        PermissionMode::AcceptEdits => "file edits run without asking",
        PermissionMode::Plan => "read-only tools only",
        _ => "edits and commands ask",
    };
    format!("⏵ permission mode {mode}: {what} (Shift-Tab cycles default → acceptEdits → plan)")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shift_tab_cycles_default_accept_edits_plan() {
        let cell = ModeCell::new(PermissionMode::Default, "t");
        assert!(cell.footer().contains("default mode") && cell.footer().contains("team t"));
        assert_eq!(cell.cycle(), PermissionMode::AcceptEdits);
        assert_eq!(cell.cycle(), PermissionMode::Plan);
        assert_eq!(cell.cycle(), PermissionMode::Default);
        assert_eq!(
            next(PermissionMode::BypassPermissions),
            PermissionMode::Default
        );
        assert!(announce(PermissionMode::Plan).contains("plan"));
    }
}
