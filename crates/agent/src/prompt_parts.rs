//! An agent's system prompt as the agent keeps it between calls: the part before the prompt's
//! shared mark (tool guidance, workspace, memory, the sections every agent of the same tools
//! gets), shared by every agent of the process whose prompt starts the same (interned by
//! content), and the agent's own rest (who it is, its sections, the date). Each model call gets
//! them joined: byte for byte the prompt that was built, so the cache marks and the prefix the
//! provider caches are unchanged. A thousand agents built alike held a thousand copies of the
//! same few kilobytes.

use std::sync::Arc;

use crate::interned::Interned;
use crate::prompt::SystemPrompt;

/// Shared parts in use somewhere in the process.
static INTERNED: Interned<str> = Interned::new();

/// A system prompt in two parts.
#[derive(Debug, Clone)]
pub(crate) struct HeldPrompt {
    shared: Arc<str>,
    own: Box<str>,
}

impl HeldPrompt {
    /// Keeps `prompt`, its part before the shared mark shared.
    pub(crate) fn new(prompt: &SystemPrompt) -> HeldPrompt {
        let text = prompt.text.as_str();
        let cut = prompt.marks.shared_end.min(text.len());
        let cut = if text.is_char_boundary(cut) { cut } else { 0 };
        let (shared, own) = text.split_at(cut);
        HeldPrompt {
            shared: intern(shared),
            own: own.into(),
        }
    }

    /// The whole prompt, as built.
    pub(crate) fn whole(&self) -> Arc<str> {
        if self.own.is_empty() {
            return Arc::clone(&self.shared);
        }
        let mut text = String::with_capacity(self.len());
        text.push_str(&self.shared);
        text.push_str(&self.own);
        text.into()
    }

    /// Its length in bytes.
    pub(crate) fn len(&self) -> usize {
        self.shared.len() + self.own.len()
    }
}

/// The process's copy of `text`, made if there is none.
fn intern(text: &str) -> Arc<str> {
    INTERNED
        .find(|held| held == text)
        .unwrap_or_else(|| INTERNED.intern(text.into(), |a, b| a == b))
}

#[cfg(test)]
mod tests {
    use super::*;
    use troupe_model::CacheMarks;

    fn prompt(shared: &str, own: &str) -> SystemPrompt {
        SystemPrompt {
            text: format!("{shared}{own}"),
            marks: CacheMarks {
                shared_end: shared.len(),
                stable_end: shared.len() + own.len(),
            },
        }
    }

    #[test]
    fn prompts_that_start_the_same_share_that_part_and_join_to_what_was_built() {
        let shared = "# How to work\n- the same for everyone, é\n";
        let a = prompt(shared, "\n# You\nYou are mate-001.\n");
        let b = prompt(shared, "\n# You\nYou are mate-002.\n");
        let (held_a, held_b) = (HeldPrompt::new(&a), HeldPrompt::new(&b));
        assert!(Arc::ptr_eq(&held_a.shared, &held_b.shared));
        assert_eq!(&*held_a.whole(), a.text);
        assert_eq!(&*held_b.whole(), b.text);
        assert_eq!(held_a.len(), a.text.len());
        let other = HeldPrompt::new(&prompt("# Another workspace\n", "\n# You\nlead\n"));
        assert!(!Arc::ptr_eq(&held_a.shared, &other.shared));
    }

    #[test]
    fn a_mark_past_the_text_or_inside_a_character_keeps_the_whole_text() {
        let mut odd = prompt("é", "rest");
        odd.marks.shared_end = 1; // inside "é"
        assert_eq!(&*HeldPrompt::new(&odd).whole(), "érest");
        odd.marks.shared_end = 99;
        assert_eq!(&*HeldPrompt::new(&odd).whole(), "érest");
    }
}
