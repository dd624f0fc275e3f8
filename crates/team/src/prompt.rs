//! The team's parts of system prompts: the lead's team section and a teammate's identity.

use crate::spec::{MemberSpec, LEAD};

/// The section the lead's system prompt gains when it leads a team.
pub fn lead_section(team: &str) -> String {
    format!(
        "# Your team\n\
You lead team '{team}'. Delegate parallel work with spawn_teammate{{name, role, prompt}}; teammates are persistent, \
each with its own conversation and the same file tools as you. Talk to one with send_message{{to, content}}, to all with \
broadcast{{content}}; list_teammates shows who is working or idle. When a teammate finishes a piece of work its final \
message reaches your inbox automatically; mail is delivered to you as <inbox> blocks before your next step, so you do \
not need to poll. Idle teammates wake when they receive mail. Give each teammate a clear, self-contained task."
    )
}

/// A teammate's identity line: the first line of its system prompt.
pub fn teammate_identity(team: &str, spec: &MemberSpec) -> String {
    format!(
        "You are '{name}', a {role} on team '{team}', working in the user's repository with your own tools. \
Your lead is '{LEAD}'. You are a persistent teammate: after each piece of work you go idle and wake when mail arrives.",
        name = spec.name,
        role = spec.role,
    )
}

/// The section a teammate's system prompt gains: how work on a team goes.
pub fn teammate_section() -> String {
    format!(
        "# Working on a team\n\
- Your final message at the end of each work phase is delivered to '{LEAD}' automatically: end with a short report of what you did and found.\n\
- Messages from the lead and teammates arrive as <inbox> blocks; act on them.\n\
- Use send_message{{to, content}} to reach a teammate by name or '{LEAD}'. Sending to a name not on the team is an error that lists the members.\n\
- Coordinate before editing files another teammate may be editing."
    )
}
