//! The scripted session of the headless-contract test: one sentence and one shell call, then
//! an answer quoting the call's output. Shared by the recording server
//! (`examples/contract_model.rs`) and the contract test, so both see the same model.

use crate::recorded::Recorded;
use crate::script::{Reply, Step};
use serde_json::json;

/// What the shell call runs.
pub const COMMAND: &str = "echo contract";

/// The answer to one request of the contract session.
pub fn step(req: &Recorded) -> Step {
    if let Some((output, _)) = req.last_tool_result() {
        return Step::reply(
            Reply::text(format!("The command printed: {}", output.trim())).usage(120, 12),
        );
    }
    let tools = req.tool_names();
    let shell = if tools.iter().any(|t| t == "Bash") {
        "Bash"
    } else if tools.iter().any(|t| t == "bash") {
        "bash"
    } else {
        // A side request without tools (a title, a summary): a plain answer.
        return Step::reply(Reply::text("contract session").usage(10, 3));
    };
    Step::reply(
        Reply::text("I'll run it.")
            .with_tool(
                shell,
                json!({"command": COMMAND, "description": "Print a word"}),
            )
            .usage(100, 20),
    )
}
