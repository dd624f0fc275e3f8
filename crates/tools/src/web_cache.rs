//! What web_fetch read recently, by URL: a page asked for again within 15 minutes is not
//! fetched again (as Claude Code's WebFetch keeps a self-cleaning 15-minute cache). Entries
//! expire on their own and the oldest go first when the cache holds too much.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

/// How long a fetched page is reused.
pub const TTL: Duration = Duration::from_secs(15 * 60);

/// The most body bytes kept at once.
const CAPACITY: usize = 50 * 1024 * 1024;

/// Cached values, by URL, each with when it was stored and its size.
pub struct Cache<T> {
    entries: Mutex<HashMap<String, (Instant, usize, T)>>,
    capacity: usize,
}

impl<T: Clone> Default for Cache<T> {
    fn default() -> Self {
        Cache::with_capacity(CAPACITY)
    }
}

impl<T: Clone> Cache<T> {
    /// An empty cache holding at most `capacity` bytes.
    pub fn with_capacity(capacity: usize) -> Self {
        Cache {
            entries: Mutex::new(HashMap::new()),
            capacity,
        }
    }

    /// The value stored for `url` less than [`TTL`] ago.
    pub fn get(&self, url: &str) -> Option<T> {
        let mut entries = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
        entries.retain(|_, (at, _, _)| at.elapsed() < TTL);
        entries.get(url).map(|(_, _, value)| value.clone())
    }

    /// Keeps `value` (`size` bytes) for `url`, dropping the oldest entries to make room; a
    /// value larger than the whole cache is not kept.
    pub fn put(&self, url: &str, size: usize, value: T) {
        if size > self.capacity {
            return;
        }
        let mut entries = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
        entries.remove(url);
        let mut held: usize = entries.values().map(|(_, size, _)| size).sum();
        while held + size > self.capacity {
            let Some(oldest) = entries
                .iter()
                .min_by_key(|(_, (at, _, _))| *at)
                .map(|(key, _)| key.clone())
            else {
                break;
            };
            if let Some((_, freed, _)) = entries.remove(&oldest) {
                held -= freed;
            }
        }
        entries.insert(url.to_string(), (Instant::now(), size, value));
    }
}

#[cfg(test)]
mod tests {
    use super::Cache;

    #[test]
    fn the_oldest_entries_make_room_and_an_oversized_value_is_not_kept() {
        let cache = Cache::with_capacity(10);
        cache.put("a", 4, 'a');
        std::thread::sleep(std::time::Duration::from_millis(2));
        cache.put("b", 4, 'b');
        cache.put("c", 4, 'c');
        assert_eq!(cache.get("a"), None);
        assert_eq!(cache.get("b"), Some('b'));
        assert_eq!(cache.get("c"), Some('c'));
        cache.put("huge", 11, 'h');
        assert_eq!(cache.get("huge"), None);
        assert_eq!(cache.get("c"), Some('c'));
    }
}
