//! web_fetch and web_search against a local HTTP server the test starts.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code may panic on a broken fixture

mod common;

use async_trait::async_trait;
use common::Fixture;
use serde_json::json;
use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use troupe_tools::{Summarizer, Tool, WebFetchTool};

/// A reply: status line, extra headers, body.
type Reply = (&'static str, Vec<(String, String)>, Vec<u8>);

/// Serves `route(path)` for every request on 127.0.0.1 until the test ends; the base URL.
fn serve(route: impl Fn(&str, u16) -> Reply + Send + 'static) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut request_line = String::new();
            reader.read_line(&mut request_line).unwrap();
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap() == 0 || line == "\r\n" {
                    break;
                }
            }
            let path = request_line.split(' ').nth(1).unwrap_or("/").to_string();
            let (status, headers, body) = route(&path, port);
            let mut head = format!(
                "HTTP/1.1 {status}\r\nContent-Length: {}\r\nConnection: close\r\n",
                body.len()
            );
            for (name, value) in headers {
                head.push_str(&format!("{name}: {value}\r\n"));
            }
            head.push_str("\r\n");
            let _ = stream.write_all(head.as_bytes());
            let _ = stream.write_all(&body);
        }
    });
    format!("http://127.0.0.1:{port}")
}

fn html(body: &str) -> Reply {
    (
        "200 OK",
        vec![("Content-Type".into(), "text/html; charset=utf-8".into())],
        body.as_bytes().to_vec(),
    )
}

fn redirect(to: String) -> Reply {
    ("302 Found", vec![("Location".into(), to)], Vec::new())
}

fn site() -> String {
    serve(|path, port| match path {
        "/page" => html(
            "<html><head><title>T</title><style>h1 { color: red }</style></head><body>\
             <script>var tracking = 1;</script><h1>Release notes</h1>\
             <p>Version <strong>2.0</strong> adds <a href=\"/more\">more</a>.</p>\
             <ul><li>first</li><li>second</li></ul></body></html>",
        ),
        "/moved" => redirect("/page".into()),
        "/away" => redirect(format!("http://localhost:{port}/page")),
        "/big" => (
            "200 OK",
            vec![("Content-Type".into(), "text/plain".into())],
            vec![b'z'; 5000],
        ),
        _ => ("404 Not Found", Vec::new(), b"no".to_vec()),
    })
}

async fn fetch(fixture: &Fixture, tool: &WebFetchTool, url: &str) -> troupe_tools::ToolOutput {
    tool.call(json!({"url": url, "prompt": "What is new?"}), &fixture.ctx)
        .await
}

#[tokio::test]
async fn an_html_page_comes_back_as_markdown() {
    let base = site();
    let out = fetch(
        &Fixture::new(),
        &WebFetchTool::default(),
        &format!("{base}/page"),
    )
    .await;
    assert!(!out.is_error, "{}", out.content);
    assert!(out.content.contains("# Release notes"), "{}", out.content);
    assert!(out.content.contains("**2.0**"), "{}", out.content);
    assert!(out.content.contains("[more](/more)"), "{}", out.content);
    assert!(!out.content.contains("<p>"), "{}", out.content);
    assert!(!out.content.contains("tracking"), "{}", out.content);
    assert!(!out.content.contains("color: red"), "{}", out.content);
}

#[tokio::test]
async fn a_redirect_on_the_same_host_is_followed() {
    let base = site();
    let out = fetch(
        &Fixture::new(),
        &WebFetchTool::default(),
        &format!("{base}/moved"),
    )
    .await;
    assert!(!out.is_error, "{}", out.content);
    assert!(out.content.contains("# Release notes"), "{}", out.content);
    assert!(
        out.content.contains(&format!("{base}/page")),
        "{}",
        out.content
    );
}

#[tokio::test]
async fn a_redirect_to_another_host_is_reported_not_followed() {
    let base = site();
    let port = base.rsplit(':').next().unwrap();
    let out = fetch(
        &Fixture::new(),
        &WebFetchTool::default(),
        &format!("{base}/away"),
    )
    .await;
    assert!(!out.is_error, "{}", out.content);
    assert!(
        out.content
            .contains(&format!("redirected to http://localhost:{port}/page")),
        "{}",
        out.content
    );
    assert!(out.content.contains("not followed"), "{}", out.content);
    assert!(!out.content.contains("Release notes"), "{}", out.content);
}

#[tokio::test]
async fn a_body_over_the_limit_is_cut() {
    let base = site();
    let tool = WebFetchTool::default().with_max_bytes(1000);
    let out = fetch(&Fixture::new(), &tool, &format!("{base}/big")).await;
    assert!(!out.is_error, "{}", out.content);
    assert!(out.content.contains("cut at 1000 bytes"), "{}", out.content);
    assert_eq!(out.content.matches('z').count(), 1000, "{}", out.content);
}

#[tokio::test]
async fn a_server_that_does_not_answer_in_time_is_given_up_on() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    // Accepts and holds every connection, answering nothing.
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for stream in listener.incoming() {
            held.push(stream);
        }
    });
    let tool = WebFetchTool::default().with_timeout(std::time::Duration::from_millis(300));
    let started = std::time::Instant::now();
    let out = fetch(
        &Fixture::new(),
        &tool,
        &format!("http://127.0.0.1:{port}/slow"),
    )
    .await;
    assert!(out.is_error, "{}", out.content);
    assert!(out.content.contains("timed out"), "{}", out.content);
    assert!(started.elapsed() < std::time::Duration::from_secs(10));
}

#[tokio::test]
async fn a_page_fetched_again_soon_comes_from_the_cache() {
    let hits = Arc::new(Mutex::new(0));
    let counted = hits.clone();
    let base = serve(move |_, _| {
        *counted.lock().unwrap() += 1;
        html("<p>cached</p>")
    });
    let fixture = Fixture::new();
    let tool = WebFetchTool::default();
    let first = fetch(&fixture, &tool, &format!("{base}/once")).await;
    let again = fetch(&fixture, &tool, &format!("{base}/once")).await;
    assert_eq!(first, again);
    assert!(again.content.contains("cached"), "{}", again.content);
    assert_eq!(*hits.lock().unwrap(), 1);
    fetch(&fixture, &tool, &format!("{base}/other")).await;
    assert_eq!(*hits.lock().unwrap(), 2);
}

#[tokio::test]
async fn schemes_other_than_http_and_https_are_refused() {
    let fixture = Fixture::new();
    for url in [
        "file:///etc/passwd",
        "ftp://example.com/x",
        "data:text/plain,hi",
    ] {
        let out = fetch(&fixture, &WebFetchTool::default(), url).await;
        assert!(out.is_error, "{url}: {}", out.content);
        assert!(
            out.content.contains("http and https"),
            "{url}: {}",
            out.content
        );
    }
}

#[tokio::test]
async fn an_error_status_is_an_error() {
    let base = site();
    let out = fetch(
        &Fixture::new(),
        &WebFetchTool::default(),
        &format!("{base}/none"),
    )
    .await;
    assert!(out.is_error);
    assert!(out.content.contains("404"), "{}", out.content);
}

/// Answers with what it was asked, and keeps it.
#[derive(Default)]
struct Echo(Mutex<Vec<(String, String)>>);

#[async_trait]
impl Summarizer for Echo {
    async fn answer(
        &self,
        _agent: &str,
        _url: &str,
        prompt: &str,
        content: &str,
    ) -> Result<String, String> {
        self.0.lock().unwrap().push((prompt.into(), content.into()));
        Ok("Version 2.0 adds more.".into())
    }
}

#[tokio::test]
async fn the_prompt_is_answered_by_the_summarizer_over_the_markdown() {
    let base = site();
    let echo = Arc::new(Echo::default());
    let mut fixture = Fixture::new();
    fixture.ctx = fixture.ctx.clone().with_summarizer(Some(echo.clone()));
    let out = fetch(&fixture, &WebFetchTool::default(), &format!("{base}/page")).await;
    assert_eq!(out.content, "Version 2.0 adds more.");
    let asked = echo.0.lock().unwrap();
    assert_eq!(asked.len(), 1);
    assert_eq!(asked[0].0, "What is new?");
    assert!(asked[0].1.contains("# Release notes"), "{}", asked[0].1);
}

#[tokio::test]
async fn web_search_without_an_endpoint_says_how_to_configure_one() {
    // The variable is not set in the test environment (the test would mean nothing if it were).
    if std::env::var_os(troupe_tools::web_search::ENDPOINT_VAR).is_some() {
        return;
    }
    let out = Fixture::new()
        .call("web_search", json!({"query": "rust"}))
        .await;
    assert!(out.is_error);
    assert!(
        out.content.contains("TROUPE_WEB_SEARCH_URL"),
        "{}",
        out.content
    );
}

#[tokio::test]
async fn web_search_lists_the_endpoints_results_within_the_domains_asked() {
    let seen = Arc::new(Mutex::new(Vec::<String>::new()));
    let log = seen.clone();
    let base = serve(move |path, _| {
        log.lock().unwrap().push(path.to_string());
        let results = json!({"results": [
            {"title": "Rust docs", "url": "https://doc.rust-lang.org/std", "snippet": "The standard library"},
            {"title": "Blog", "url": "https://blog.example.com/rust"},
            {"title": "Spam", "url": "https://spam.example.org/"}
        ]});
        (
            "200 OK",
            vec![("Content-Type".into(), "application/json".into())],
            results.to_string().into_bytes(),
        )
    });
    let tool = troupe_tools::WebSearchTool::with_endpoint(format!("{base}/search"));
    let input = json!({
        "query": "rust std",
        "allowed_domains": ["rust-lang.org", "example.com"],
        "blocked_domains": ["blog.example.com"]
    });
    let out = tool.call(input, &Fixture::new().ctx).await;
    assert!(!out.is_error, "{}", out.content);
    assert!(
        out.content
            .contains("1. [Rust docs](https://doc.rust-lang.org/std)\n   The standard library"),
        "{}",
        out.content
    );
    assert!(!out.content.contains("Blog"), "{}", out.content);
    assert!(!out.content.contains("Spam"), "{}", out.content);
    let asked = seen.lock().unwrap();
    assert_eq!(
        asked.as_slice(),
        ["/search?q=rust+std&allowed_domains=rust-lang.org%2Cexample.com&blocked_domains=blog.example.com"]
    );
}
