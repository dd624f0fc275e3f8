//! The agent's todo list (s20; Claude Code's `TodoWrite` shape): `todo_write{todos}` replaces
//! the whole list, the list is readable by whoever shows it (the REPL, the json result), and
//! when an unfinished list has not been touched for [`REMIND_AFTER_ROUNDS`] model calls a short
//! reminder is put before the next one.

use crate::extension::{
    Extension, ExtensionContext, InboxError, InboxFuture, InboxSource, MailBatch, MailItem,
};
use async_trait::async_trait;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::sync::{Arc, Mutex, PoisonError};
use troupe_protocol::{ChatMessage, ContentBlock};
use troupe_tools::{parse_input, schema_of, DynTool, Effect, Tool, ToolContext, ToolOutput};

/// Model calls without a `todo_write` after which an unfinished list earns a reminder.
pub const REMIND_AFTER_ROUNDS: u32 = 3;
/// The tool's name.
pub const TOOL_NAME: &str = "todo_write";

/// Where an item stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TodoStatus {
    /// Not started.
    Pending,
    /// Being worked on (one at a time).
    InProgress,
    /// Done.
    Completed,
}

/// One item of the list.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TodoItem {
    /// What is to be done, in the imperative ("Run the tests").
    pub content: String,
    /// Where it stands.
    pub status: TodoStatus,
    /// Present continuous form, shown while in progress ("Running the tests").
    pub active_form: String,
}

/// Input of `todo_write`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct TodoWriteInput {
    /// The whole updated list (it replaces the previous one).
    pub todos: Vec<TodoItem>,
}

#[derive(Debug, Default)]
struct State {
    items: Vec<TodoItem>,
    /// Model calls since the list was last written.
    idle_rounds: u32,
    /// Reminders given, for unique mail ids.
    reminders: u64,
}

/// One agent's todo list, shared by its tool, its reminder and whoever shows it.
#[derive(Debug, Clone, Default)]
pub struct TodoList {
    state: Arc<Mutex<State>>,
}

impl TodoList {
    /// The items now.
    pub fn items(&self) -> Vec<TodoItem> {
        self.lock().items.clone()
    }

    /// Restores the list from a conversation (the last `todo_write` call in it), on resume;
    /// without one, from `carried` (the list a compaction carried over).
    pub fn restore_or(&self, messages: &[ChatMessage], carried: &[TodoItem]) {
        if !self.restore(messages) {
            self.lock().items = carried.to_vec();
        }
    }

    /// Restores the list from a conversation (the last `todo_write` call in it), on resume;
    /// false when it holds none.
    pub fn restore(&self, messages: &[ChatMessage]) -> bool {
        let last = messages
            .iter()
            .rev()
            .flat_map(|m| m.content.iter().rev())
            .find_map(|b| match b {
                ContentBlock::ToolUse { name, input, .. } if name == TOOL_NAME => {
                    serde_json::from_value::<TodoWriteInput>(input.clone()).ok()
                }
                _ => None,
            });
        match last {
            Some(input) => {
                self.lock().items = input.todos;
                true
            }
            None => false,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        // The state is plain data, consistent between statements: a panic elsewhere leaves
        // nothing half-written.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Refuses lists a person could not follow: more than one item in progress, empty texts.
fn check(items: &[TodoItem]) -> Result<(), String> {
    if let Some(i) = items.iter().position(|t| t.content.trim().is_empty()) {
        return Err(format!("item {} has no content", i + 1));
    }
    let active = items
        .iter()
        .filter(|t| t.status == TodoStatus::InProgress)
        .count();
    if active > 1 {
        return Err(format!(
            "{active} items are in_progress; keep exactly one in progress at a time"
        ));
    }
    Ok(())
}

/// The list as a checklist, one line per item.
pub fn checklist(items: &[TodoItem]) -> String {
    items
        .iter()
        .map(|t| {
            let mark = match t.status {
                TodoStatus::Pending => "☐",
                TodoStatus::InProgress => "◐",
                TodoStatus::Completed => "☒",
            };
            let text = if t.status == TodoStatus::InProgress && !t.active_form.is_empty() {
                &t.active_form
            } else {
                &t.content
            };
            format!("{mark} {text}")
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The `todo_write` tool.
pub struct TodoWrite {
    list: TodoList,
}

#[async_trait]
impl Tool for TodoWrite {
    fn name(&self) -> &str {
        TOOL_NAME
    }
    fn description(&self) -> &str {
        "Keep a todo list for multi-step work: send the whole updated list each time \
         (content, status pending|in_progress|completed, activeForm). Keep exactly one item \
         in_progress, mark items completed as soon as they are done."
    }
    fn input_schema(&self) -> Value {
        schema_of::<TodoWriteInput>()
    }

    fn built_schema(&self) -> Option<&'static str> {
        Some(crate::tool_schemas::TODO_WRITE)
    }
    fn effect(&self, _input: &Value) -> Effect {
        // It changes nothing outside the agent: allowed in every mode, plan mode included.
        Effect::ReadOnly
    }
    async fn call(&self, input: Value, _ctx: &ToolContext) -> ToolOutput {
        let input: TodoWriteInput = match parse_input(self.name(), input) {
            Ok(i) => i,
            Err(e) => return e,
        };
        if let Err(e) = check(&input.todos) {
            return ToolOutput::error(format!("todo list not saved: {e}"));
        }
        let text = checklist(&input.todos);
        let mut state = self.list.lock();
        state.items = input.todos;
        state.idle_rounds = 0;
        let open = state
            .items
            .iter()
            .filter(|t| t.status != TodoStatus::Completed)
            .count();
        ToolOutput::ok(format!(
            "Todo list saved ({} items, {open} open):\n{text}",
            state.items.len()
        ))
    }
}

/// The reminder: an inbox that speaks up when an unfinished list has gone stale.
struct Reminder {
    list: TodoList,
}

impl Reminder {
    fn fetch_now(&self) -> Result<MailBatch, InboxError> {
        let mut state = self.list.lock();
        let unfinished = state
            .items
            .iter()
            .any(|t| t.status != TodoStatus::Completed);
        if !unfinished {
            state.idle_rounds = 0;
            return Ok(MailBatch::default());
        }
        state.idle_rounds += 1;
        if state.idle_rounds <= REMIND_AFTER_ROUNDS {
            return Ok(MailBatch::default());
        }
        state.idle_rounds = 0;
        state.reminders += 1;
        let text = format!(
            "<system-reminder>Your todo list has not changed for {REMIND_AFTER_ROUNDS} rounds. \
             If you have made progress, update it with todo_write; this is where it stands:\n{}\
             </system-reminder>",
            checklist(&state.items)
        );
        Ok(MailBatch {
            items: vec![MailItem {
                id: format!("todo-reminder-{}-{}", std::process::id(), state.reminders),
                text,
            }],
            ack_token: Some(state.reminders),
        })
    }

    fn ack_now(&self, _batch: &MailBatch) -> Result<(), InboxError> {
        Ok(())
    }
}

/// In memory: answered at once.
impl InboxSource for Reminder {
    fn fetch(&self) -> InboxFuture<'_, MailBatch> {
        Box::pin(std::future::ready(self.fetch_now()))
    }

    fn ack<'a>(&'a self, batch: &'a MailBatch) -> InboxFuture<'a, ()> {
        Box::pin(std::future::ready(self.ack_now(batch)))
    }
}

/// Gives an agent `todo_write` and the stale-list reminder; the builder installs it on every
/// agent.
pub struct TodoExtension {
    list: TodoList,
}

impl TodoExtension {
    /// The extension over `list`.
    pub fn new(list: TodoList) -> TodoExtension {
        TodoExtension { list }
    }
}

impl Extension for TodoExtension {
    fn name(&self) -> &str {
        "todo"
    }
    fn tools(&self, _cx: &ExtensionContext<'_>) -> Vec<DynTool> {
        vec![Arc::new(TodoWrite {
            list: self.list.clone(),
        })]
    }
    fn inbox(&self, _cx: &ExtensionContext<'_>) -> Option<Arc<dyn InboxSource>> {
        Some(Arc::new(Reminder {
            list: self.list.clone(),
        }))
    }
}

#[cfg(test)]
#[path = "todo_tests.rs"]
mod tests;
