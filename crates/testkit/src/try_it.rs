//! The behaviour of the try-it model (README, "Try it without an API key"): the fake model
//! server answering every agent the same way, for each new prompt. One mentioning "list" runs
//! `ls`, then the model answers with what it printed; "touch NAME" runs `touch NAME` (a command
//! that needs permission); "Spawn NAME (ROLE) and NAME (ROLE)…" spawns those teammates, each
//! told to say hello; anything else is echoed back (`lead heard: …`). Only a tool result
//! that answers the model's own call is reported: a later prompt gets its own answer.
//! `examples/fake_model.rs` serves it on a port; the README check (`cli/tests/readme.rs`)
//! runs the README's commands against it.

use crate::{FakeServer, Reply, Step};
use serde_json::json;
use troupe_protocol::ContentBlock;

/// Makes `server` answer as the try-it model.
pub fn install(server: &FakeServer) {
    server.set_fallback(|req| {
        let messages = req.messages();
        // The last message answers a call of the model's own: report what the tool returned.
        let answered = messages.last().and_then(|m| {
            m.content.iter().rev().find_map(|b| match b {
                ContentBlock::ToolResult { content, .. } => Some(content.clone()),
                _ => None,
            })
        });
        if let Some(output) = answered {
            return Step::reply(Reply::text(format!("The tool said:\n{output}")));
        }
        let last = messages.last().map(|m| m.text()).unwrap_or_default();
        let team = spawns(&last);
        if !team.is_empty() {
            let mut reply = Reply::text("Spawning the team.");
            for (name, role) in team {
                let prompt = format!("You are {name}, the {role}. Say hello to the lead.");
                let input = json!({"name": name, "role": role, "prompt": prompt});
                reply = reply.with_tool("spawn_teammate", input);
            }
            Step::reply(reply)
        } else if last.contains("list") {
            Step::tool("bash", json!({"command": "ls"}))
        } else if let Some(name) = last.strip_prefix("touch ") {
            Step::tool(
                "bash",
                json!({ "command": format!("touch {}", name.trim()) }),
            )
        } else {
            Step::reply(Reply::text(format!("{} heard: {}", req.agent, last.trim())))
        }
    });
}

/// The teammates a prompt starting "Spawn" names, as `NAME (ROLE)` pairs.
fn spawns(prompt: &str) -> Vec<(String, String)> {
    let Some(rest) = prompt.trim_start().strip_prefix("Spawn ") else {
        return Vec::new();
    };
    let sentence = rest.split('.').next().unwrap_or_default();
    let mut out = Vec::new();
    let mut words = sentence.split_whitespace().peekable();
    while let Some(word) = words.next() {
        let Some(role) = words
            .peek()
            .and_then(|next| next.strip_prefix('('))
            .and_then(|r| r.strip_suffix(')'))
        else {
            continue;
        };
        out.push((word.to_string(), role.to_string()));
        words.next();
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn spawn_names_each_teammate_with_its_role() {
        let team =
            super::spawns("Spawn alice (coder) and bob (tester). Have alice write greet.py.");
        assert_eq!(
            team,
            [
                ("alice".to_string(), "coder".to_string()),
                ("bob".to_string(), "tester".to_string())
            ]
        );
        assert!(super::spawns("list the files").is_empty());
    }
}
