//! The conversation: messages made of typed content blocks, in the shape of the Anthropic
//! Messages API (the richest of the wire formats; the OpenAI client maps to and from it).

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Who wrote a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// The person, the harness (tool results, inbox mail) — anything that is not the model.
    User,
    /// The model.
    Assistant,
}

/// One block of a message's content.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ContentBlock {
    /// Plain text.
    Text {
        /// The text itself.
        text: String,
    },
    /// Extended thinking; kept and sent back unchanged (with its signature) as Anthropic requires.
    Thinking {
        /// The model's reasoning text.
        thinking: String,
        /// Opaque signature that must accompany the block when it is sent back.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        signature: Option<String>,
    },
    /// Thinking the provider redacted; sent back verbatim.
    RedactedThinking {
        /// Opaque encrypted payload.
        data: String,
    },
    /// The model asks for a tool call.
    ToolUse {
        /// Provider-assigned id that the matching tool_result refers to.
        id: String,
        /// Tool name.
        name: String,
        /// Tool input (a JSON object).
        input: Value,
    },
    /// The outcome of a tool call, sent back as part of a user message.
    ToolResult {
        /// The id of the tool_use this answers.
        tool_use_id: String,
        /// The tool's output (text).
        content: String,
        /// True when the tool failed; the model should act on the error.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        is_error: bool,
        /// Images the tool returned beside its text (an MCP server's screenshot), sent as image
        /// blocks to providers that take them in tool results.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        images: Vec<ImageData>,
    },
    /// An image in a user message, beside the prompt's text (an `@shot.png` mention, a pasted
    /// image path, an SDK client's image block); in Anthropic's shape,
    /// `{"type":"image","source":{"type":"base64","media_type":…,"data":…}}`.
    Image {
        /// The image.
        #[serde(with = "base64_source")]
        source: ImageData,
    },
}

/// An image's `source` as Anthropic writes it: `{"type":"base64","media_type":…,"data":…}`.
mod base64_source {
    use super::ImageData;
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    #[derive(Serialize, Deserialize)]
    struct Source<'a> {
        #[serde(rename = "type")]
        kind: std::borrow::Cow<'a, str>,
        media_type: String,
        data: String,
    }

    pub(super) fn serialize<S: Serializer>(image: &ImageData, s: S) -> Result<S::Ok, S::Error> {
        Source {
            kind: "base64".into(),
            media_type: image.media_type.clone(),
            data: image.data.clone(),
        }
        .serialize(s)
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<ImageData, D::Error> {
        let source = Source::deserialize(d)?;
        if source.kind != "base64" {
            return Err(serde::de::Error::custom(format!(
                "an image source of type `{}`: only base64 images are taken",
                source.kind
            )));
        }
        Ok(ImageData {
            media_type: source.media_type,
            data: source.data,
        })
    }
}

/// An image carried in a conversation, base64-encoded as the providers take it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ImageData {
    /// Its MIME type (`image/png`, `image/jpeg`, …).
    pub media_type: String,
    /// The image bytes, base64-encoded.
    pub data: String,
}

impl ContentBlock {
    /// A text block.
    pub fn text(text: impl Into<String>) -> Self {
        ContentBlock::Text { text: text.into() }
    }

    /// A tool_result block.
    pub fn tool_result(
        tool_use_id: impl Into<String>,
        content: impl Into<String>,
        is_error: bool,
    ) -> Self {
        ContentBlock::ToolResult {
            tool_use_id: tool_use_id.into(),
            content: content.into(),
            is_error,
            images: Vec::new(),
        }
    }
}

/// One message of the conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChatMessage {
    /// Who wrote it.
    pub role: Role,
    /// Its content blocks, in order.
    pub content: Vec<ContentBlock>,
}

impl ChatMessage {
    /// A user message holding one text block.
    pub fn user_text(text: impl Into<String>) -> Self {
        ChatMessage {
            role: Role::User,
            content: vec![ContentBlock::text(text)],
        }
    }

    /// A user message holding `text` (when there is any) and then one image block per image.
    pub fn user_with_images(text: impl Into<String>, images: Vec<ImageData>) -> Self {
        let text = text.into();
        let mut content = Vec::with_capacity(images.len() + 1);
        if !text.is_empty() || images.is_empty() {
            content.push(ContentBlock::text(text));
        }
        content.extend(
            images
                .into_iter()
                .map(|source| ContentBlock::Image { source }),
        );
        ChatMessage {
            role: Role::User,
            content,
        }
    }

    /// The images of this message's image blocks.
    pub fn images(&self) -> impl Iterator<Item = &ImageData> {
        self.content.iter().filter_map(|b| match b {
            ContentBlock::Image { source } => Some(source),
            _ => None,
        })
    }

    /// An assistant message holding one text block.
    pub fn assistant_text(text: impl Into<String>) -> Self {
        ChatMessage {
            role: Role::Assistant,
            content: vec![ContentBlock::text(text)],
        }
    }

    /// The concatenated text blocks of this message.
    pub fn text(&self) -> String {
        let mut out = String::new();
        for block in &self.content {
            if let ContentBlock::Text { text } = block {
                out.push_str(text);
            }
        }
        out
    }

    /// The tool_use blocks of this message as (id, name, input).
    pub fn tool_uses(&self) -> impl Iterator<Item = (&str, &str, &Value)> {
        self.content.iter().filter_map(|b| match b {
            ContentBlock::ToolUse { id, name, input } => Some((id.as_str(), name.as_str(), input)),
            _ => None,
        })
    }

    /// True when the message asks for at least one tool call.
    pub fn has_tool_use(&self) -> bool {
        self.tool_uses().next().is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_round_trip_in_anthropic_shape() {
        let msg = ChatMessage {
            role: Role::Assistant,
            content: vec![
                ContentBlock::Thinking {
                    thinking: "hm".into(),
                    signature: Some("sig".into()),
                },
                ContentBlock::text("hi"),
                ContentBlock::ToolUse {
                    id: "t1".into(),
                    name: "bash".into(),
                    input: serde_json::json!({"command": "ls"}),
                },
            ],
        };
        let json = serde_json::to_value(&msg).unwrap();
        assert_eq!(json["content"][2]["type"], "tool_use");
        assert_eq!(json["content"][0]["signature"], "sig");
        let back: ChatMessage = serde_json::from_value(json).unwrap();
        assert_eq!(back, msg);
        assert!(back.has_tool_use());
        assert_eq!(back.text(), "hi");
    }

    #[test]
    fn tool_result_images_round_trip_and_are_omitted_when_absent() {
        let block = ContentBlock::ToolResult {
            tool_use_id: "t1".into(),
            content: "shot".into(),
            is_error: false,
            images: vec![ImageData {
                media_type: "image/png".into(),
                data: "AAAA".into(),
            }],
        };
        let json = serde_json::to_value(&block).unwrap();
        assert_eq!(json["images"][0]["media_type"], "image/png");
        assert_eq!(serde_json::from_value::<ContentBlock>(json).unwrap(), block);
        let plain: ContentBlock =
            serde_json::from_str(r#"{"type":"tool_result","tool_use_id":"t1","content":"ok"}"#)
                .unwrap();
        assert_eq!(plain, ContentBlock::tool_result("t1", "ok", false));
    }

    #[test]
    fn prompt_images_are_anthropic_image_blocks_after_the_text() {
        let image = ImageData {
            media_type: "image/png".into(),
            data: "AAAA".into(),
        };
        let msg = ChatMessage::user_with_images("look", vec![image.clone()]);
        let json = serde_json::to_value(&msg).unwrap();
        assert_eq!(
            json["content"][0],
            serde_json::json!({"type": "text", "text": "look"})
        );
        assert_eq!(
            json["content"][1],
            serde_json::json!({"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AAAA"}})
        );
        let back: ChatMessage = serde_json::from_value(json).unwrap();
        assert_eq!(back, msg);
        assert_eq!(back.images().collect::<Vec<_>>(), vec![&image]);
        assert_eq!(back.text(), "look");
        let only = ChatMessage::user_with_images("", vec![image]);
        assert!(matches!(only.content[..], [ContentBlock::Image { .. }]));
        let url = r#"{"type":"image","source":{"type":"url","media_type":"image/png","data":""}}"#;
        let refused = serde_json::from_str::<ContentBlock>(url).unwrap_err();
        assert!(refused.to_string().contains("only base64"), "{refused}");
    }

    #[test]
    fn tool_result_omits_false_error_flag() {
        let block = ContentBlock::tool_result("t1", "ok", false);
        let json = serde_json::to_string(&block).unwrap();
        assert_eq!(
            json,
            r#"{"type":"tool_result","tool_use_id":"t1","content":"ok"}"#
        );
    }
}
