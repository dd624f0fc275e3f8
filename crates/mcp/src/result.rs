//! A `tools/call` result as the model reads it: text blocks and structured content become the
//! text, `isError` an error result, images image blocks; the text goes through the same output
//! budget as the built-in tools' output.

use serde_json::Value;
use troupe_tools::output::truncate_middle;
use troupe_tools::{ImageData, ToolOutput, DEFAULT_OUTPUT_BUDGET};

/// Image types every provider that takes images accepts.
const IMAGE_TYPES: [&str; 4] = ["image/png", "image/jpeg", "image/gif", "image/webp"];

/// Largest base64 image passed on (about 3.75 MB decoded): providers refuse larger ones.
const MAX_IMAGE_BASE64: usize = 5 * 1024 * 1024;

/// Converts a `CallToolResult` (as its JSON) into the tool's output.
pub fn to_output(result: &Value) -> ToolOutput {
    let mut texts: Vec<String> = Vec::new();
    let mut images = Vec::new();
    let blocks = result
        .get("content")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    for block in blocks {
        match block.get("type").and_then(Value::as_str).unwrap_or("") {
            "text" => texts.push(str_of(block, "text").to_string()),
            "image" => match image(block) {
                Ok(image) => images.push(image),
                Err(note) => texts.push(note),
            },
            "audio" => texts.push(format!(
                "[audio ({}), {} bytes base64: not shown]",
                str_of(block, "mimeType"),
                str_of(block, "data").len()
            )),
            "resource" => texts.push(resource(block.get("resource").unwrap_or(&Value::Null))),
            "resource_link" => texts.push(format!(
                "[resource link: {} {}]",
                str_of(block, "name"),
                str_of(block, "uri")
            )),
            _ => texts.push(block.to_string()),
        }
    }
    // The spec has servers repeat structured content as text for clients like this one; it is
    // the result when there is no text beside it.
    if let Some(structured) = result.get("structuredContent").filter(|v| !v.is_null()) {
        if texts.is_empty() {
            texts.push(structured.to_string());
        }
    }
    let mut text = texts.join("\n");
    if text.is_empty() && images.is_empty() {
        text = "(the tool returned no content)".to_string();
    }
    let text = truncate_middle(&text, DEFAULT_OUTPUT_BUDGET);
    let output = match result.get("isError").and_then(Value::as_bool) {
        Some(true) => ToolOutput::error(text),
        _ => ToolOutput::ok(text),
    };
    output.with_images(images)
}

/// An image block as an image, or a note saying why it is not passed on.
fn image(block: &Value) -> Result<ImageData, String> {
    let media_type = str_of(block, "mimeType");
    let data = str_of(block, "data");
    if !IMAGE_TYPES.contains(&media_type) {
        return Err(format!(
            "[image of type {media_type:?}: not shown, only PNG, JPEG, GIF and WebP are]"
        ));
    }
    if data.len() > MAX_IMAGE_BASE64 {
        return Err(format!(
            "[{media_type} image of {} bytes base64: too large to show]",
            data.len()
        ));
    }
    Ok(ImageData {
        media_type: media_type.to_string(),
        data: data.to_string(),
    })
}

/// An embedded resource: its text, or a note for binary contents.
fn resource(resource: &Value) -> String {
    let uri = str_of(resource, "uri");
    match resource.get("text").and_then(Value::as_str) {
        Some(text) => format!("[resource {uri}]\n{text}"),
        None => format!(
            "[binary resource {uri} ({}), {} bytes base64: not shown]",
            str_of(resource, "mimeType"),
            str_of(resource, "blob").len()
        ),
    }
}

fn str_of<'a>(value: &'a Value, key: &str) -> &'a str {
    value.get(key).and_then(Value::as_str).unwrap_or("")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn text_structured_content_and_errors() {
        let out = to_output(
            &json!({"content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}),
        );
        assert_eq!(out, ToolOutput::ok("a\nb"));
        let structured = json!({"temperature": 21, "unit": "C"});
        let repeated = to_output(&json!({
            "content": [{"type": "text", "text": structured.to_string()}],
            "structuredContent": structured,
        }));
        assert_eq!(repeated.content, structured.to_string());
        let only = to_output(&json!({"content": [], "structuredContent": {"x": 1}}));
        assert_eq!(only.content, r#"{"x":1}"#);
        let both = to_output(
            &json!({"content": [{"type": "text", "text": "buy milk"}], "structuredContent": {"content": "buy milk"}}),
        );
        assert_eq!(both.content, "buy milk");
        let failed = to_output(
            &json!({"content": [{"type": "text", "text": "no such city"}], "isError": true}),
        );
        assert_eq!(failed, ToolOutput::error("no such city"));
        assert_eq!(
            to_output(&json!({"content": []})).content,
            "(the tool returned no content)"
        );
    }

    #[test]
    fn images_become_images_and_other_blocks_notes() {
        let out = to_output(&json!({"content": [
            {"type": "text", "text": "here"},
            {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"},
            {"type": "image", "data": "AAAA", "mimeType": "image/tiff"},
            {"type": "audio", "data": "AAAA", "mimeType": "audio/wav"},
            {"type": "resource", "resource": {"uri": "file:///a.txt", "text": "alpha"}},
            {"type": "resource", "resource": {"uri": "file:///b.bin", "blob": "AAAA", "mimeType": "application/zip"}},
            {"type": "resource_link", "uri": "file:///c", "name": "c"},
        ]}));
        assert_eq!(
            out.images,
            [ImageData {
                media_type: "image/png".into(),
                data: "iVBORw0KGgo=".into()
            }]
        );
        assert!(
            out.content
                .starts_with("here\n[image of type \"image/tiff\""),
            "{}",
            out.content
        );
        assert!(out.content.contains("[audio (audio/wav)"));
        assert!(out.content.contains("[resource file:///a.txt]\nalpha"));
        assert!(out
            .content
            .contains("[binary resource file:///b.bin (application/zip)"));
        assert!(out.content.contains("[resource link: c file:///c]"));
        let only_image = to_output(
            &json!({"content": [{"type": "image", "data": "AAAA", "mimeType": "image/jpeg"}]}),
        );
        assert_eq!(only_image.content, "");
        assert_eq!(only_image.images.len(), 1);
    }

    #[test]
    fn long_text_goes_through_the_output_budget() {
        let long = "x".repeat(DEFAULT_OUTPUT_BUDGET * 3);
        let out = to_output(&json!({"content": [{"type": "text", "text": long}]}));
        assert!(out.content.len() < DEFAULT_OUTPUT_BUDGET + 200);
        assert!(
            out.content.contains("bytes omitted"),
            "{}",
            &out.content[..100]
        );
    }
}
