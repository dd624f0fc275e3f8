//! Mailboxes: `inbox/<agent>.jsonl` is an append-only log written by any number of processes
//! under an exclusive lock; `inbox/<agent>.cursor` is the byte offset its owner has consumed.
//!
//! Delivery is at-least-once: `fetch` never moves the cursor, `ack` does, and only after the
//! caller has persisted the messages. A fully consumed log is truncated under its lock, cursor
//! first: a crash between the two re-delivers the batch, which the consumer skips by id.
//! Each mailbox has a single consumer, its owner.

use std::collections::BTreeMap;
use std::fs::{self, OpenOptions};
use std::io::ErrorKind;
use std::os::unix::fs::FileExt;
use std::path::PathBuf;

use troupe_protocol::Envelope;

use super::sync::{SyncEvents, SyncMailbox};
use super::{check_agent, jsonl, now_ms, to_line, wake, FileStore, Folder, SyncKind};
use crate::error::StoreError;
use crate::{AckToken, Batch, CorruptLine, Watch};
use troupe_durable::lock::LockGuard;

/// Digits of a cursor (`u64::MAX` has 20).
const CURSOR_DIGITS: usize = 20;

impl FileStore {
    fn log_path(&self, agent: &str) -> PathBuf {
        self.inbox_dir().join(format!("{agent}.jsonl"))
    }

    fn cursor_path(&self, agent: &str) -> PathBuf {
        self.inbox_dir().join(format!("{agent}.cursor"))
    }

    /// The consumed offset; a missing or unreadable cursor counts as 0 (re-delivery is safe).
    fn read_cursor(&self, agent: &str) -> Result<u64, StoreError> {
        let path = self.cursor_path(agent);
        match fs::read_to_string(&path) {
            Ok(text) => Ok(text.trim().parse().unwrap_or_else(|_| {
                tracing::warn!(path = %path.display(), "unreadable cursor; re-reading the mailbox from the start");
                0
            })),
            Err(e) if e.kind() == ErrorKind::NotFound => Ok(0),
            Err(e) => Err(StoreError::io("read", path)(e)),
        }
    }

    /// Writes the cursor in place: fixed width (20 digits and a newline, one sector, so never
    /// torn), no temp file and no rename, synced through the group commit. A cursor lost
    /// because its new file's directory entry was not synced reads as 0: re-delivery, which
    /// ids make harmless.
    fn write_cursor(&self, agent: &str, offset: u64) -> Result<(), StoreError> {
        self.folder(Folder::Inbox)?;
        let path = self.cursor_path(agent);
        let file = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(StoreError::io("open", &path))?;
        let text = format!("{offset:0CURSOR_DIGITS$}\n");
        file.write_all_at(text.as_bytes(), 0)
            .map_err(StoreError::io("write", &path))?;
        // An older cursor written whole is at most 20 digits: always covered, never longer.
        let len = file
            .metadata()
            .map_err(StoreError::io("stat", &path))?
            .len();
        if len > text.len() as u64 {
            file.set_len(text.len() as u64)
                .map_err(StoreError::io("truncate", &path))?;
        }
        self.sync(file, &path, SyncKind::Data)
    }

    /// The mail past `agent`'s cursor, read without a lock; corrupt lines are returned, not
    /// reported (a delivery reports them: see the adapter's `fetch`).
    fn read_mailbox(&self, agent: &str) -> Result<Batch, StoreError> {
        check_agent(agent)?;
        let path = self.log_path(agent);
        let cursor = self.read_cursor(agent)?;
        let mut chunk = jsonl::read_from(&path, cursor)?;
        if cursor > chunk.file_len {
            // Only a crash or an outside truncation leaves the cursor past the end; the log
            // was reset, so everything in it is new.
            tracing::warn!(
                agent,
                cursor,
                len = chunk.file_len,
                "mailbox cursor past end of log; reading from 0"
            );
            chunk = jsonl::read_from(&path, 0)?;
        }
        let (messages, corrupt) = jsonl::parse_chunk::<Envelope>(&chunk);
        let end = chunk.end();
        Ok(Batch {
            messages,
            ack: (end != chunk.start).then_some(AckToken::from_backend(end)),
            corrupt,
        })
    }

    /// Records a corrupt line of `agent`'s inbox as an event (and logs it), once delivered.
    pub(super) fn report_corrupt(&self, agent: &str, bad: &CorruptLine) {
        tracing::warn!(agent, offset = bad.offset, error = %bad.error, "skipping corrupt mailbox line");
        let place = format!("line at byte {} of inbox/{agent}.jsonl", bad.offset);
        let event = crate::record::corrupt_mail(agent, &place, bad, now_ms());
        if let Err(e) = self.record(&event) {
            tracing::warn!(error = %e, "could not record corrupt_mail event");
        }
    }

    fn wake(&self, agent: &str) {
        wake::send(self.inner.waker.as_ref(), &self.inbox_dir(), agent);
    }
}

impl SyncMailbox for FileStore {
    fn append(&self, envelope: &Envelope) -> Result<(), StoreError> {
        check_agent(&envelope.to)?;
        let line = to_line("mail envelope", envelope)?;
        self.folder(Folder::Inbox)?;
        let path = self.log_path(&envelope.to);
        let file = jsonl::write_lines(&path, &line)?;
        let ticket = self.sync_later(file, &path, SyncKind::Data);
        // Woken at once: the recipient may read the line while it is being synced (as it
        // always could), but the sender hears "sent" only once it is durable.
        self.wake(&envelope.to);
        Ok(ticket.wait()?)
    }

    fn append_many(&self, envelopes: &[Envelope]) -> Result<(), StoreError> {
        // One buffer per recipient, messages kept in the caller's order.
        let mut by_recipient: BTreeMap<&str, Vec<u8>> = BTreeMap::new();
        for env in envelopes {
            check_agent(&env.to)?;
            let line = to_line("mail envelope", env)?;
            by_recipient
                .entry(env.to.as_str())
                .or_default()
                .extend_from_slice(&line);
        }
        // Every recipient's lines are written first and synced in one group commit.
        if !by_recipient.is_empty() {
            self.folder(Folder::Inbox)?;
        }
        let mut tickets = Vec::with_capacity(by_recipient.len());
        for (agent, bytes) in &by_recipient {
            let path = self.log_path(agent);
            let file = jsonl::write_lines(&path, bytes)?;
            tickets.push(self.sync_later(file, &path, SyncKind::Data));
            self.wake(agent);
        }
        tickets
            .into_iter()
            .try_for_each(troupe_durable::commit::Ticket::wait)?;
        Ok(())
    }

    fn peek(&self, agent: &str) -> Result<Batch, StoreError> {
        self.read_mailbox(agent)
    }

    fn ack(&self, agent: &str, token: AckToken) -> Result<(), StoreError> {
        check_agent(agent)?;
        let end = token.backend_position();
        let path = self.log_path(agent);
        let log = match OpenOptions::new().read(true).write(true).open(&path) {
            Ok(f) => f,
            Err(e) if e.kind() == ErrorKind::NotFound && end == 0 => return Ok(()),
            Err(e) => return Err(StoreError::io("open", &path)(e)),
        };
        // Under the writers' lock no line can land between the length check and truncation.
        let truncated = {
            let _guard = LockGuard::exclusive(&log, &path)?;
            let len = log.metadata().map_err(StoreError::io("stat", &path))?.len();
            if end > len {
                return Err(StoreError::BadAck {
                    agent: agent.to_string(),
                    detail: format!(
                        "byte {end} is past the end of {}, which is {len} bytes long",
                        path.display()
                    ),
                });
            }
            let mut last = [0u8; 1];
            let at_line_end = end == 0
                || (log
                    .read_at(&mut last, end - 1)
                    .map_err(StoreError::io("read", &path))?
                    == 1
                    && last[0] == b'\n');
            if !at_line_end {
                return Err(StoreError::BadAck {
                    agent: agent.to_string(),
                    detail: format!("byte {end} is not the end of a line in {}", path.display()),
                });
            }
            let cursor = self.read_cursor(agent)?;
            let cursor = if cursor > len { 0 } else { cursor };
            if end <= cursor {
                return Ok(()); // already consumed: a repeated ack is harmless
            }
            if end == len {
                // Cursor first, then truncate: a crash in between re-delivers, never loses.
                self.write_cursor(agent, 0)?;
                log.set_len(0).map_err(StoreError::io("truncate", &path))?;
                true
            } else {
                self.write_cursor(agent, end)?;
                false
            }
        };
        if truncated {
            // Synced once the lock is released: appends made meanwhile share the sync.
            self.sync(log, &path, SyncKind::All)?;
        }
        Ok(())
    }
}

impl FileStore {
    /// Binds the agent's wake socket (a non-blocking socket call; inside a tokio runtime).
    pub(super) fn watch_mailbox(&self, agent: &str) -> Result<Box<dyn Watch>, StoreError> {
        check_agent(agent)?;
        Ok(Box::new(wake::SocketWatch::bind(&self.inbox_dir(), agent)?))
    }

    /// Sends a wake-up datagram (non-blocking).
    pub(super) fn notify_mailbox(&self, agent: &str) -> Result<(), StoreError> {
        check_agent(agent)?;
        self.wake(agent);
        Ok(())
    }
}
