//! The hook events troupe fires, by Claude Code's names, and what each one's matcher is
//! matched against.

/// A point in an agent's life where hooks run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum HookEvent {
    /// A conversation starts (new, resumed, cleared, compacted).
    SessionStart,
    /// A prompt arrives, before the model sees it.
    UserPromptSubmit,
    /// A tool call is about to run.
    PreToolUse,
    /// A tool call ran and succeeded.
    PostToolUse,
    /// A tool call ran and failed (its result is an error).
    PostToolUseFailure,
    /// Every call of one model reply has its result, before the next model request.
    PostToolBatch,
    /// A permission question is about to be asked; a hook may answer it.
    PermissionRequest,
    /// troupe waits on the person (a permission question is being asked).
    Notification,
    /// A slash command expanded into a prompt (matched on the command's name).
    UserPromptExpansion,
    /// Instruction (memory) files are in context (matched on the load reason).
    InstructionsLoaded,
    /// The agent finished answering.
    Stop,
    /// A turn ended on a model or API error (matched on the error's kind).
    StopFailure,
    /// A subagent starts its task (matched on its agent type).
    SubagentStart,
    /// A subagent finished answering.
    SubagentStop,
    /// The conversation is about to be compacted.
    PreCompact,
    /// The conversation was compacted.
    PostCompact,
    /// A teammate would go idle.
    TeammateIdle,
    /// A task is about to be created.
    TaskCreated,
    /// A task is about to be completed.
    TaskCompleted,
    /// The session ends.
    SessionEnd,
}

/// What an event's matcher is compared with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MatchOn {
    /// The tool's name, in Claude Code's spelling or troupe's.
    Tool,
    /// A word describing the occasion (`startup`, `auto`, `clear`…).
    Occasion,
    /// Nothing: every hook of the event runs.
    Nothing,
}

impl HookEvent {
    /// Every event, in the order of an agent's life.
    pub const ALL: [HookEvent; 20] = [
        HookEvent::SessionStart,
        HookEvent::InstructionsLoaded,
        HookEvent::UserPromptSubmit,
        HookEvent::UserPromptExpansion,
        HookEvent::PreToolUse,
        HookEvent::PermissionRequest,
        HookEvent::Notification,
        HookEvent::PostToolUse,
        HookEvent::PostToolUseFailure,
        HookEvent::PostToolBatch,
        HookEvent::Stop,
        HookEvent::StopFailure,
        HookEvent::SubagentStart,
        HookEvent::SubagentStop,
        HookEvent::PreCompact,
        HookEvent::PostCompact,
        HookEvent::TeammateIdle,
        HookEvent::TaskCreated,
        HookEvent::TaskCompleted,
        HookEvent::SessionEnd,
    ];

    /// Claude Code's name, as settings and `hook_event_name` spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            HookEvent::SessionStart => "SessionStart",
            HookEvent::UserPromptSubmit => "UserPromptSubmit",
            HookEvent::PreToolUse => "PreToolUse",
            HookEvent::PostToolUse => "PostToolUse",
            HookEvent::PostToolUseFailure => "PostToolUseFailure",
            HookEvent::PostToolBatch => "PostToolBatch",
            HookEvent::PermissionRequest => "PermissionRequest",
            HookEvent::Notification => "Notification",
            HookEvent::UserPromptExpansion => "UserPromptExpansion",
            HookEvent::InstructionsLoaded => "InstructionsLoaded",
            HookEvent::StopFailure => "StopFailure",
            HookEvent::PostCompact => "PostCompact",
            HookEvent::Stop => "Stop",
            HookEvent::SubagentStart => "SubagentStart",
            HookEvent::SubagentStop => "SubagentStop",
            HookEvent::PreCompact => "PreCompact",
            HookEvent::TeammateIdle => "TeammateIdle",
            HookEvent::TaskCreated => "TaskCreated",
            HookEvent::TaskCompleted => "TaskCompleted",
            HookEvent::SessionEnd => "SessionEnd",
        }
    }

    /// The event of that name, if troupe fires it.
    pub fn parse(name: &str) -> Option<HookEvent> {
        HookEvent::ALL.into_iter().find(|e| e.as_str() == name)
    }

    /// What the event's matchers are compared with (Claude Code: tool events match tool names,
    /// session and compaction events their occasion, the rest ignore the matcher).
    pub fn match_on(self) -> MatchOn {
        match self {
            HookEvent::PreToolUse
            | HookEvent::PostToolUse
            | HookEvent::PostToolUseFailure
            | HookEvent::PermissionRequest => MatchOn::Tool,
            HookEvent::SessionStart
            | HookEvent::SubagentStart
            | HookEvent::PreCompact
            | HookEvent::PostCompact
            | HookEvent::StopFailure
            | HookEvent::Notification
            | HookEvent::UserPromptExpansion
            | HookEvent::InstructionsLoaded
            | HookEvent::SessionEnd => MatchOn::Occasion,
            HookEvent::UserPromptSubmit
            | HookEvent::PostToolBatch
            | HookEvent::Stop
            | HookEvent::SubagentStop
            | HookEvent::TeammateIdle
            | HookEvent::TaskCreated
            | HookEvent::TaskCompleted => MatchOn::Nothing,
        }
    }
}

impl std::fmt::Display for HookEvent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for event in HookEvent::ALL {
            assert_eq!(HookEvent::parse(event.as_str()), Some(event));
        }
        assert_eq!(HookEvent::parse("Elicitation"), None);
    }
}
