//! Protocol requests `requests/<id>.json`: one atomically written file each; every change is
//! made under the exclusive lock of the request's stripe (`requests/.lock-<n>`, one of
//! [`STRIPES`], chosen by a hash of the id) and recorded in the event log. Changes of requests
//! in different stripes run side by side, so their syncs share group commits.

use std::fs;
use std::io::ErrorKind;
use std::path::PathBuf;

use troupe_protocol::{Event, Request, RequestError};

use super::sync::{SyncEvents, SyncRequests};
use super::{FileStore, Folder};
use crate::error::StoreError;
use crate::RequestFilter;
use troupe_durable::lock::LockFile;

/// Lock files requests are spread over.
const STRIPES: u64 = 16;

/// Ids become file names, so only a safe alphabet is accepted (ULIDs and UUIDs fit).
fn check_id(id: &str) -> Result<(), StoreError> {
    let ok = !id.is_empty()
        && id.len() <= 64
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if ok {
        Ok(())
    } else {
        Err(StoreError::BadRequestId { id: id.to_string() })
    }
}

impl FileStore {
    fn request_path(&self, id: &str) -> Result<PathBuf, StoreError> {
        check_id(id)?;
        Ok(self.requests_dir().join(format!("{id}.json")))
    }

    /// The exclusive lock of the stripe `id` belongs to (FNV-1a of the id: stable across
    /// versions and processes).
    fn lock_request(&self, id: &str) -> Result<LockFile, StoreError> {
        let hash = id.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
        });
        let stripe = hash % STRIPES;
        let dir = self.folder(Folder::Requests)?;
        Ok(LockFile::acquire(&dir.join(format!(".lock-{stripe}")))?)
    }

    fn load_request(&self, id: &str) -> Result<Option<Request>, StoreError> {
        let path = self.request_path(id)?;
        match fs::read(&path) {
            Ok(bytes) => {
                serde_json::from_slice(&bytes)
                    .map(Some)
                    .map_err(|e| StoreError::Corrupt {
                        place: path.display().to_string(),
                        detail: e.to_string(),
                    })
            }
            Err(e) if e.kind() == ErrorKind::NotFound => Ok(None),
            Err(e) => Err(StoreError::io("read", path)(e)),
        }
    }

    fn save_request(&self, request: &Request) -> Result<(), StoreError> {
        let path = self.request_path(&request.id)?;
        let bytes = serde_json::to_vec_pretty(request).map_err(|source| StoreError::Serialize {
            what: "request",
            source,
        })?;
        self.replace_file(&path, &bytes)
    }

    /// Records an event; the request file is already the source of truth, so a failure here
    /// is logged rather than undoing a committed transition.
    fn record_quietly(&self, event: Event) {
        if let Err(e) = self.record(&event) {
            tracing::warn!(error = %e, "could not record request event");
        }
    }

    fn record_changes(&self, before_history: usize, r: &Request) {
        for event in crate::record::request_changes(before_history, r) {
            self.record_quietly(event);
        }
    }

    fn all_requests(&self) -> Result<Vec<Request>, StoreError> {
        let dir = self.requests_dir();
        let entries = match fs::read_dir(&dir) {
            Ok(entries) => entries,
            // Made with the first request.
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(StoreError::io("list", &dir)(e)),
        };
        let mut out = Vec::new();
        for entry in entries {
            let entry = entry.map_err(StoreError::io("list", &dir))?;
            let name = entry.file_name();
            let Some(id) = name.to_str().and_then(|n| n.strip_suffix(".json")) else {
                continue; // the lock file, temp files
            };
            if id.starts_with('.') || check_id(id).is_err() {
                continue;
            }
            match self.load_request(id) {
                Ok(Some(r)) => out.push(r),
                Ok(None) => {} // removed while listing
                // One bad file must not hide every other request; it is reported instead.
                Err(e) => tracing::warn!(error = %e, "skipping unreadable request"),
            }
        }
        out.sort_by(|a, b| (a.created_at, &a.id).cmp(&(b.created_at, &b.id)));
        Ok(out)
    }
}

impl SyncRequests for FileStore {
    fn create_request(&self, request: &Request) -> Result<(), StoreError> {
        let path = self.request_path(&request.id)?;
        let _lock = self.lock_request(&request.id)?;
        if path.exists() {
            return Err(StoreError::DuplicateRequest {
                id: request.id.clone(),
                place: path.display().to_string(),
            });
        }
        self.save_request(request)?;
        let event = crate::record::request_opened(request);
        self.record_quietly(event);
        Ok(())
    }

    fn get_request(&self, id: &str) -> Result<Option<Request>, StoreError> {
        self.load_request(id)
    }

    fn update_request(
        &self,
        id: &str,
        f: &mut dyn FnMut(&mut Request) -> Result<(), RequestError>,
    ) -> Result<Request, StoreError> {
        check_id(id)?;
        let _lock = self.lock_request(id)?;
        let Some(before) = self.load_request(id)? else {
            return Err(StoreError::UnknownRequest {
                id: id.to_string(),
                place: self.request_path(id)?.display().to_string(),
            });
        };
        let mut request = before.clone();
        let outcome = f(&mut request);
        if request.id != before.id {
            // The record's file name is its id; a closure must not move it.
            request.id = before.id.clone();
        }
        if request != before {
            self.save_request(&request)?;
            self.record_changes(before.history.len(), &request);
        }
        outcome?;
        Ok(request)
    }

    fn list_requests(&self, filter: &RequestFilter) -> Result<Vec<Request>, StoreError> {
        let mut all = self.all_requests()?;
        all.retain(|r| filter.matches(r));
        Ok(all)
    }
}
