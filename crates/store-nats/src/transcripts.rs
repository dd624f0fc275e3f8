//! Transcripts on the server: each agent's JSON-lines transcript is the concatenation of the
//! payloads on its subject, in stream order. An append publishes its lines in messages of at
//! most [`CHUNK`] bytes (a line longer than that spans several), each carrying the transcript's
//! length after it (`Troupe-End`), so the length is one direct get of the subject's last
//! message. The rules are the file backend's: a writer killed between the messages of one line
//! leaves a torn line, which readers skip and count, and the next append starts with a newline
//! so that its own lines stay whole.
//!
//! The agent loop writes a local file of this machine ([`troupe_store::file::transcript_path`],
//! where a [`troupe_store::file::FileStore`] of the workspace keeps it); that file is a cache,
//! which the team keeps in step with the server.

use std::sync::PoisonError;

use crate::reads::{read, At};
use async_nats::jetstream::context::PublishErrorKind;
use troupe_durable::jsonl;
use troupe_store::{StoreError, TranscriptBytes, TranscriptRead, TranscriptStore};

use crate::conn::Fail;
use crate::{check_agent, NatsStore};

/// The most transcript bytes one message carries (the server's default limit is 1 MiB).
const CHUNK: usize = 256 * 1024;

/// The header holding the transcript's length after the message.
const END_HEADER: &str = "Troupe-End";

/// Where an agent's transcript ends on the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Tail {
    /// Its length in bytes.
    end: u64,
    /// The stream sequence of its last message (0: none). Each append expects it, so a
    /// process whose idea of the tail is stale (another machine appended since) learns so
    /// instead of gluing its lines to a stranger's.
    seq: u64,
    /// True when it ends with a newline (or is empty): the next line may follow directly.
    terminated: bool,
}

impl NatsStore {
    /// The transcript's tail as the server has it now.
    async fn fetch_tail(&self, agent: &str) -> Result<Tail, StoreError> {
        let inner = &self.inner;
        let subject = inner.names.transcript_subject(agent);
        let last = inner
            .conn
            .retry(&format!("look up the transcript of {agent}"), {
                let stream = inner.transcripts.clone();
                move || {
                    let (stream, subject) = (stream.clone(), subject.clone());
                    async move {
                        match read(&stream, At::LastFor(&subject)).await? {
                            Some(m) => Ok(Some((
                                m.sequence,
                                m.headers
                                    .get(END_HEADER)
                                    .and_then(|v| v.as_str().parse::<u64>().ok()),
                                m.payload.last().copied(),
                            ))),
                            None => Ok(None),
                        }
                    }
                }
            })
            .await?;
        Ok(match last {
            None => Tail {
                end: 0,
                seq: 0,
                terminated: true,
            },
            Some((seq, end, last_byte)) => Tail {
                seq,
                // A message without the header was not written by troupe: count the bytes.
                end: match end {
                    Some(end) => end,
                    None => self.transcript_bytes(agent).await?.len() as u64,
                },
                terminated: last_byte.is_none_or(|b| b == b'\n'),
            },
        })
    }

    /// Every byte of the transcript, in order.
    async fn transcript_bytes(&self, agent: &str) -> Result<Vec<u8>, StoreError> {
        let inner = &self.inner;
        let subject = inner.names.transcript_subject(agent);
        let (payloads, _) = inner
            .conn
            .retry(&format!("read the transcript of {agent}"), {
                let (stream, client) = (inner.transcripts.clone(), inner.conn.client.clone());
                move || {
                    let (stream, client, subject) =
                        (stream.clone(), client.clone(), subject.clone());
                    async move { crate::events::read_after(stream, client, subject, 0).await }
                }
            })
            .await?;
        let mut bytes = Vec::with_capacity(payloads.iter().map(|(_, p)| p.len()).sum());
        for (_, payload) in payloads {
            bytes.extend_from_slice(&payload);
        }
        Ok(bytes)
    }

    /// Publishes `bytes` after `tail` in messages of at most [`CHUNK`] bytes; `tail` follows
    /// each message that the server stored. `Ok(false)`: nothing was stored, because the
    /// transcript no longer ends where `tail` says (another process appended since).
    async fn publish_transcript(
        &self,
        agent: &str,
        tail: &mut Tail,
        bytes: &[u8],
    ) -> Result<bool, StoreError> {
        let inner = &self.inner;
        let subject = inner.names.transcript_subject(agent);
        for (i, chunk) in bytes.chunks(CHUNK).enumerate() {
            let end = tail.end + chunk.len() as u64;
            let payload = bytes::Bytes::copy_from_slice(chunk);
            // Each attempt carries the same id, so a retry after a lost answer is stored once.
            let id = troupe_protocol::ids::new_ulid().to_string();
            let after = tail.seq;
            let stored = inner
                .conn
                .retry(&format!("append to the transcript of {agent}"), {
                    let (js, subject) = (inner.conn.js.clone(), subject.clone());
                    move || {
                        let (js, subject, payload, id) =
                            (js.clone(), subject.clone(), payload.clone(), id.clone());
                        async move {
                            let publish = async_nats::jetstream::message::PublishMessage::build()
                                .payload(payload)
                                .message_id(id)
                                .expected_last_subject_sequence(after)
                                .header(END_HEADER, end.to_string());
                            match js.send_publish(subject, publish).await?.await {
                                Ok(ack) => Ok(Some(ack.sequence)),
                                Err(e) if e.kind() == PublishErrorKind::WrongLastSequence => {
                                    Ok(None)
                                }
                                Err(e) => Err(Fail::Transient(e.to_string())),
                            }
                        }
                    }
                })
                .await?;
            let Some(seq) = stored else {
                if i == 0 {
                    return Ok(false);
                }
                return Err(self.inner.conn.error(
                    format!("append to the transcript of {agent}"),
                    "another process appended to it at the same time; only one process may run an agent (its lease holder)",
                ));
            };
            *tail = Tail {
                end,
                seq,
                terminated: chunk.last() == Some(&b'\n'),
            };
        }
        Ok(true)
    }

    /// Appends `lines` after `tail`, ending a torn last line first; `Ok(false)` as
    /// [`NatsStore::publish_transcript`].
    async fn append_after(
        &self,
        agent: &str,
        tail: &mut Tail,
        lines: &[u8],
    ) -> Result<bool, StoreError> {
        if tail.terminated {
            return self.publish_transcript(agent, tail, lines).await;
        }
        // A writer died in the middle of a line: it stays a (corrupt) line of its own.
        tracing::warn!(agent, "the transcript ends in a torn line; isolating it");
        let mut sealed = Vec::with_capacity(lines.len() + 1);
        sealed.push(b'\n');
        sealed.extend_from_slice(lines);
        self.publish_transcript(agent, tail, &sealed).await
    }
}

#[async_trait::async_trait]
impl TranscriptStore for NatsStore {
    fn transcript_is_cached(&self) -> bool {
        true
    }

    async fn transcript_len(&self, agent: &str) -> Result<u64, StoreError> {
        check_agent(agent)?;
        Ok(self.fetch_tail(agent).await?.end)
    }

    async fn append_transcript_lines(&self, agent: &str, lines: &[u8]) -> Result<u64, StoreError> {
        check_agent(agent)?;
        // Taken out of the map while this append runs: one agent's transcript has one writer
        // (its lease holder), and others' appends need not wait for this one.
        let known = self
            .inner
            .transcript_tails
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(agent);
        let mut tail = match known {
            // Appending nothing checks nothing against the server: ask it.
            Some(tail) if !lines.is_empty() => tail,
            _ => self.fetch_tail(agent).await?,
        };
        let mut result = self.append_after(agent, &mut tail, lines).await;
        if let Ok(false) = result {
            // Another process appended since this one last did: start from the tail it left.
            tail = self.fetch_tail(agent).await?;
            result = self.append_after(agent, &mut tail, lines).await;
        }
        let result = match result {
            Ok(true) => Ok(()),
            Ok(false) => Err(self.inner.conn.error(
                format!("append to the transcript of {agent}"),
                "other processes keep appending to it; only one process may run an agent (its lease holder)",
            )),
            Err(e) => Err(e),
        };
        // After a failure the server may hold more than this process saw stored: ask again.
        if result.is_ok() {
            self.inner
                .transcript_tails
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .insert(agent.to_string(), tail);
        }
        result.map(|()| tail.end)
    }

    async fn read_transcript_from(
        &self,
        agent: &str,
        from: u64,
    ) -> Result<TranscriptBytes, StoreError> {
        check_agent(agent)?;
        let mut bytes = self.transcript_bytes(agent).await?;
        let len = bytes.len() as u64;
        let start = usize::try_from(from).unwrap_or(usize::MAX).min(bytes.len());
        bytes.drain(..start);
        let keep = bytes.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
        bytes.truncate(keep);
        Ok(TranscriptBytes {
            start: from,
            bytes,
            len,
        })
    }

    async fn read_transcript(&self, agent: &str) -> Result<TranscriptRead, StoreError> {
        check_agent(agent)?;
        let bytes = self.transcript_bytes(agent).await?;
        let source = format!("{} (transcript of {agent})", self.server());
        let log = jsonl::parse_log::<serde_json::Value>(bytes, "transcript", &source);
        Ok(TranscriptRead {
            entries: log.entries,
            corrupt: log.corrupt.len(),
        })
    }
}
