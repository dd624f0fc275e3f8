//! Tool specs as the model sees them, built once and shared: an agent keeps the specs of the
//! tools it offers while they stay the same (by name and description), and every agent of the
//! process that offers the same tools shares one copy (interned by content), so a thousand
//! teammates hold one set of schemas and a model call copies none.

use std::sync::{Arc, Mutex, PoisonError, Weak};

use troupe_model::ToolSpec;
use troupe_tools::Registry;

/// Spec sets in use somewhere in the process.
static INTERNED: Mutex<Vec<Weak<[ToolSpec]>>> = Mutex::new(Vec::new());

/// One agent's specs. They tell the tools they were built from (each spec carries its tool's
/// name and description), so no copy of those is kept beside them: a thousand teammates held
/// 6 MiB of them.
#[derive(Debug, Default)]
pub(crate) struct SpecCache {
    specs: Option<Arc<[ToolSpec]>>,
}

impl SpecCache {
    /// The specs of `offered`: the cached ones while the tools are the same, else built anew
    /// (with `build`, one spec per offered tool, in order, with its name and description) and
    /// shared with any agent that has the same set.
    pub(crate) fn get(
        &mut self,
        offered: &Registry,
        build: impl FnOnce() -> Vec<ToolSpec>,
    ) -> Arc<[ToolSpec]> {
        if let Some(specs) = &self.specs {
            let same = specs.len() == offered.iter().count()
                && offered
                    .iter()
                    .zip(specs.iter())
                    .all(|(t, spec)| t.name() == spec.name && t.description() == spec.description);
            if same {
                return specs.clone();
            }
        }
        let specs = intern(build());
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
