//! Images through the binary: read_file of a PNG reaches the model as an image, in Anthropic's
//! wire format as a tool_result image block and in the OpenAI-compatible one as an `image_url`
//! part after the tool message; a server that refuses images ends the run with a clear error.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code may panic on a broken fixture

mod common;

use base64::Engine;
use common::{run, stderr, troupe};
use serde_json::{json, Value};
use troupe_testkit::{FakeServer, Fault, Step, TempWorkspace, Wire};

/// A 1×1 PNG.
const PNG: &[u8] = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\x01\0\0\0\x01\x08\x06\0\0\0\x1f\x15\xc4\x89\0\0\0\rIDATx\x9cc\xf8\xcf\xc0\xf0\x1f\0\x05\0\x01\xff\x89\x99=\x1d\0\0\0\0IEND\xaeB`\x82";

/// Runs `-p look` in `wire` with the model reading `shot.png`, then `then`.
fn read_png(wire: Wire, then: Step) -> (FakeServer, std::process::Output) {
    let ws = TempWorkspace::new();
    ws.write("shot.png", PNG);
    let server = FakeServer::start();
    server.script(
        "lead",
        [Step::tool("read_file", json!({"path": "shot.png"})), then],
    );
    let out = run(troupe(ws.path(), &server, wire).args([
        "-p",
        "look",
        "--output-format",
        "json",
        "--permission-mode",
        "acceptEdits",
    ]));
    (server, out)
}

fn encoded() -> String {
    base64::engine::general_purpose::STANDARD.encode(PNG)
}

/// The messages of the second request the model got (the one answering the read).
fn second_request_messages(server: &FakeServer) -> Vec<Value> {
    let requests = server.requests_for("lead");
    assert_eq!(requests.len(), 2, "one call, one answer");
    requests[1].body["messages"].as_array().unwrap().clone()
}

#[test]
fn anthropic_gets_the_png_as_an_image_block_in_the_tool_result() {
    let (server, out) = read_png(Wire::Anthropic, Step::text("a red dot"));
    assert!(out.status.success(), "{}", stderr(&out));
    let messages = second_request_messages(&server);
    let result = messages
        .iter()
        .flat_map(|m| m["content"].as_array().into_iter().flatten())
        .find(|b| b["type"] == "tool_result")
        .expect("a tool_result");
    let content = result["content"].as_array().expect("a block list");
    assert_eq!(content[0]["type"], "text");
    assert!(
        content[0]["text"].as_str().unwrap().contains("shot.png"),
        "{result}"
    );
    assert_eq!(
        content[1],
        json!({"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": encoded()}})
    );
}

#[test]
fn openai_compatible_servers_get_an_image_url_part_after_the_tool_message() {
    let (server, out) = read_png(Wire::OpenAi, Step::text("a red dot"));
    assert!(out.status.success(), "{}", stderr(&out));
    let messages = second_request_messages(&server);
    let tool_at = messages
        .iter()
        .position(|m| m["role"] == "tool")
        .expect("a tool message");
    assert!(
        messages[tool_at]["content"]
            .as_str()
            .unwrap()
            .contains("1 image(s) returned"),
        "{messages:#?}"
    );
    let next = &messages[tool_at + 1];
    assert_eq!(next["role"], "user");
    let parts = next["content"].as_array().expect("content parts");
    let image = parts
        .iter()
        .find(|p| p["type"] == "image_url")
        .expect("an image_url part");
    assert_eq!(
        image["image_url"]["url"],
        format!("data:image/png;base64,{}", encoded())
    );
}

#[test]
fn a_server_that_refuses_images_ends_the_run_with_a_clear_error() {
    for wire in [Wire::Anthropic, Wire::OpenAi] {
        let refusal = Step::fault(Fault::Status {
            code: 400,
            retry_after: None,
            body: "image input is not supported by this model".into(),
        });
        let (_server, out) = read_png(wire, refusal);
        assert!(!out.status.success());
        let said = format!("{}{}", String::from_utf8_lossy(&out.stdout), stderr(&out));
        assert!(
            said.contains("refused an image") && said.contains("not supported by this model"),
            "{wire:?}: {said}"
        );
        assert!(!said.contains("panicked"), "{said}");
    }
}
