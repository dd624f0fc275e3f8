//! The stdio transport: newline-delimited JSON on a child's pipes. Its stdout is read line by
//! line (a line that is not JSON is skipped, an oversized one dropped); what the client sends
//! is written by one task, whole lines in order, so a caller that gives up cannot leave half a
//! message in the pipe.

use crate::rpc::{Link, Outgoing};
use async_trait::async_trait;
use serde_json::Value;
use std::sync::Arc;
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;

/// Longest line read (16 MiB, as the SDKs' line transports): a longer one is dropped.
const MAX_LINE: usize = 16 * 1024 * 1024;

/// The sending half: the writer task's queue.
struct Lines {
    queue: mpsc::UnboundedSender<Vec<u8>>,
}

/// The transport over `output` (the child's stdout) and `input` (its stdin).
pub(crate) fn link<R, W>(output: R, input: W) -> Link
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (sender, incoming) = mpsc::unbounded_channel();
    tokio::spawn(read(BufReader::new(output), sender));
    let (queue, lines) = mpsc::unbounded_channel();
    tokio::spawn(write(input, lines));
    Link {
        outgoing: Arc::new(Lines { queue }),
        incoming,
    }
}

#[async_trait]
impl Outgoing for Lines {
    async fn send(&self, message: Value) -> Result<(), String> {
        let mut line = serde_json::to_vec(&message).map_err(|e| e.to_string())?;
        line.push(b'\n');
        self.queue
            .send(line)
            .map_err(|_| "the server's stdin is closed".to_string())
    }
}

/// Writes the queued lines until the queue or the pipe ends.
async fn write<W: AsyncWrite + Unpin>(mut input: W, mut lines: mpsc::UnboundedReceiver<Vec<u8>>) {
    while let Some(line) = lines.recv().await {
        let written = match input.write_all(&line).await {
            Ok(()) => input.flush().await,
            Err(e) => Err(e),
        };
        if let Err(e) = written {
            tracing::debug!("writing to the MCP server's stdin: {e}");
            return;
        }
    }
}

/// Reads messages until end of file; the channel closes with it.
async fn read<R: AsyncBufRead + Unpin>(mut output: R, sender: mpsc::UnboundedSender<Value>) {
    let mut line = Vec::new();
    loop {
        line.clear();
        match read_line(&mut output, &mut line).await {
            Ok(true) => {}
            Ok(false) => return,
            Err(e) => {
                tracing::debug!("reading the MCP server's stdout: {e}");
                return;
            }
        }
        if line.len() > MAX_LINE {
            tracing::debug!("an MCP message longer than {MAX_LINE} bytes was dropped");
            continue;
        }
        let text = line.strip_suffix(b"\n").unwrap_or(&line);
        let text = text.strip_suffix(b"\r").unwrap_or(text);
        if text.is_empty() {
            continue;
        }
        match serde_json::from_slice::<Value>(text) {
            Ok(message) if message.is_object() || message.is_array() => {
                if sender.send(message).is_err() {
                    return;
                }
            }
            Ok(_) | Err(_) => tracing::debug!(
                "ignoring a line of the MCP server's stdout that is not a message: {}",
                String::from_utf8_lossy(text)
            ),
        }
    }
}

/// Reads one line into `line` (kept whole up to [`MAX_LINE`] bytes and one more, the rest
/// skipped); false at the end of the stream.
async fn read_line<R: AsyncBufRead + Unpin>(
    output: &mut R,
    line: &mut Vec<u8>,
) -> std::io::Result<bool> {
    let mut read_any = false;
    loop {
        let buffer = output.fill_buf().await?;
        if buffer.is_empty() {
            // An unterminated last line is an incomplete message: nothing to deliver.
            return Ok(read_any && line.ends_with(b"\n"));
        }
        read_any = true;
        let (taken, done) = match buffer.iter().position(|b| *b == b'\n') {
            Some(at) => (at + 1, true),
            None => (buffer.len(), false),
        };
        let room = (MAX_LINE + 1).saturating_sub(line.len());
        line.extend_from_slice(&buffer[..taken.min(room)]);
        output.consume(taken);
        if done {
            return Ok(true);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn lines_that_are_not_messages_are_skipped() {
        let (mut server, client) = tokio::io::duplex(1024);
        let (_, input) = tokio::io::duplex(64);
        let mut link = link(client, input);
        server
            .write_all(b"starting up\n\n{\"jsonrpc\":\"2.0\",\"method\":\"a\"}\r\n42\n")
            .await
            .unwrap();
        drop(server);
        let first = link.incoming.recv().await.unwrap();
        assert_eq!(first["method"], "a");
        assert!(link.incoming.recv().await.is_none());
    }
}
