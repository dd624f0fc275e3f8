//! What the team re-states at the head of a compacted conversation, so nobody forgets who they
//! are: a teammate's identity (name, role, team, lead), its task and worktree; the lead's team
//! as it stands now (roster, statuses, tasks in progress). Read fresh at each compaction.

use crate::shared::TeamShared;
use crate::spec::{MemberSpec, LEAD};
use troupe_protocol::{Roster, Task};

/// A teammate's re-statement.
pub async fn teammate(
    shared: &TeamShared,
    spec: &MemberSpec,
    own_worktree: Option<&str>,
) -> String {
    let team = &shared.config.team;
    let mut text = format!(
        "<identity>\nYou are '{}', a {} on team '{team}'. Your lead is '{LEAD}'; your final message of each work phase reaches the lead. You are a persistent teammate: when you finish you go idle and wake when mail arrives.",
        spec.name, spec.role
    );
    let tasks = board(shared).await;
    let mine = crate::board::tasks_of(&tasks, &spec.name);
    if mine.is_empty() {
        text.push_str("\nYou hold no task in progress on the board.");
    }
    for task in &mine {
        text.push_str(&format!(
            "\nYour task in progress: #{} {}",
            task.id, task.subject
        ));
        if !task.description.trim().is_empty() {
            text.push_str(&format!(" — {}", one_paragraph(&task.description)));
        }
        if let Some(tree) = &task.worktree {
            text.push_str(&format!(" (in worktree '{tree}')"));
        }
    }
    match own_worktree {
        Some(tree) => text.push_str(&format!(
            "\nYou work in your own git worktree '{tree}' for your whole life."
        )),
        None if mine.iter().all(|t| t.worktree.is_none()) => {
            text.push_str("\nYou work in the team's shared workspace.")
        }
        None => {}
    }
    text.push_str("\n</identity>");
    text
}

/// The lead's re-statement: the team now.
pub async fn lead(shared: &TeamShared) -> String {
    let roster = match shared.roster_view().await {
        Ok(roster) => roster,
        Err(e) => {
            tracing::warn!(error = %e, "could not read the roster to re-state the team");
            Roster::new(shared.config.team.clone(), LEAD)
        }
    };
    team_text(&roster, &board(shared).await)
}

/// The lead's re-statement from a roster and the board.
pub fn team_text(roster: &Roster, tasks: &[Task]) -> String {
    let mut text = format!(
        "<team>\nYou are '{LEAD}', the lead of team '{}'. Teammates keep their own conversations; reach them with send_message, and their reports arrive in your inbox.",
        roster.team
    );
    if roster.members.is_empty() {
        text.push_str("\nNo teammates yet.");
    }
    for m in &roster.members {
        text.push_str(&format!(
            "\n- {} ({}): {}",
            m.name,
            m.role,
            m.status.as_str()
        ));
        for task in crate::board::tasks_of(tasks, &m.name) {
            text.push_str(&format!(", task #{} {}", task.id, task.subject));
        }
        if let Some(tree) = &m.worktree {
            text.push_str(&format!(", worktree '{tree}'"));
        }
    }
    let open = tasks
        .iter()
        .filter(|t| !t.status.is_terminal() && t.owner.is_none())
        .count();
    if open > 0 {
        text.push_str(&format!(
            "\n{open} task(s) on the board wait for an owner (list_tasks shows them)."
        ));
    }
    text.push_str("\n</team>");
    text
}

async fn board(shared: &TeamShared) -> Vec<Task> {
    match shared.store.list_tasks(&Default::default()).await {
        Ok(list) => list.tasks,
        Err(e) => {
            tracing::warn!(error = %e, "could not read the task board to re-state it");
            Vec::new()
        }
    }
}

/// The first paragraph of a text, cut to 300 characters.
fn one_paragraph(text: &str) -> String {
    let first = text.split("\n\n").next().unwrap_or("").replace('\n', " ");
    if first.chars().count() > 300 {
        format!("{}…", first.chars().take(300).collect::<String>())
    } else {
        first
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use troupe_protocol::{AgentStatus, Member};

    #[test]
    fn the_team_text_names_every_member_and_its_state() {
        let mut roster = Roster::new("demo", LEAD);
        let mut alice = Member::new("alice", "tester", 0, 1);
        alice.status = AgentStatus::Idle;
        roster.members.push(alice);
        roster.members.push(Member::new("bob", "writer", 0, 1));
        let text = team_text(&roster, &[]);
        assert!(text.contains("lead of team 'demo'"), "{text}");
        assert!(text.contains("- alice (tester): idle"), "{text}");
        assert!(text.contains("- bob (writer): working"), "{text}");
        let empty = team_text(&Roster::new("demo", LEAD), &[]);
        assert!(empty.contains("No teammates yet"));
    }
}
