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
use crate::tools::{lead_tools, ReadInbox, SendMessage};
use std::sync::Arc;
use troupe_agent::{Extension, ExtensionContext, InboxSource, ToolGate};
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
        lead_tools(&self.team)
    }

    fn prompt_sections(&self, _cx: &ExtensionContext<'_>) -> Vec<String> {
        vec![
            crate::prompt::lead_section(self.team.name()),
            protocols::lead_section(),
            crate::board::lead_section(),
        ]
    }

    fn inbox(&self, _cx: &ExtensionContext<'_>) -> Option<Arc<dyn InboxSource>> {
        Some(Arc::new(MailboxInbox::new(
            self.team.shared().store.clone(),
            LEAD,
        )))
    }
}

/// What being on a team adds to a teammate agent, in process or as its own process.
pub struct TeammateExtension {
    shared: Arc<TeamShared>,
    spec: MemberSpec,
    /// `Some(approved)` in plan mode, read once from the roster when the agent is built.
    plan: Option<bool>,
}

impl TeammateExtension {
    /// The extension for the teammate incarnation `spec`; reads its plan mode from the roster.
    pub fn new(shared: Arc<TeamShared>, spec: MemberSpec) -> Result<TeammateExtension, TeamError> {
        let plan = protocols::plan_state(shared.store.as_ref(), &spec)?;
        Ok(TeammateExtension { shared, spec, plan })
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
        tools.extend(crate::tools::tasks::task_tools(&self.shared));
        tools
    }

    fn prompt_sections(&self, _cx: &ExtensionContext<'_>) -> Vec<String> {
        vec![
            crate::prompt::teammate_section(),
            protocols::teammate_section(self.plan),
            crate::board::teammate_section(&self.spec),
        ]
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
}
