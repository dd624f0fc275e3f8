//! Running an `http` hook: the event's JSON posted to its URL, the response read as a command
//! hook's output is. A 2xx answer is exit 0 with the body as stdout (a JSON decision works as
//! from a command); any other status is a non-blocking failure with the body as stderr; a
//! server that cannot be reached, or does not answer within the hook's timeout, decides nothing
//! (and a PreToolUse hook that cannot run refuses the call, as a command hook's does).

use crate::config::HttpTarget;
use crate::ending::Ending;
use std::time::Duration;

/// The most of a response body kept.
const BODY_LIMIT: usize = 1 << 20;

/// Posts `input` to `target`; returns how it ended, the body as stdout and stderr.
pub(crate) async fn post(
    target: &HttpTarget,
    input: &[u8],
    timeout: Duration,
) -> (Ending, String, String) {
    match tokio::time::timeout(timeout, send(target, input)).await {
        Ok(Ok((status, body))) if (200..300).contains(&status) => {
            (Ending::Exited(0), body, String::new())
        }
        Ok(Ok((status, body))) => (
            Ending::Exited(1),
            String::new(),
            format!("HTTP {status} from {}: {body}", target.url),
        ),
        Ok(Err(why)) => (Ending::NotStarted(why), String::new(), String::new()),
        Err(_) => (Ending::TimedOut(timeout), String::new(), String::new()),
    }
}

async fn send(target: &HttpTarget, input: &[u8]) -> Result<(u16, String), String> {
    // reqwest is built without a bundled crypto provider; rustls takes one process-wide.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let client = reqwest::Client::builder()
        .build()
        .map_err(|e| format!("no HTTP client: {e}"))?;
    let mut request = client
        .post(&target.url)
        .header("content-type", "application/json")
        .body(input.to_vec());
    for (name, value) in &target.headers {
        request = request.header(name, value);
    }
    let response = request
        .send()
        .await
        .map_err(|e| format!("POST {}: {e}", target.url))?;
    let status = response.status().as_u16();
    let bytes = response
        .bytes()
        .await
        .map_err(|e| format!("reading the answer of {}: {e}", target.url))?;
    let kept = &bytes[..bytes.len().min(BODY_LIMIT)];
    Ok((status, String::from_utf8_lossy(kept).into_owned()))
}
