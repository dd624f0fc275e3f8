//! Runs the fake model server on its own, for trying troupe by hand: built with the release
//! build (`cargo build --release --bins --example fake_model`), `target/release/examples/
//! fake_model [PORT]` prints the environment to export (the port is random unless given).
//! Every agent gets the same behaviour, for each new prompt: one mentioning "list" runs `ls`,
//! then the model answers with what it printed; "touch NAME" runs `touch NAME` (a command that
//! needs permission); anything else is echoed back. Only a tool result that answers the
//! model's own call is reported: a later prompt gets its own answer.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code may panic on a broken fixture

use serde_json::json;
use troupe_protocol::ContentBlock;
use troupe_testkit::{FakeServer, Reply, Step, Wire};

fn main() {
    let port = match std::env::args().nth(1).map(|a| a.parse::<u16>()) {
        None => 0,
        Some(Ok(port)) => port,
        Some(Err(e)) => {
            eprintln!("usage: fake_model [PORT] ({e})");
            std::process::exit(2);
        }
    };
    let server = FakeServer::start_on(port);
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
        if last.contains("list") {
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
    for (key, value) in server.env(Wire::Anthropic) {
        println!("export {key}={value}");
    }
    println!("# fake model server on {} — Ctrl-C to stop", server.url());
    loop {
        std::thread::park();
    }
}
