//! web_fetch through the binary with the fake model: a `WebFetch(domain:…)` rule lets a headless
//! run in default mode fetch from a local server, the run's small model (the fake one, scripted)
//! answers the call's prompt over the page's Markdown, and without the rule the fetch is refused
//! before any request is made.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code may panic on a broken fixture

mod common;

use common::{headless_in_mode, stderr};
use serde_json::json;
use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use troupe_testkit::{FakeServer, Step, TempWorkspace};

/// Serves one HTML page on 127.0.0.1 to every request; the base URL and the request count.
fn page_server() -> (String, Arc<AtomicUsize>) {
    serve(
        "text/html",
        "<html><body><h1>Release notes</h1><p>Version <em>2.0</em> is out.</p></body></html>",
    )
}

/// Serves `body` as `content_type` on 127.0.0.1 to every request; the base URL and the
/// request count.
fn serve(content_type: &'static str, body: &'static str) -> (String, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let hits = Arc::new(AtomicUsize::new(0));
    let counted = hits.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            counted.fetch_add(1, Ordering::SeqCst);
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                    break;
                }
            }
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    (format!("http://127.0.0.1:{port}"), hits)
}

fn fetch_step(url: &str) -> Step {
    Step::tool(
        "web_fetch",
        json!({"url": format!("{url}/notes"), "prompt": "Which version is out?"}),
    )
}

#[test]
fn a_domain_rule_lets_a_headless_run_fetch_and_the_small_model_answers_the_prompt() {
    let ws = TempWorkspace::new();
    let (url, hits) = page_server();
    let server = FakeServer::start();
    // The lead's requests and its summarizer's, in the order they come.
    server.script(
        "lead",
        [
            fetch_step(&url),
            Step::text("Version 2.0 is out."),
            Step::text("done"),
        ],
    );
    let out = headless_in_mode(
        ws.path(),
        &server,
        "go",
        "default",
        &["--allowedTools", "WebFetch(domain:127.0.0.1)"],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(hits.load(Ordering::SeqCst), 1);
    let lead = server.requests_for("lead");
    assert_eq!(lead.len(), 3);
    let asked = lead[1].all_text();
    assert!(
        asked.contains("# Release notes")
            && asked.contains("Version *2.0* is out.")
            && asked.contains("Which version is out?"),
        "{asked}"
    );
    let (result, is_error) = lead[2].last_tool_result().unwrap();
    assert!(!is_error, "{result}");
    assert_eq!(result, "Version 2.0 is out.");
}

#[test]
fn without_a_rule_default_mode_refuses_the_fetch_and_names_the_rule() {
    let ws = TempWorkspace::new();
    let (url, hits) = page_server();
    let server = FakeServer::start();
    server.script("lead", [fetch_step(&url), Step::text("done")]);
    let out = headless_in_mode(ws.path(), &server, "go", "default", &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(hits.load(Ordering::SeqCst), 0);
    let lead = server.requests_for("lead");
    let (result, is_error) = lead[1].last_tool_result().unwrap();
    assert!(is_error, "{result}");
    assert!(
        result.contains("web_fetch needs permission in default mode")
            && result.contains("WebFetch(domain:127.0.0.1)"),
        "{result}"
    );
}

#[test]
fn web_search_asks_the_endpoint_a_settings_file_names_when_a_rule_allows_it() {
    let ws = TempWorkspace::new();
    let (url, hits) = serve(
        "application/json",
        r#"{"results": [{"title": "htmd", "url": "https://docs.rs/htmd", "snippet": "HTML to Markdown"}]}"#,
    );
    ws.write(
        ".claude/settings.json",
        json!({"env": {"TROUPE_WEB_SEARCH_URL": format!("{url}/search")}}).to_string(),
    );
    let server = FakeServer::start();
    server.script(
        "lead",
        [
            Step::tool("web_search", json!({"query": "html to markdown crate"})),
            Step::text("done"),
        ],
    );
    let out = headless_in_mode(
        ws.path(),
        &server,
        "go",
        "default",
        &["--allowedTools", "WebSearch"],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(hits.load(Ordering::SeqCst), 1);
    let lead = server.requests_for("lead");
    let (result, is_error) = lead[1].last_tool_result().unwrap();
    assert!(!is_error, "{result}");
    assert_eq!(
        result,
        "Web search results for query: \"html to markdown crate\"\n\n\
         1. [htmd](https://docs.rs/htmd)\n   HTML to Markdown\n"
    );
}
