//! A server's prompts as slash commands, as Claude Code offers them: each prompt of a server
//! that declares the prompts capability is `/mcp__<server>__<prompt>`; its words fill the
//! prompt's declared arguments in order, and the text of the messages `prompts/get` returns is
//! what the model is sent.

#[cfg(feature = "client")]
use crate::protocol::{GetPromptResult, RemotePrompt};
use serde::Serialize;
use serde_json::Value;

/// One prompt of a connected server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct McpPrompt {
    /// The command's name without its slash: `mcp__<server>__<prompt>`.
    pub name: String,
    /// The server it belongs to.
    pub server: String,
    /// The prompt's name on the server.
    pub remote: String,
    /// What the server says it is for.
    pub description: String,
    /// Its declared arguments, in order.
    pub arguments: Vec<PromptArgument>,
}

/// One declared argument of a prompt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PromptArgument {
    /// Its name.
    pub name: String,
    /// Whether the server needs it.
    pub required: bool,
}

impl McpPrompt {
    /// The troupe view of `prompt` on `server`.
    #[cfg(feature = "client")]
    pub(crate) fn new(server: &str, prompt: &RemotePrompt) -> McpPrompt {
        McpPrompt {
            name: crate::names::tool_name(server, &prompt.name),
            server: server.to_string(),
            remote: prompt.name.clone(),
            description: prompt
                .description
                .clone()
                .or_else(|| prompt.title.clone())
                .unwrap_or_default(),
            arguments: prompt
                .arguments
                .iter()
                .flatten()
                .map(|a| PromptArgument {
                    name: a.name.clone(),
                    required: a.required.unwrap_or(false),
                })
                .collect(),
        }
    }

    /// The arguments as the command's hint: `<city> [state]`.
    pub fn argument_hint(&self) -> String {
        self.arguments
            .iter()
            .map(|a| match a.required {
                true => format!("<{}>", a.name),
                false => format!("[{}]", a.name),
            })
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// The `prompts/get` arguments for the words typed after the command: each word fills the
    /// next declared argument, and words beyond the last argument join it. A required argument
    /// left without a word is an error showing how to call the command.
    pub fn arguments_for(&self, words: &str) -> Result<serde_json::Map<String, Value>, String> {
        let words: Vec<&str> = words.split_whitespace().collect();
        let mut arguments = serde_json::Map::new();
        for (i, argument) in self.arguments.iter().enumerate() {
            let value = match (i + 1 == self.arguments.len(), words.get(i..)) {
                (true, Some(rest)) if !rest.is_empty() => rest.join(" "),
                (false, Some([word, ..])) => word.to_string(),
                _ if argument.required => {
                    return Err(format!(
                        "/{} needs its argument `{}`: /{} {}",
                        self.name,
                        argument.name,
                        self.name,
                        self.argument_hint()
                    ))
                }
                _ => continue,
            };
            arguments.insert(argument.name.clone(), Value::String(value));
        }
        Ok(arguments)
    }
}

/// The text the model is sent for a `prompts/get` answer: every message's text (an embedded
/// resource's text too), in order, a blank line between them. Images and other binary content
/// are left out.
#[cfg(feature = "client")]
pub(crate) fn prompt_text(result: &GetPromptResult) -> String {
    result
        .messages
        .iter()
        .filter_map(|m| {
            let content = &m.content;
            content["text"]
                .as_str()
                .or_else(|| content["resource"]["text"].as_str())
                .map(str::to_string)
        })
        .collect::<Vec<_>>()
        .join("\n\n")
}

#[cfg(all(test, feature = "client"))]
mod tests {
    #![allow(clippy::unwrap_used)] // test code may panic on a broken fixture
    use super::*;
    use serde_json::json;

    fn weather() -> McpPrompt {
        let prompt: RemotePrompt = serde_json::from_value(json!({
            "name": "args-prompt",
            "description": "Weather",
            "arguments": [{"name": "city", "required": true}, {"name": "state"}],
        }))
        .unwrap();
        McpPrompt::new("everything", &prompt)
    }

    #[test]
    fn words_fill_the_declared_arguments_in_order() {
        let prompt = weather();
        assert_eq!(prompt.name, "mcp__everything__args-prompt");
        assert_eq!(prompt.argument_hint(), "<city> [state]");
        let args = prompt.arguments_for("Paris  Ile de France").unwrap();
        assert_eq!(args["city"], "Paris");
        assert_eq!(args["state"], "Ile de France");
        let args = prompt.arguments_for("Paris").unwrap();
        assert_eq!(args.len(), 1);
        let err = prompt.arguments_for("").unwrap_err();
        assert!(
            err.contains("`city`") && err.contains("<city> [state]"),
            "{err}"
        );
    }

    #[test]
    fn the_messages_text_is_joined() {
        let result: GetPromptResult = serde_json::from_value(json!({"messages": [
            {"role": "user", "content": {"type": "text", "text": "first"}},
            {"role": "assistant", "content": {"type": "image", "data": "", "mimeType": "image/png"}},
            {"role": "assistant", "content": {"type": "resource", "resource": {"uri": "a", "text": "second"}}},
        ]}))
        .unwrap();
        assert_eq!(prompt_text(&result), "first\n\nsecond");
    }
}
