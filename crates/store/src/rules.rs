//! The rules every backend shares, written once above them: which overdue requests a sweep
//! expires, and which in-progress tasks go back to the board when their owner is gone. A
//! backend provides only storage (read, list, compare-and-set updates); these decide what the
//! updates do.

use troupe_protocol::{Request, RequestStatus};

use crate::error::StoreError;
use crate::{RequestFilter, RequestStore};

/// [`RequestStore::sweep_expired`]: moves every overdue pending request to expired, each
/// decided again on its current record (it may have been answered since it was listed), and
/// returns the ones it expired. A request that went away meanwhile is skipped.
pub async fn sweep_expired<S: RequestStore + ?Sized>(
    store: &S,
    now: u64,
) -> Result<Vec<Request>, StoreError> {
    let pending = RequestFilter {
        status: Some(RequestStatus::Pending),
        ..RequestFilter::default()
    };
    let mut expired = Vec::new();
    for listed in store.list_requests(&pending).await? {
        if !listed.is_overdue(now) {
            continue;
        }
        let mut expired_now = false;
        let updated = store
            .update_request(&listed.id, &mut |r| {
                expired_now = r.is_overdue(now);
                if expired_now {
                    r.expire(now)
                } else {
                    Ok(())
                }
            })
            .await;
        match updated {
            Ok(r) if expired_now => expired.push(r),
            Ok(_) | Err(StoreError::UnknownRequest { .. }) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(expired)
}

pub use crate::tasks::release_owned_where;
