//! The body of an Anthropic Messages request, serialised straight to bytes from the request:
//! the head fields, the system prompt (as cache-marked blocks when prompt caching is on), the
//! messages (with the rolling cache breakpoints and image results rewritten into blocks) and
//! the tool set's JSON spliced in, and the thinking and effort [`Reasoning`] asks for.

use crate::body::{object_with, ToolsJson};
use crate::cache::{plan, system_pieces, Breakpoints, CacheTtl, PromptCache};
use crate::reasoning::Reasoning;
use crate::ModelRequest;
use bytes::Bytes;
use serde::ser::{Error as _, SerializeSeq};
use serde::Serialize;
use serde_json::{json, Value};
use troupe_protocol::{ChatMessage, ContentBlock};

/// The beta that 1-hour cache entries were introduced under (harmless where they are GA).
pub(crate) const EXTENDED_TTL_BETA: &str = "extended-cache-ttl-2025-04-11";

/// The fields of a Messages request besides `tools`, in the order the API documents them.
#[derive(Serialize)]
struct Head<'a> {
    model: &'a str,
    max_tokens: u32,
    messages: Messages<'a>,
    stream: bool,
    #[serde(skip_serializing_if = "System::is_empty")]
    system: System<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    thinking: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    output_config: Option<Value>,
}

/// A breakpoint's `cache_control` object.
#[derive(Serialize, Clone, Copy)]
struct CacheControl {
    #[serde(rename = "type")]
    kind: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    ttl: Option<&'static str>,
}

impl CacheControl {
    fn new(ttl: CacheTtl) -> Self {
        CacheControl {
            kind: "ephemeral",
            ttl: match ttl {
                CacheTtl::FiveMinutes => None,
                CacheTtl::OneHour => Some("1h"),
            },
        }
    }
}

/// The system prompt: one string without caching; with it, text blocks cut where the
/// caller's marks are, the marked ones carrying a breakpoint.
enum System<'a> {
    Text(&'a str),
    Blocks(Vec<SystemBlock<'a>>),
}

impl System<'_> {
    fn is_empty(&self) -> bool {
        match self {
            System::Text(text) => text.is_empty(),
            System::Blocks(blocks) => blocks.is_empty(),
        }
    }
}

impl Serialize for System<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            System::Text(text) => s.serialize_str(text),
            System::Blocks(blocks) => blocks.serialize(s),
        }
    }
}

#[derive(Serialize)]
struct SystemBlock<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    text: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    cache_control: Option<CacheControl>,
}

/// The conversation as the API takes it: each message as it is, except one whose tool results
/// carry images, which goes through [`images_into_blocks`], and one whose last block carries a
/// breakpoint.
struct Messages<'a> {
    messages: &'a [ChatMessage],
    /// Indices of the messages marked, ascending.
    marked: &'a [usize],
    control: CacheControl,
}

impl Serialize for Messages<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(self.messages.len()))?;
        for (i, message) in self.messages.iter().enumerate() {
            let has_images = message.content.iter().any(
                |b| matches!(b, ContentBlock::ToolResult { images, .. } if !images.is_empty()),
            );
            let marked = self.marked.contains(&i);
            if has_images || marked {
                let mut value = serde_json::to_value(message).map_err(S::Error::custom)?;
                if has_images {
                    images_into_blocks(&mut value);
                }
                if marked {
                    mark_last_block(&mut value, self.control).map_err(S::Error::custom)?;
                }
                seq.serialize_element(&value)?;
            } else {
                seq.serialize_element(message)?;
            }
        }
        seq.end()
    }
}

/// Puts `cache_control` on the last content block of a message.
fn mark_last_block(message: &mut Value, control: CacheControl) -> Result<(), serde_json::Error> {
    if let Some(Value::Object(block)) = message
        .get_mut("content")
        .and_then(Value::as_array_mut)
        .and_then(|blocks| blocks.last_mut())
    {
        block.insert("cache_control".to_owned(), serde_json::to_value(control)?);
    }
    Ok(())
}

/// The JSON body of a streaming Messages request, written once; the tools' part comes from
/// `tools_json` (serialised once per shared tool set).
pub(crate) fn request_body(
    request: &ModelRequest,
    tools_json: &ToolsJson,
    cache: PromptCache,
    reasoning: Reasoning,
) -> Result<Bytes, serde_json::Error> {
    let tools = match request.tools.is_empty() {
        true => None,
        false => Some(tools_array(request, tools_json)?),
    };
    let caching = cache.enabled && request.cache.is_some();
    let breakpoints = match caching {
        true => plan(
            request,
            tools
                .as_ref()
                .map_or(0, |t| t.len() as u64)
                .div_ceil(crate::estimate::BYTES_PER_TOKEN),
        ),
        false => Breakpoints::default(),
    };
    let control = CacheControl::new(cache.ttl);
    let system = match (caching, request.cache) {
        (true, Some(marks)) => System::Blocks(
            system_pieces(&request.system, &marks)
                .into_iter()
                .enumerate()
                .map(|(i, (start, end))| SystemBlock {
                    kind: "text",
                    text: &request.system[start..end],
                    cache_control: breakpoints.system.contains(&i).then_some(control),
                })
                .collect(),
        ),
        _ => System::Text(&request.system),
    };
    let reasoning =
        reasoning.anthropic(crate::alias::wire_name(&request.model), request.max_tokens);
    let head = Head {
        model: crate::alias::wire_name(&request.model),
        max_tokens: reasoning.max_tokens,
        messages: Messages {
            messages: &request.messages,
            marked: &breakpoints.messages,
            control,
        },
        stream: true,
        system,
        thinking: reasoning.thinking,
        output_config: reasoning.output_config,
    };
    match tools {
        None => object_with(&head, &[]),
        Some(tools) => object_with(&head, &[("tools", &tools)]),
    }
}

/// The `tools` array of a request, serialised once per shared tool set.
fn tools_array(request: &ModelRequest, tools_json: &ToolsJson) -> Result<Bytes, serde_json::Error> {
    tools_json.get(&request.tools, |tools| {
        crate::input_schema::tools_array(tools, "{", "input_schema", "}")
    })
}

/// Rewrites each tool_result that carries images (troupe's `images` list) into the block-array
/// form the API takes: its text first, then one image block per image.
fn images_into_blocks(message: &mut Value) {
    let Some(Value::Array(blocks)) = message.get_mut("content") else {
        return;
    };
    for block in blocks {
        let Some(map) = block.as_object_mut() else {
            continue;
        };
        let Some(Value::Array(images)) = map.remove("images") else {
            continue;
        };
        let text = map
            .remove("content")
            .unwrap_or(Value::String(String::new()));
        let mut content = Vec::with_capacity(images.len() + 1);
        if text.as_str().is_some_and(|t| !t.is_empty()) {
            content.push(json!({"type": "text", "text": text}));
        }
        for image in images {
            content.push(json!({
                "type": "image",
                "source": {
                    "type": "base64",
                    "media_type": image.get("media_type").cloned().unwrap_or(Value::Null),
                    "data": image.get("data").cloned().unwrap_or(Value::Null),
                },
            }));
        }
        map.insert("content".to_owned(), Value::Array(content));
    }
}
