//! A tiny scripted HTTP/1.1 responder for the client tests: it answers each connection with
//! the next canned reply and records every request it received.

#![allow(dead_code)] // each test binary uses a different part of it

use std::sync::{Arc, Mutex};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use troupe_model::{Model, ModelError, ModelRequest, ModelResponse, StreamEvent};

/// A call's outcome and the live events it streamed.
pub type Streamed = (Result<ModelResponse, ModelError>, Vec<StreamEvent>);

/// Streams one call of `request`, collecting the live events.
pub async fn stream(model: &dyn Model, request: &ModelRequest) -> Streamed {
    let mut events = Vec::new();
    let result = model
        .stream(request, &mut |e: StreamEvent| events.push(e))
        .await;
    (result, events)
}

/// One canned answer.
pub struct Reply {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
    /// Send the body as one chunk of a chunked response and hang up before the last chunk.
    cut_chunked: bool,
}

impl Reply {
    /// A 200 event stream that ends when the connection closes.
    pub fn sse(body: impl Into<String>) -> Self {
        Reply {
            status: 200,
            headers: vec![("content-type".into(), "text/event-stream".into())],
            body: body.into().into_bytes(),
            cut_chunked: false,
        }
    }

    /// A 200 event stream, chunk-encoded, whose connection drops mid-body.
    pub fn sse_cut(body: impl Into<String>) -> Self {
        Reply {
            cut_chunked: true,
            ..Reply::sse(body)
        }
    }

    /// An error status with a JSON body.
    pub fn status(status: u16, body: &str) -> Self {
        Reply {
            status,
            headers: vec![("content-type".into(), "application/json".into())],
            body: body.as_bytes().to_vec(),
            cut_chunked: false,
        }
    }

    /// The same reply with one more header.
    pub fn header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }
}

/// A request as the server saw it.
#[derive(Debug, Clone)]
pub struct Recorded {
    /// `POST /v1/messages`
    pub request_line: String,
    /// Header names lowercased.
    pub headers: Vec<(String, String)>,
    /// The body, parsed as JSON.
    pub body: serde_json::Value,
}

impl Recorded {
    /// The value of a header, if sent.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// A running responder.
pub struct Server {
    /// `http://127.0.0.1:<port>`
    pub base_url: String,
    requests: Arc<Mutex<Vec<Recorded>>>,
}

impl Server {
    /// Starts a server answering connection `n` with `replies[n]`; extra connections get 599.
    pub async fn start(replies: Vec<Reply>) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let requests = Arc::new(Mutex::new(Vec::new()));
        let log = requests.clone();
        tokio::spawn(async move {
            let mut replies = replies.into_iter();
            loop {
                let Ok((socket, _)) = listener.accept().await else {
                    return;
                };
                let reply = replies
                    .next()
                    .unwrap_or_else(|| Reply::status(599, r#"{"error":"script exhausted"}"#));
                let log = log.clone();
                tokio::spawn(async move { answer(socket, reply, log).await });
            }
        });
        Server {
            base_url: format!("http://{addr}"),
            requests,
        }
    }

    /// Every request received so far.
    pub fn requests(&self) -> Vec<Recorded> {
        self.requests.lock().expect("lock").clone()
    }
}

async fn answer(mut socket: TcpStream, reply: Reply, log: Arc<Mutex<Vec<Recorded>>>) {
    let Some(recorded) = read_request(&mut socket).await else {
        return;
    };
    log.lock().expect("lock").push(recorded);
    let reason = match reply.status {
        200 => "OK",
        _ => "Status",
    };
    let mut head = format!(
        "HTTP/1.1 {} {reason}\r\nconnection: close\r\n",
        reply.status
    );
    for (name, value) in &reply.headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    if reply.cut_chunked {
        head.push_str("transfer-encoding: chunked\r\n\r\n");
        head.push_str(&format!("{:x}\r\n", reply.body.len()));
        let mut out = head.into_bytes();
        out.extend_from_slice(&reply.body);
        out.extend_from_slice(b"\r\n");
        // No terminating zero-length chunk: the body is cut off.
        let _ = socket.write_all(&out).await;
    } else {
        if reply.status != 200 {
            head.push_str(&format!("content-length: {}\r\n", reply.body.len()));
        }
        head.push_str("\r\n");
        let mut out = head.into_bytes();
        out.extend_from_slice(&reply.body);
        let _ = socket.write_all(&out).await;
    }
    let _ = socket.shutdown().await;
}

async fn read_request(socket: &mut TcpStream) -> Option<Recorded> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let head_end = loop {
        if let Some(pos) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break pos;
        }
        let n = socket.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).to_string();
    let mut lines = head.split("\r\n");
    let request_line = lines.next()?.to_owned();
    let headers: Vec<(String, String)> = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let length: usize = headers
        .iter()
        .find(|(n, _)| n == "content-length")
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    let mut body = buf[head_end + 4..].to_vec();
    while body.len() < length {
        let n = socket.read(&mut chunk).await.ok()?;
        if n == 0 {
            break;
        }
        body.extend_from_slice(&chunk[..n]);
    }
    Some(Recorded {
        request_line,
        headers,
        body: serde_json::from_slice(&body).unwrap_or(serde_json::Value::Null),
    })
}

/// A port on which nothing listens.
pub async fn closed_port_url() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    drop(listener);
    format!("http://{addr}")
}
