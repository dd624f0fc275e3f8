//! Tool specs as the model sees them, built once and shared: an agent keeps the specs of the
//! tools it offers while they stay the same (by name and description), and every agent of the
//! process that offers the same tools shares one copy (interned by content), so a thousand
//! teammates hold one set of schemas and a model call copies none.

use std::sync::{Arc, Mutex, PoisonError, Weak};

use troupe_model::ToolSpec;
use troupe_tools::Registry;

/// Spec sets in use somewhere in the process.
static INTERNED: Mutex<Vec<Weak<[ToolSpec]>>> = Mutex::new(Vec::new());

/// One agent's specs and the tools (name, description) they were built from.
#[derive(Debug, Default)]
pub(crate) struct SpecCache {
    built_from: Vec<(String, String)>,
    specs: Option<Arc<[ToolSpec]>>,
}

impl SpecCache {
    /// The specs of `offered`: the cached ones while the tools are the same, else built anew
    /// (with `build`) and shared with any agent that has the same set.
    pub(crate) fn get(
        &mut self,
        offered: &Registry,
        build: impl FnOnce() -> Vec<ToolSpec>,
    ) -> Arc<[ToolSpec]> {
        let same = self.built_from.len() == offered.iter().count()
            && offered
                .iter()
                .zip(&self.built_from)
                .all(|(t, (name, description))| t.name() == name && t.description() == description);
        if let (true, Some(specs)) = (same, &self.specs) {
            return specs.clone();
        }
        let specs = intern(build());
        self.built_from = offered
            .iter()
            .map(|t| (t.name().to_string(), t.description().to_string()))
            .collect();
        self.specs = Some(specs.clone());
        specs
    }
}

/// The process's shared copy of `specs` (this one when none is alive yet).
fn intern(specs: Vec<ToolSpec>) -> Arc<[ToolSpec]> {
    let mut interned = INTERNED.lock().unwrap_or_else(PoisonError::into_inner);
    interned.retain(|w| w.strong_count() > 0);
    if let Some(found) = interned
        .iter()
        .filter_map(Weak::upgrade)
        .find(|known| **known == *specs)
    {
        return found;
    }
    let shared: Arc<[ToolSpec]> = specs.into();
    interned.push(Arc::downgrade(&shared));
    shared
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn spec(name: &str) -> ToolSpec {
        ToolSpec {
            name: name.into(),
            description: "d".into(),
            input_schema: json!({"type": "object"}),
        }
    }

    #[test]
    fn equal_sets_share_one_copy_and_different_ones_do_not() {
        let a = intern(vec![spec("x"), spec("y")]);
        let b = intern(vec![spec("x"), spec("y")]);
        assert!(Arc::ptr_eq(&a, &b));
        let c = intern(vec![spec("x")]);
        assert!(!Arc::ptr_eq(&a, &c));
        assert_eq!(&*c, &[spec("x")]);
    }
}
