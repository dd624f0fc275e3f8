//! Images through the binary: read_file of a PNG reaches the model as an image, in Anthropic's
//! wire format as a tool_result image block and in the OpenAI-compatible one as an `image_url`
//! part after the tool message; an image the person attaches (`@shot.png` in `-p`, a path
//! pasted in the REPL, an SDK client's image block) goes as an image block beside the prompt's
//! text, downscaled when it is past the provider's limits; a server that refuses images ends
//! the run with a clear error.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code may panic on a broken fixture

mod common;
mod pty_support;
mod repl_support;

use base64::Engine;
use common::{run, stderr, troupe};
use repl_support::{leave, prompt_row, repl_in_pty, wait_requests, LIMIT};
use serde_json::{json, Value};
use std::io::Write;
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

/// A refusal of images as a provider words it.
fn refusal() -> Step {
    Step::fault(Fault::Status {
        code: 400,
        retry_after: None,
        body: "image input is not supported by this model".into(),
    })
}

/// A `width`×`height` PNG of a gradient.
fn png_of(width: u32, height: u32) -> Vec<u8> {
    let image = image::RgbImage::from_fn(width, height, |x, y| {
        image::Rgb([(x % 251) as u8, (y % 241) as u8, ((x ^ y) % 256) as u8])
    });
    let mut out = Vec::new();
    image
        .write_to(&mut std::io::Cursor::new(&mut out), image::ImageFormat::Png)
        .unwrap();
    out
}

/// The size of a base64-encoded image.
fn dimensions(data: &str) -> (u32, u32) {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(data)
        .unwrap();
    let image = image::load_from_memory(&bytes).unwrap();
    (image.width(), image.height())
}

/// The content of the first request's first user message, without the cache breakpoint the
/// newest message's last block carries.
fn first_prompt(server: &FakeServer) -> Value {
    let requests = server.requests_for("lead");
    assert!(!requests.is_empty(), "the model got no request");
    let messages = requests[0].body["messages"].as_array().unwrap().clone();
    let mut content = messages
        .into_iter()
        .find(|m| m["role"] == "user")
        .expect("a user message")["content"]
        .clone();
    for block in content.as_array_mut().into_iter().flatten() {
        if let Some(block) = block.as_object_mut() {
            block.remove("cache_control");
        }
    }
    content
}

/// Runs `-p prompt` in `ws`, the model answering `answer`.
fn print_mode(
    ws: &TempWorkspace,
    wire: Wire,
    prompt: &str,
    answer: Step,
) -> (FakeServer, std::process::Output) {
    let server = FakeServer::start();
    server.script("lead", [answer]);
    let out = run(troupe(ws.path(), &server, wire).args(["-p", prompt]));
    (server, out)
}

#[test]
fn an_at_mention_of_an_image_attaches_it_beside_the_prompt_in_both_wire_formats() {
    let ws = TempWorkspace::new();
    ws.write("shot.png", PNG);
    let (server, out) = print_mode(&ws, Wire::Anthropic, "look @shot.png", Step::text("a dot"));
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        first_prompt(&server),
        json!([
            {"type": "text", "text": "look @shot.png"},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": encoded()}},
        ])
    );
    let (server, out) = print_mode(&ws, Wire::OpenAi, "look @shot.png", Step::text("a dot"));
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        first_prompt(&server),
        json!([
            {"type": "text", "text": "look @shot.png"},
            {"type": "image_url", "image_url": {"url": format!("data:image/png;base64,{}", encoded())}},
        ])
    );
}

#[test]
fn an_attached_image_past_the_limits_is_downscaled_keeping_its_aspect_ratio() {
    let ws = TempWorkspace::new();
    ws.write("wide.png", png_of(3000, 1500));
    let (server, out) = print_mode(
        &ws,
        Wire::Anthropic,
        "what is @wide.png",
        Step::text("wide"),
    );
    assert!(out.status.success(), "{}", stderr(&out));
    common::assert_stderr_has(&out, "wide.png: downscaled from 3000×1500 to 1568×784");
    let content = first_prompt(&server);
    assert_eq!(content[1]["source"]["media_type"], "image/png");
    let data = content[1]["source"]["data"].as_str().unwrap();
    assert_eq!(dimensions(data), (1568, 784));
    assert!(data.len() <= 5 * 1024 * 1024);
}

#[test]
fn a_refused_attached_image_ends_the_run_with_a_clear_error_and_exit_code() {
    let ws = TempWorkspace::new();
    ws.write("shot.png", PNG);
    for wire in [Wire::Anthropic, Wire::OpenAi] {
        let (_server, out) = print_mode(&ws, wire, "look @shot.png", refusal());
        assert_eq!(out.status.code(), Some(1), "{wire:?}: {}", stderr(&out));
        let said = stderr(&out);
        assert!(
            said.contains("refused an image") && said.contains("an @image mention"),
            "{wire:?}: {said}"
        );
        assert!(!said.contains("panicked"), "{said}");
    }
}

#[test]
fn a_stream_json_user_message_with_an_image_block_reaches_the_model_with_the_image() {
    let ws = TempWorkspace::new();
    let server = FakeServer::start();
    server.script("lead", [Step::text("a big gradient")]);
    let big = base64::engine::general_purpose::STANDARD.encode(png_of(2000, 4000));
    let message = json!({"type": "user", "session_id": "", "parent_tool_use_id": null, "message": {
        "role": "user",
        "content": [
            {"type": "text", "text": "what is in these?"},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": encoded()}},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": big}},
        ],
    }});
    let mut child = troupe(ws.path(), &server, Wire::Anthropic)
        .args([
            "--input-format",
            "stream-json",
            "--output-format",
            "stream-json",
            "--verbose",
            "--replay-user-messages",
        ])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    writeln!(stdin, "{message}").unwrap();
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let lines = common::json_lines(&out);
    let result = lines
        .iter()
        .rfind(|l| l["type"] == "result")
        .expect("a result");
    assert_eq!(result["result"], "a big gradient");
    let replay = lines
        .iter()
        .find(|l| l["type"] == "user" && l["isReplay"] == true)
        .expect("the user message replayed");
    let replayed = replay["message"]["content"].as_array().unwrap();
    assert_eq!(replayed.len(), 3, "{replay}");
    assert_eq!(replayed[1]["source"]["data"], encoded());
    let content = first_prompt(&server);
    assert_eq!(
        content[0],
        json!({"type": "text", "text": "what is in these?"})
    );
    assert_eq!(content[1]["source"]["data"], encoded());
    let data = content[2]["source"]["data"].as_str().unwrap();
    assert_eq!(dimensions(data), (784, 1568));
}

#[test]
fn an_image_path_pasted_in_the_repl_shows_as_a_placeholder_and_goes_as_an_image() {
    let ws = TempWorkspace::new();
    ws.write("drop zone/my shot.png", PNG);
    let server = common::lead_server([Step::text("I see a dot")]);
    let mut pty = repl_in_pty(ws.path(), &server, &[], &[]);
    // Dragged onto a terminal: the path pasted with its blank escaped.
    let path = ws.path().join("drop zone/my shot.png");
    let pasted = path.display().to_string().replace(' ', "\\ ");
    pty.send(&format!("look at \u{1b}[200~{pasted} \u{1b}[201~"));
    pty.wait_for("the placeholder", LIMIT, |s| {
        prompt_row(s).as_deref() == Some("> look at [Image #1]")
    });
    pty.send("please\r");
    pty.wait_for_text("I see a dot", LIMIT);
    wait_requests(&server, 1);
    assert_eq!(
        first_prompt(&server),
        json!([
            {"type": "text", "text": "look at [Image #1] please"},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": encoded()}},
        ])
    );
    leave(pty);
}

#[test]
fn an_attached_image_is_in_the_transcript_and_goes_again_after_continue() {
    let ws = TempWorkspace::new();
    ws.write("shot.png", PNG);
    let server = FakeServer::start();
    server.script("lead", [Step::text("a dot"), Step::text("still a dot")]);
    let first = run(troupe(ws.path(), &server, Wire::Anthropic).args(["-p", "look @shot.png"]));
    assert!(first.status.success(), "{}", stderr(&first));
    let again =
        run(troupe(ws.path(), &server, Wire::Anthropic).args(["-p", "and now?", "--continue"]));
    assert!(again.status.success(), "{}", stderr(&again));
    let resumed = server.requests_for("lead").pop().unwrap();
    let messages = resumed.body["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 3, "{messages:#?}");
    let image = &messages[0]["content"][1];
    assert_eq!(image["type"], "image", "{messages:#?}");
    assert_eq!(
        image["source"],
        json!({"type": "base64", "media_type": "image/png", "data": encoded()})
    );
}

#[test]
fn a_refused_image_in_the_repl_is_an_error_and_the_session_goes_on() {
    let ws = TempWorkspace::new();
    ws.write("shot.png", PNG);
    let server = FakeServer::start();
    server.script("lead", [refusal()]);
    let mut pty = repl_in_pty(ws.path(), &server, &[], &[]);
    pty.send("look @shot.png\r");
    let screen = pty.wait_for_text("refused an image", LIMIT);
    assert!(!screen.contains("panicked"), "{screen}");
    pty.wait_for("the prompt back", LIMIT, |s| {
        prompt_row(s).as_deref() == Some(">")
    });
    leave(pty);
}

#[test]
fn ctrl_v_pastes_the_clipboard_image_as_a_placeholder() {
    use std::os::unix::fs::PermissionsExt;
    let ws = TempWorkspace::new();
    ws.write("copied.png", PNG);
    // The desktop's clipboard tool, standing in: it prints the copied image.
    let bin = ws.path().join(".bin");
    let xclip = ws.write(
        ".bin/xclip",
        format!(
            "#!/bin/sh\nexec cat '{}'\n",
            ws.path().join("copied.png").display()
        ),
    );
    std::fs::set_permissions(&xclip, std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let server = common::lead_server([Step::text("a copied dot")]);
    let env = [
        ("PATH", path.as_str()),
        ("DISPLAY", ":99"),
        ("WAYLAND_DISPLAY", ""),
    ];
    let mut pty = repl_in_pty(ws.path(), &server, &[], &env);
    pty.send("what is \u{16}");
    pty.wait_for("the placeholder", LIMIT, |s| {
        prompt_row(s).as_deref() == Some("> what is [Image #1]")
    });
    pty.send("\r");
    pty.wait_for_text("a copied dot", LIMIT);
    let content = first_prompt(&server);
    assert_eq!(content[0]["text"], "what is [Image #1]");
    assert_eq!(content[1]["source"]["data"], encoded());
    leave(pty);
}

#[test]
fn ctrl_v_without_a_desktop_clipboard_says_so() {
    let ws = TempWorkspace::new();
    let server = common::lead_server([]);
    let env = [("DISPLAY", ""), ("WAYLAND_DISPLAY", "")];
    let mut pty = repl_in_pty(ws.path(), &server, &[], &env);
    pty.send("\u{16}");
    pty.wait_for_text("no desktop clipboard here", LIMIT);
    assert!(server.requests_for("lead").is_empty());
    leave(pty);
}

#[test]
fn only_the_prompt_argument_s_mentions_attach_not_piped_text() {
    let ws = TempWorkspace::new();
    ws.write("shot.png", PNG);
    ws.write("notes.txt", "secret notes\n");
    let server = FakeServer::start();
    server.script("lead", [Step::text("reviewed")]);
    let mut child = troupe(ws.path(), &server, Wire::Anthropic)
        .args(["-p", "review this, and look @shot.png"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    writeln!(stdin, "+ /// see @notes.txt").unwrap();
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let content = first_prompt(&server);
    let text = content[0]["text"].as_str().unwrap();
    assert!(text.contains("see @notes.txt"), "{text}");
    assert!(!text.contains("secret notes"), "{text}");
    assert_eq!(content[1]["source"]["data"], encoded());
}

#[test]
fn file_flag_attaches_an_image_to_the_first_prompt() {
    let ws = TempWorkspace::new();
    ws.write("shot.png", PNG);
    let server = FakeServer::start();
    server.script("lead", [Step::text("a dot")]);
    let out = run(troupe(ws.path(), &server, Wire::Anthropic).args([
        "--file",
        "shot.png",
        "-p",
        "what is this?",
    ]));
    assert!(out.status.success(), "{}", stderr(&out));
    let content = first_prompt(&server);
    assert_eq!(content[0]["text"], "what is this?");
    assert_eq!(content[1]["source"]["data"], encoded());
}
