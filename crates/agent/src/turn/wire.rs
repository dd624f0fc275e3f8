//! The conversation as the provider is sent it.

use troupe_model::{InputSchema, ToolSpec};
use troupe_protocol::ChatMessage;
use troupe_tools::{Registry, Tool};

/// The conversation as sent: consecutive messages of one role merged (a user message can be
/// followed by injected mail; providers want roles to alternate).
pub fn wire_messages(messages: &[ChatMessage]) -> Vec<ChatMessage> {
    let mut out: Vec<ChatMessage> = Vec::with_capacity(messages.len());
    // A message without blocks is never sent: providers refuse empty content.
    for message in messages.iter().filter(|m| !m.content.is_empty()) {
        match out.last_mut() {
            Some(last) if last.role == message.role => {
                last.content.extend(message.content.iter().cloned())
            }
            _ => out.push(message.clone()),
        }
    }
    out
}

/// The specs of a set of tools, generated (schemas included).
pub(super) fn tool_specs_of(tools: &Registry) -> Vec<ToolSpec> {
    tools
        .iter()
        .map(|t| ToolSpec {
            name: t.name().to_string(),
            description: t.description().to_string(),
            input_schema: input_schema_of(t.as_ref()),
        })
        .collect()
}

/// A tool's input schema as requests carry it: its built-in text when it has one, else its
/// generated schema. A debug build checks the text against the schema it was written from.
pub(super) fn input_schema_of(tool: &dyn Tool) -> InputSchema {
    match tool.built_schema() {
        Some(text) => {
            #[cfg(debug_assertions)]
            check_built(tool, text);
            InputSchema::Built(text)
        }
        None => InputSchema::Given(tool.input_schema()),
    }
}

/// Panics when a built-in schema text is not its tool's schema, cleaned and printed.
#[cfg(debug_assertions)]
fn check_built(tool: &dyn Tool, text: &str) {
    let generated = troupe_tools::schema::built_text(&tool.input_schema());
    assert!(
        generated == text,
        "{}'s built-in input schema is stale: {}",
        tool.name(),
        troupe_tools::schema::REWRITE
    );
}
