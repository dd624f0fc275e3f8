//! A member's transcript as team state. The agent loop writes a local file; when the team's
//! store keeps transcripts elsewhere (NATS: [`troupe_store::TranscriptStore::transcript_is_cached`])
//! that file is this machine's cache, and here is how it stays in step:
//!
//! - before the member's agent is built, [`prepare`] reconciles the cache with the store: a
//!   member that rejoins on another machine (or whose cache was lost) gets the store's copy;
//!   lines the agent synced here that never reached the store (the server was away when it
//!   died) are handed over;
//! - while it runs, [`StoreMirror`] appends each batch of lines the agent synced to the store.
//!
//! On the file backend the file is the transcript itself: nothing here runs.

use std::path::Path;
use std::sync::Arc;
use tokio::sync::Mutex;

use troupe_agent::{MirrorError, TranscriptMirror};
use troupe_store::{SharedStore, StoreError};

/// Makes `agent`'s local transcript file hold exactly what the store holds, and returns the
/// mirror that keeps it so; `None` when the file is the store's own (nothing to mirror).
/// Blocking: call it off the async workers.
pub async fn prepare(
    store: &SharedStore,
    agent: &str,
    path: &Path,
) -> Result<Option<StoreMirror>, StoreError> {
    if !store.transcript_is_cached() {
        return Ok(None);
    }
    // Ends a line torn by a writer that died on another machine, and tells the length.
    let mut end = store.append_transcript_lines(agent, b"").await?;
    let local_len = std::fs::metadata(path).map_or(0, |m| m.len());
    if end != local_len {
        end = reconcile(store, agent, path).await?;
    }
    Ok(Some(StoreMirror {
        store: store.clone(),
        agent: agent.to_string(),
        state: Mutex::new(State { end, dirty: false }),
    }))
}

/// The cache and the store differ: the store's copy wins, unless the cache holds it all and
/// more (lines synced here that the store missed), which are then appended to the store.
/// Returns the store's length after.
async fn reconcile(store: &SharedStore, agent: &str, path: &Path) -> Result<u64, StoreError> {
    let remote = store.read_transcript_from(agent, 0).await?;
    let local = match std::fs::read(path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
        Err(e) => return Err(StoreError::io("read", path.to_path_buf())(e)),
    };
    if local.len() > remote.bytes.len() && local.starts_with(&remote.bytes) {
        let mut missed = local[remote.bytes.len()..].to_vec();
        if missed.last() != Some(&b'\n') {
            // A line torn here stays a line of its own, as the agent's file seals it.
            missed.push(b'\n');
        }
        tracing::info!(
            agent,
            bytes = missed.len(),
            "handing the transcript lines the store missed over to it"
        );
        return store.append_transcript_lines(agent, &missed).await;
    }
    if !local.is_empty() && !remote.bytes.starts_with(&local) {
        // Two machines wrote different conversations under one name: keep this one aside.
        let aside = path.with_extension("jsonl.replaced");
        tracing::warn!(agent, aside = %aside.display(), "the local transcript differs from the team's; the team's copy wins");
        std::fs::rename(path, &aside).map_err(StoreError::io("rename", path.to_path_buf()))?;
    }
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(StoreError::io("create", dir.to_path_buf()))?;
    }
    troupe_durable::atomic::write_atomic(path, &remote.bytes)?;
    Ok(remote.end())
}

/// Appends what a member's agent synced to its transcript file to the team's store.
pub struct StoreMirror {
    store: SharedStore,
    agent: String,
    state: Mutex<State>,
}

/// What the mirror knows of the store's copy.
struct State {
    /// Its length after the mirror's last append.
    end: u64,
    /// The last append failed: part of it may be stored, so ask how much before the next.
    dirty: bool,
}

impl StoreMirror {
    /// The mirror as the agent builder takes it.
    pub fn shared(self) -> Arc<dyn TranscriptMirror> {
        Arc::new(self)
    }
}

#[async_trait::async_trait]
impl TranscriptMirror for StoreMirror {
    async fn mirror(&self, lines: &[u8]) -> Result<(), MirrorError> {
        let mut state = self.state.lock().await;
        let fail = |e: StoreError| {
            MirrorError(format!(
                "{e} (the lines are kept here and handed over at the next sync)"
            ))
        };
        let mut skip = 0;
        if state.dirty {
            // What a failed append stored already is not appended twice.
            let now = self.store.transcript_len(&self.agent).await.map_err(fail)?;
            skip = usize::try_from(now.saturating_sub(state.end))
                .unwrap_or(usize::MAX)
                .min(lines.len());
        }
        match self
            .store
            .append_transcript_lines(&self.agent, &lines[skip..])
            .await
        {
            Ok(end) => {
                *state = State { end, dirty: false };
                Ok(())
            }
            Err(e) => {
                state.dirty = true;
                Err(fail(e))
            }
        }
    }
}
