//! A process-wide table of values shared while some holder keeps them alive: the tool spec sets
//! and the system prompts' shared parts that agents built alike would otherwise each copy.

use std::sync::{Arc, Mutex, PoisonError, Weak};

/// Values in use somewhere in the process, held weakly: one gone from every holder leaves.
pub(crate) struct Interned<T: ?Sized> {
    held: Mutex<Vec<Weak<T>>>,
}

impl<T: ?Sized> Interned<T> {
    pub(crate) const fn new() -> Interned<T> {
        Interned {
            held: Mutex::new(Vec::new()),
        }
    }

    /// A live value `matches` accepts, if any.
    pub(crate) fn find(&self, matches: impl Fn(&T) -> bool) -> Option<Arc<T>> {
        let held = self.held.lock().unwrap_or_else(PoisonError::into_inner);
        held.iter().filter_map(Weak::upgrade).find(|v| matches(v))
    }

    /// The live value `same` finds equal to `made`, or `made`, kept from now on.
    pub(crate) fn intern(&self, made: Arc<T>, same: impl Fn(&T, &T) -> bool) -> Arc<T> {
        let mut held = self.held.lock().unwrap_or_else(PoisonError::into_inner);
        held.retain(|w| w.strong_count() > 0);
        if let Some(found) = held
            .iter()
            .filter_map(Weak::upgrade)
            .find(|v| same(v, &made))
        {
            return found;
        }
        held.push(Arc::downgrade(&made));
        made
    }
}
