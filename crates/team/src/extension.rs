//! The team as agent extensions: what leading a team adds to the lead (team and protocol
//! tools, the team's prompt sections, the lead's mailbox) and what being on one adds to a
//! teammate (mail and protocol tools, the stop and plan gates, its prompt sections, its mailbox).
//! Registered once on the [`AgentBuilder`](troupe_agent::AgentBuilder), for every kind of agent.

use crate::error::TeamError;
use crate::inbox::MailboxInbox;
use crate::protocols;
use crate::runtime::Team;
use crate::shared::TeamShared;
use crate::spec::{MemberSpec, LEAD};
use crate::tools::{lead_tools, worktree_tools, ReadInbox, SendMessage};
use crate::worktree::bind::WorktreeSource;
use crate::worktree::WorktreeRecord;
use std::path::PathBuf;
use std::sync::Arc;
use troupe_agent::{
    Extension, ExtensionContext, InboxSource, Restatement, ToolGate, Watcher, WorkspaceSource,
};
use troupe_tools::DynTool;

/// What leading a team adds to the lead agent.
pub struct LeadExtension {
    team: Team,
}

impl LeadExtension {
    /// The extension for the lead of `team`.
    pub fn new(team: Team) -> LeadExtension {
        LeadExtension { team }
    }
}

impl Extension for LeadExtension {
    fn name(&self) -> &str {
        "team-lead"
    }

    fn tools(&self, _cx: &ExtensionContext<'_>) -> Vec<DynTool> {
        let mut tools = lead_tools(&self.team);
        tools.extend(worktree_tools(self.team.shared()));
        tools
    }

    fn prompt_sections(&self, _cx: &ExtensionContext<'_>) -> Vec<String> {
        let mut sections = vec![
            crate::prompt::lead_section(self.team.name()),
            protocols::lead_section(),
            crate::board::lead_section(),
        ];
        sections.push(crate::worktree::prompt::section(LEAD));
        sections
    }

    fn workspace_source(&self, _cx: &ExtensionContext<'_>) -> Option<Arc<dyn WorkspaceSource>> {
        Some(Arc::new(WorktreeSource::new(
            self.team.shared().clone(),
            LEAD,
            None,
        )))
    }

    fn inbox(&self, _cx: &ExtensionContext<'_>) -> Option<Arc<dyn InboxSource>> {
        Some(Arc::new(MailboxInbox::new(
            self.team.shared().store.clone(),
            LEAD,
        )))
    }

    fn restate(&self, _cx: &ExtensionContext<'_>) -> Option<Restatement> {
        let shared = self.team.shared().clone();
        Some(Box::pin(async move { crate::restate::lead(&shared).await }))
    }

    fn watcher(&self, _cx: &ExtensionContext<'_>) -> Option<Arc<dyn Watcher>> {
        Some(Arc::new(TeamWatcher(self.team.shared().clone())))
    }
}

/// Keeps the team's view of an agent current: its running token total in the store's
/// presence after every reply, each compaction in the event log.
struct TeamWatcher(Arc<TeamShared>);

impl Watcher for TeamWatcher {
    fn usage(&self, agent: &str, usage: &troupe_protocol::AgentUsage) {
        self.0.set_live_usage(agent, usage.clone());
    }

    fn compacted(&self, agent: &str, c: &troupe_agent::Compaction) {
        let event = troupe_protocol::Event::new(
            troupe_protocol::EventKind::Compacted,
            Some(agent),
            format!(
                "{}: {} → {} tokens ({} messages summarized, {} kept)",
                c.reason.as_str(),
                c.tokens_before,
                c.tokens_after,
                c.summarized,
                c.kept
            ),
            troupe_agent::transcript::now_ms(),
        )
        .with_data(serde_json::json!(c));
        // An fsync'd append: through the ordered writer, off the agent's task.
        self.0.record_later(event);
    }
}

/// What being on a team adds to a teammate agent, in process or as its own process.
pub struct TeammateExtension {
    shared: Arc<TeamShared>,
    spec: MemberSpec,
    /// `Some(approved)` in plan mode, read once from the roster when the agent is built.
    plan: Option<bool>,
    /// Its own worktree and the directory its tools work in, when it has one for life.
    own_worktree: Option<(WorktreeRecord, PathBuf)>,
}

impl TeammateExtension {
    /// The extension for the teammate incarnation `spec`; reads its plan mode from the roster.
    pub async fn new(
        shared: Arc<TeamShared>,
        spec: MemberSpec,
    ) -> Result<TeammateExtension, TeamError> {
        let plan = protocols::plan_state(shared.store.as_ref(), &spec).await?;
        Ok(TeammateExtension {
            shared,
            spec,
            plan,
            own_worktree: None,
        })
    }

    /// The same extension for a teammate that works in its own worktree (`dir`) for life: its
    /// system prompt says so and its tools stay bound there.
    pub fn with_own_worktree(mut self, record: WorktreeRecord, dir: PathBuf) -> TeammateExtension {
        self.own_worktree = Some((record, dir));
        self
    }
}

impl Extension for TeammateExtension {
    fn name(&self) -> &str {
        "team-member"
    }

    fn tools(&self, cx: &ExtensionContext<'_>) -> Vec<DynTool> {
        let mut tools: Vec<DynTool> = vec![
            Arc::new(SendMessage::new(self.shared.clone())),
            Arc::new(ReadInbox::new(self.shared.clone())),
        ];
        tools.extend(protocols::teammate_tools(&self.shared, &self.spec, cx.stop));
        tools.extend(worktree_tools(&self.shared));
        tools.extend(crate::tools::tasks::task_tools(&self.shared));
        tools
    }

    fn prompt_sections(&self, _cx: &ExtensionContext<'_>) -> Vec<String> {
        let mut sections = vec![
            crate::prompt::teammate_section(),
            protocols::teammate_section(self.plan),
            crate::board::teammate_section(&self.spec),
        ];
        sections.push(crate::worktree::prompt::section(&self.spec.name));
        sections
    }

    fn agent_prompt_sections(&self, _cx: &ExtensionContext<'_>) -> Vec<String> {
        // After the part every teammate of the same tools shares (and reads from cache).
        self.own_worktree
            .iter()
            .map(|(record, dir)| crate::worktree::prompt::own_section(record, dir))
            .collect()
    }

    fn workspace_source(&self, _cx: &ExtensionContext<'_>) -> Option<Arc<dyn WorkspaceSource>> {
        let own = self.own_worktree.as_ref().map(|(r, _)| r.name.clone());
        Some(Arc::new(WorktreeSource::new(
            self.shared.clone(),
            &self.spec.name,
            own,
        )))
    }

    fn gates(&self, cx: &ExtensionContext<'_>) -> Vec<Arc<dyn ToolGate>> {
        protocols::teammate_gates(&self.shared, &self.spec, cx.stop, self.plan)
    }

    fn inbox(&self, _cx: &ExtensionContext<'_>) -> Option<Arc<dyn InboxSource>> {
        Some(Arc::new(MailboxInbox::new(
            self.shared.store.clone(),
            &self.spec.name,
        )))
    }

    fn restate(&self, _cx: &ExtensionContext<'_>) -> Option<Restatement> {
        let own = self.own_worktree.as_ref().map(|(r, _)| r.name.clone());
        let (shared, spec) = (self.shared.clone(), self.spec.clone());
        Some(Box::pin(async move {
            crate::restate::teammate(&shared, &spec, own.as_deref()).await
        }))
    }

    fn watcher(&self, _cx: &ExtensionContext<'_>) -> Option<Arc<dyn Watcher>> {
        Some(Arc::new(TeamWatcher(self.shared.clone())))
    }

    /// Its mail, protocol, board and worktree tools are how a teammate takes part at all: a
    /// teammate restricted to some tools keeps them.
    fn tools_always_kept(&self) -> bool {
        true
    }
}
