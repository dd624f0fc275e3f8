//! The conversation as the provider is sent it.

use troupe_model::ToolSpec;
use troupe_protocol::ChatMessage;
use troupe_tools::Registry;

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
            input_schema: t.input_schema(),
        })
        .collect()
}
