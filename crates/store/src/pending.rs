//! The changed areas a backend's watcher has seen and the waiting side has not taken yet: OR-ed
//! into one set and taken whole, so a burst of a thousand changes costs the reader one wake-up.

use std::sync::atomic::{AtomicU16, Ordering};

use tokio::sync::Notify;

use crate::Areas;

/// Shared by a backend's watcher (which adds) and its [`crate::ChangeWatch`] (which takes).
#[derive(Debug, Default)]
pub struct PendingAreas {
    /// Areas changed since the waiting side last took them.
    bits: AtomicU16,
    /// Wakes the waiting side (a stored permit covers a change made before it waits).
    wake: Notify,
}

impl PendingAreas {
    /// Records that `areas` changed (nothing for an empty set).
    pub fn add(&self, areas: Areas) {
        if areas.is_empty() {
            return;
        }
        self.bits.fetch_or(areas.bits(), Ordering::AcqRel);
        self.wake.notify_one();
    }

    /// Waits until something changed, and takes everything that did.
    pub async fn take(&self) -> Areas {
        loop {
            let bits = self.bits.swap(0, Ordering::AcqRel);
            if bits != 0 {
                return Areas::from_bits(bits);
            }
            self.wake.notified().await;
        }
    }
}
