//! The traffic the dashboard keeps: the latest events of the log in a bounded ring, however
//! long the team runs or however fast it writes, and when each agent was last heard of.

use std::collections::{HashMap, VecDeque};

use troupe_protocol::Event;

/// How many events the traffic pane keeps (older ones are dropped; the log keeps them all).
pub const HISTORY: usize = 2_000;

/// The latest events, oldest first, with counts of everything seen.
#[derive(Debug, Clone)]
pub struct History {
    events: VecDeque<Event>,
    cap: usize,
    /// Events seen since the dashboard started (kept or not).
    pub total: u64,
    /// Log lines that could not be parsed (skipped).
    pub corrupt: usize,
    /// When each agent last appeared in an event, ms since the epoch.
    pub last_active: HashMap<String, u64>,
}

impl Default for History {
    fn default() -> History {
        History::with_capacity(HISTORY)
    }
}

impl History {
    /// An empty history keeping at most `cap` events.
    pub fn with_capacity(cap: usize) -> History {
        History {
            events: VecDeque::with_capacity(cap.min(HISTORY)),
            cap: cap.max(1),
            total: 0,
            corrupt: 0,
            last_active: HashMap::new(),
        }
    }

    /// Adds events read from the log (in log order) and the number of lines skipped.
    pub fn extend(&mut self, events: Vec<Event>, corrupt: usize) {
        self.corrupt += corrupt;
        let skip = events.len().saturating_sub(self.cap);
        for (i, event) in events.into_iter().enumerate() {
            self.note(&event);
            if i < skip {
                continue; // pushed out by the later ones of this batch anyway
            }
            if self.events.len() == self.cap {
                self.events.pop_front();
            }
            self.events.push_back(event);
        }
    }

    fn note(&mut self, event: &Event) {
        self.total += 1;
        if let Some(agent) = &event.agent {
            let at = self.last_active.entry(agent.clone()).or_insert(0);
            *at = (*at).max(event.ts);
        }
    }

    /// How many events are kept.
    pub fn len(&self) -> usize {
        self.events.len()
    }

    /// True when nothing is kept.
    pub fn is_empty(&self) -> bool {
        self.events.is_empty()
    }

    /// The kept event at `index` (0 = oldest kept).
    pub fn get(&self, index: usize) -> Option<&Event> {
        self.events.get(index)
    }

    /// The kept events, oldest first.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = &Event> + ExactSizeIterator {
        self.events.iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use troupe_protocol::EventKind;

    fn ev(i: u64, agent: &str) -> Event {
        Event::new(EventKind::MessageSent, Some(agent), format!("e{i}"), i)
    }

    #[test]
    fn keeps_the_latest_within_its_bound() {
        let mut h = History::with_capacity(3);
        h.extend((0..5).map(|i| ev(i, "ann")).collect(), 1);
        h.extend(vec![ev(7, "bob")], 0);
        let kept: Vec<&str> = h.iter().map(|e| e.detail.as_str()).collect();
        assert_eq!(kept, vec!["e3", "e4", "e7"]);
        assert_eq!((h.total, h.corrupt, h.len()), (6, 1, 3));
        assert_eq!(h.last_active.get("ann"), Some(&4));
        assert_eq!(h.last_active.get("bob"), Some(&7));
    }
}
