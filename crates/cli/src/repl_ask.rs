//! Permission questions in the REPL: the approver hands each question to the REPL loop, which
//! shows it and takes the person's next line as the answer, so the question never competes
//! with the line editor for the terminal.

use async_trait::async_trait;
use std::collections::HashSet;
use std::sync::Mutex;
use tokio::sync::{mpsc, oneshot};
use troupe_agent::{Approval, Approver, Question};

/// One question waiting for the person.
pub struct Ask {
    /// The question, ready to print.
    pub text: String,
    /// Where the person's answer goes.
    pub reply: oneshot::Sender<String>,
}

/// Asks the person at the REPL before a tool call that needs permission.
pub struct ReplApprover {
    always: Mutex<HashSet<String>>,
    asks: mpsc::UnboundedSender<Ask>,
}

impl ReplApprover {
    /// An approver and the receiving end the REPL loop answers from.
    pub fn new() -> (ReplApprover, mpsc::UnboundedReceiver<Ask>) {
        let (asks, rx) = mpsc::unbounded_channel();
        (
            ReplApprover {
                always: Mutex::new(HashSet::new()),
                asks,
            },
            rx,
        )
    }
}

/// What a permission question shows of the call: a shell command in full, every line of it
/// (a one-line summary would hide what follows the first newline from the person approving),
/// otherwise the usual summary. The printer makes control characters visible.
fn question_detail(tool: &str, input: &serde_json::Value) -> String {
    match input.get("command").and_then(serde_json::Value::as_str) {
        Some(command) if tool == "bash" && command.contains('\n') => {
            format!("\n    {}", command.trim_end().replace('\n', "\n    "))
        }
        _ => troupe_tools::summarize_input(tool, input),
    }
}

#[async_trait]
impl Approver for ReplApprover {
    async fn approve(&self, question: Question<'_>) -> Approval {
        let Question {
            agent,
            tool,
            input,
            reason,
            ..
        } = question;
        if self
            .always
            .lock()
            .map(|set| set.contains(tool))
            .unwrap_or(false)
        {
            return Approval::Allow;
        }
        let summary = question_detail(tool, input);
        let text = format!(
            "{agent} wants to run {tool}: {summary}\n  ({reason})\n  Allow? [y]es / [n]o / [a]lways allow {tool} this session"
        );
        let (reply, answer) = oneshot::channel();
        if self.asks.send(Ask { text, reply }).is_err() {
            return Approval::Deny(format!("nobody is at the prompt to allow this {tool} call"));
        }
        match answer.await.map(|a| a.trim().to_ascii_lowercase()) {
            Ok(a) if a == "y" || a == "yes" => Approval::Allow,
            Ok(a) if a == "a" || a == "always" => {
                if let Ok(mut set) = self.always.lock() {
                    set.insert(tool.to_string());
                }
                Approval::Allow
            }
            _ => Approval::Deny(format!("the user refused this {tool} call")),
        }
    }
}
