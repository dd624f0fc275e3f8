//! The conversation as Chat Completions messages.

use super::*;

/// Maps the conversation to Chat Completions messages: the system prompt first; each
/// tool_result its own `tool` message (placed before any text of the same user message, as
/// tool messages must directly follow the assistant's calls); images tool results returned in
/// a user message after them, as `image_url` parts with data URLs (tool messages carry text
/// only); a prompt's images as `image_url` parts after its text; thinking dropped.
pub(crate) fn map_messages(system: &str, messages: &[ChatMessage]) -> Vec<Value> {
    let mut out = Vec::with_capacity(messages.len() + 1);
    if !system.is_empty() {
        out.push(json!({"role": "system", "content": system}));
    }
    for message in messages {
        let mut texts: Vec<&str> = Vec::new();
        let mut tool_calls: Vec<Value> = Vec::new();
        let mut image_parts: Vec<Value> = Vec::new();
        let mut prompt_images: Vec<Value> = Vec::new();
        for block in &message.content {
            match block {
                ContentBlock::Text { text } => texts.push(text),
                ContentBlock::Image { source } => prompt_images.push(image_url_part(source)),
                ContentBlock::ToolUse { id, name, input } => tool_calls.push(json!({
                    "id": id,
                    "type": "function",
                    "function": {"name": name, "arguments": input.to_string()},
                })),
                ContentBlock::ToolResult {
                    tool_use_id,
                    content,
                    is_error,
                    images,
                } => {
                    // The format has no error flag, so the text carries it.
                    let mut content = if *is_error {
                        format!("Error: {content}")
                    } else {
                        content.clone()
                    };
                    if !images.is_empty() {
                        content.push_str(&format!(
                            "\n[{} image(s) returned; shown in the next message]",
                            images.len()
                        ));
                        image_parts.push(json!({
                            "type": "text",
                            "text": format!("Image(s) returned by tool call {tool_use_id}:"),
                        }));
                        image_parts.extend(images.iter().map(image_url_part));
                    }
                    out.push(
                        json!({"role": "tool", "tool_call_id": tool_use_id, "content": content}),
                    );
                }
                ContentBlock::Thinking { .. } | ContentBlock::RedactedThinking { .. } => {}
            }
        }
        let text = texts.join("\n\n");
        match message.role {
            Role::User if !image_parts.is_empty() || !prompt_images.is_empty() => {
                if !text.is_empty() {
                    image_parts.push(json!({"type": "text", "text": text}));
                }
                image_parts.extend(prompt_images);
                out.push(json!({"role": "user", "content": image_parts}));
            }
            Role::User => {
                if !text.is_empty() {
                    out.push(json!({"role": "user", "content": text}));
                }
            }
            Role::Assistant => {
                // `content` is always a string: several local servers reject null.
                let mut entry = json!({"role": "assistant", "content": text});
                if !tool_calls.is_empty() {
                    entry["tool_calls"] = Value::Array(tool_calls);
                }
                out.push(entry);
            }
        }
    }
    out
}

/// An image as a Chat Completions content part: a `data:` URL.
fn image_url_part(image: &ImageData) -> Value {
    json!({
        "type": "image_url",
        "image_url": {"url": format!("data:{};base64,{}", image.media_type, image.data)},
    })
}
