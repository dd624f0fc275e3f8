//! The envelope ids this process acknowledged lately, per agent: a server that hands a message
//! out again after acknowledging it (a stream leader killed before the ack's removal was
//! replicated, a consumer taken over after an unconfirmed ack) does not make the store deliver
//! it twice — the repeat is acknowledged again and left out of the batch. Bounded: the oldest
//! ids are forgotten first (a repeat that late is caught by the transcript's own ids).

use std::collections::{HashSet, VecDeque};

/// How many acknowledged ids are remembered per agent.
const REMEMBER: usize = 16_384;

/// One agent's recently acknowledged envelope ids.
#[derive(Debug, Default)]
pub struct RecentlyAcked {
    order: VecDeque<String>,
    ids: HashSet<String>,
}

impl RecentlyAcked {
    /// Remembers `id` as acknowledged.
    pub fn insert(&mut self, id: &str) {
        if !self.ids.insert(id.to_string()) {
            return;
        }
        self.order.push_back(id.to_string());
        while self.order.len() > REMEMBER {
            if let Some(old) = self.order.pop_front() {
                self.ids.remove(&old);
            }
        }
    }

    /// True when `id` was acknowledged here lately.
    pub fn contains(&self, id: &str) -> bool {
        self.ids.contains(id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_remembered_until_the_oldest_fall_off() {
        let mut r = RecentlyAcked::default();
        r.insert("a");
        r.insert("a");
        assert!(r.contains("a") && !r.contains("b"));
        for i in 0..REMEMBER {
            r.insert(&i.to_string());
        }
        assert!(!r.contains("a"), "the oldest is forgotten first");
        assert!(r.contains(&(REMEMBER - 1).to_string()));
        assert_eq!(r.order.len(), REMEMBER);
    }
}
