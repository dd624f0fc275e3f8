//! Protocol requests: one key per request; every change is a compare-and-set on the revision
//! the FSM's decision was made from, so two responders on two machines cannot both win.

use troupe_protocol::{Event, Request, RequestError};
use troupe_store::{EventLog, RequestFilter, RequestStore, StoreError};

use crate::cas::Apply;
use crate::conn::Link;
use crate::kv::{Bucket, Cas};
use crate::roster::MAX_CAS_ROUNDS;
use crate::{to_bytes, NatsStore};

/// Ids become keys, so only a safe alphabet is accepted (ULIDs and UUIDs fit), as in the file
/// backend.
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

impl NatsStore {
    fn request_place(&self, id: &str) -> String {
        self.inner.requests.place(id)
    }

    async fn load_request(&self, id: &str) -> Result<Option<(Request, u64)>, StoreError> {
        check_id(id)?;
        let inner = &self.inner;
        let Some(record) = inner.requests.get(inner.conn.link(), id).await? else {
            return Ok(None);
        };
        let request = decode(&record.value, &self.request_place(id))?;
        Ok(Some((request, record.revision)))
    }

    /// Records an event; the request record is the source of truth, so a failure here is
    /// logged rather than undoing a committed transition.
    pub(crate) async fn record_quietly(&self, event: Event) {
        if let Err(e) = self.record(&event).await {
            tracing::warn!(error = %e, "could not record an event");
        }
    }

    async fn all_requests(&self) -> Result<Vec<Request>, StoreError> {
        let inner = &self.inner;
        let mut out = Vec::new();
        for record in inner.requests.snapshot(inner.conn.link()).await? {
            match serde_json::from_slice::<Request>(&record.value) {
                Ok(r) => out.push(r),
                // One bad record must not hide every other request; it is reported instead.
                Err(e) => {
                    tracing::warn!(key = %record.key, error = %e, "skipping unreadable request")
                }
            }
        }
        out.sort_by(|a, b| (a.created_at, &a.id).cmp(&(b.created_at, &b.id)));
        Ok(out)
    }
}

#[async_trait::async_trait]
impl RequestStore for NatsStore {
    async fn create_request(&self, request: &Request) -> Result<(), StoreError> {
        check_id(&request.id)?;
        let inner = &self.inner;
        let bytes = to_bytes("request", request)?;
        match inner
            .requests
            .create(inner.conn.link(), &request.id, bytes)
            .await?
        {
            Cas::Done(_) => {}
            Cas::Conflict => {
                return Err(StoreError::DuplicateRequest {
                    id: request.id.clone(),
                    place: self.request_place(&request.id),
                })
            }
        }
        self.record_quietly(troupe_store::record::request_opened(request))
            .await;
        Ok(())
    }

    async fn get_request(&self, id: &str) -> Result<Option<Request>, StoreError> {
        Ok(self.load_request(id).await?.map(|(r, _)| r))
    }

    async fn update_request(
        &self,
        id: &str,
        f: troupe_store::RequestUpdate<'_>,
    ) -> Result<Request, StoreError> {
        check_id(id)?;
        // As the roster's updates: a compare-and-set loop, pausing (jittered) after a lost
        // round, `f` applied to each read.
        let mut apply = |mut request: Request| {
            let outcome = f(&mut request);
            Ok((request, outcome))
        };
        let (bucket, link) = (&self.inner.requests, self.inner.conn.link());
        let place = self.request_place(id);
        let (before, request, outcome) = update_loop(bucket, link, &mut apply, id, place).await?;
        if request != before {
            for event in troupe_store::record::request_changes(before.history.len(), &request) {
                self.record_quietly(event).await;
            }
        }
        outcome?;
        Ok(request)
    }

    async fn list_requests(&self, filter: &RequestFilter) -> Result<Vec<Request>, StoreError> {
        let mut all = self.all_requests().await?;
        all.retain(|r| filter.matches(r));
        Ok(all)
    }
}

/// A request record's bytes, read back; what does not parse is corrupt at `place`.
fn decode(bytes: &[u8], place: &str) -> Result<Request, StoreError> {
    serde_json::from_slice(bytes).map_err(|e| StoreError::Corrupt {
        place: place.to_string(),
        detail: e.to_string(),
    })
}

/// What one application of a request update gave: the record after it, and the closure's own
/// verdict (returned after the record is committed).
type Applied = (Request, Result<(), RequestError>);

/// [`RequestStore::update_request`]'s loop: read, apply, write on the revision read; after a
/// lost round, a pause on the runtime's timer and again. Returns the
/// record before and after (equal when the closure changed nothing) and the verdict.
async fn update_loop(
    bucket: &Bucket,
    link: &Link,
    f: Apply<'_, Request, Applied>,
    id: &str,
    place: String,
) -> Result<(Request, Request, Result<(), RequestError>), StoreError> {
    let mut backoff = crate::backoff::Backoff::conflicts();
    for round in 0..MAX_CAS_ROUNDS {
        if round > 0 {
            tokio::time::sleep(backoff.next_pause()).await;
        }
        let Some(record) = bucket.get(link, id).await? else {
            return Err(StoreError::UnknownRequest {
                id: id.to_string(),
                place,
            });
        };
        let before = decode(&record.value, &place)?;
        let (mut request, outcome) = f(before.clone())?;
        // The record's key is its id; a closure must not move it.
        request.id = before.id.clone();
        if request == before {
            return Ok((before, request, outcome));
        }
        let bytes = to_bytes("request", &request)?;
        if let Cas::Done(_) = bucket.update(link, id, bytes, record.revision).await? {
            return Ok((before, request, outcome));
        }
    }
    Err(crate::roster::cas_exhausted(link, &format!("request {id}")))
}
