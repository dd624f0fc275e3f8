//! The team runtime: persistent named teammates running the agent loop, durable mail between
//! them, lifecycle in the roster and event log, wake-on-message, and the settle rule.
//!
//! Must not know: a store backend (it holds an `Arc<dyn TeamStore>`), provider wire formats or
//! the terminal. Agents are built through the agent crate's builder.

pub mod board;
pub mod error;
pub mod extension;
pub mod inbox;
pub mod launch;
pub mod liveness;
pub mod member;
mod member_front;
pub mod notice;
mod process;
pub mod profile;
pub mod prompt;
pub mod protocols;
pub mod render;
pub mod restate;
pub mod runtime;
pub mod settle;
pub mod shared;
pub mod spec;
pub mod store_writer;
pub mod task_hooks;
pub mod tools;
pub mod transcript_cache;
pub mod wake;
pub mod worktree;

#[cfg(test)]
mod lifecycle_tests;

pub use error::{MemberError, TeamError};
pub use extension::{LeadExtension, TeammateExtension};
pub use notice::{Notice, NoticeSink};
pub use runtime::Team;
pub use settle::SettleState;
pub use spec::{Isolation, MemberSpec, SpawnRequest, TeamConfig, TeammateMode, LEAD};

mod tool_schemas;

#[cfg(test)]
mod tool_schemas_check {
    use super::tool_schemas;
    use troupe_tools::schema::Built;

    #[test]
    fn tool_schemas_are_current() {
        let all = [
            Built::new::<crate::protocols::list::ListRequestsInput>(
                "LIST_REQUESTS",
                tool_schemas::LIST_REQUESTS,
            ),
            Built::new::<crate::protocols::permission::ReviewPermissionInput>(
                "REVIEW_PERMISSION",
                tool_schemas::REVIEW_PERMISSION,
            ),
            Built::new::<crate::protocols::plan::SubmitPlanInput>(
                "SUBMIT_PLAN",
                tool_schemas::SUBMIT_PLAN,
            ),
            Built::new::<crate::protocols::plan::ReviewPlanInput>(
                "REVIEW_PLAN",
                tool_schemas::REVIEW_PLAN,
            ),
            Built::new::<crate::protocols::shutdown::ShutdownRequestInput>(
                "SHUTDOWN_REQUEST",
                tool_schemas::SHUTDOWN_REQUEST,
            ),
            Built::new::<crate::protocols::shutdown::ShutdownResponseInput>(
                "SHUTDOWN_RESPONSE",
                tool_schemas::SHUTDOWN_RESPONSE,
            ),
            Built::new::<crate::tools::lead::BroadcastInput>("BROADCAST", tool_schemas::BROADCAST),
            Built::new::<crate::tools::lead::ListTeammatesInput>(
                "LIST_TEAMMATES",
                tool_schemas::LIST_TEAMMATES,
            ),
            Built::new::<crate::tools::lead::SpawnTeammateInput>(
                "SPAWN_TEAMMATE",
                tool_schemas::SPAWN_TEAMMATE,
            ),
            Built::new::<crate::tools::mail::SendMessageInput>(
                "SEND_MESSAGE",
                tool_schemas::SEND_MESSAGE,
            ),
            Built::new::<crate::tools::mail::ReadInboxInput>(
                "READ_INBOX",
                tool_schemas::READ_INBOX,
            ),
            Built::new::<crate::tools::task_changes::UpdateTaskInput>(
                "UPDATE_TASK",
                tool_schemas::UPDATE_TASK,
            ),
            Built::new::<crate::tools::task_changes::CompleteTaskInput>(
                "COMPLETE_TASK",
                tool_schemas::COMPLETE_TASK,
            ),
            Built::new::<crate::tools::tasks::CreateTaskInput>(
                "CREATE_TASK",
                tool_schemas::CREATE_TASK,
            ),
            Built::new::<crate::tools::tasks::ListTasksInput>(
                "LIST_TASKS",
                tool_schemas::LIST_TASKS,
            ),
            Built::new::<crate::tools::tasks::TaskIdInput>("TASK_ID", tool_schemas::TASK_ID),
            Built::new::<crate::tools::worktrees::CreateWorktreeInput>(
                "CREATE_WORKTREE",
                tool_schemas::CREATE_WORKTREE,
            ),
            Built::new::<crate::tools::worktrees::ExitWorktreeInput>(
                "EXIT_WORKTREE",
                tool_schemas::EXIT_WORKTREE,
            ),
            Built::new::<crate::tools::worktrees::RemoveWorktreeInput>(
                "REMOVE_WORKTREE",
                tool_schemas::REMOVE_WORKTREE,
            ),
            Built::new::<crate::tools::worktrees::KeepWorktreeInput>(
                "KEEP_WORKTREE",
                tool_schemas::KEEP_WORKTREE,
            ),
            Built::new::<crate::tools::worktrees::ListWorktreesInput>(
                "LIST_WORKTREES",
                tool_schemas::LIST_WORKTREES,
            ),
        ];
        assert_eq!(
            troupe_tools::schema::check(&all, env!("CARGO_MANIFEST_DIR"), "troupe-team"),
            Ok(())
        );
    }
}
