//! Tool specs as the model sees them, built once and shared: an agent keeps the specs of the
//! tools it offers while they stay the same (by name and description), and every agent of the
//! process that offers the same tools shares one copy (interned by content), so a thousand
//! teammates hold one set of schemas and a model call copies none.

use std::sync::Arc;

use troupe_model::ToolSpec;
use troupe_tools::Registry;

use crate::interned::Interned;

/// Spec sets in use somewhere in the process.
static INTERNED: Interned<SpecSet> = Interned::new();

/// A set of specs with what the context meter counts for them, worked out once per set.
#[derive(Debug)]
struct SpecSet {
    specs: Arc<[ToolSpec]>,
    /// Bytes of the names, descriptions and schemas, as the context meter estimates them.
    bytes: u64,
}

/// One agent's specs. They tell the tools they were built from (each spec carries its tool's
/// name and description), so no copy of those is kept beside them: a thousand teammates held
/// 6 MiB of them.
#[derive(Debug, Default)]
pub(crate) struct SpecCache {
    set: Option<Arc<SpecSet>>,
}

/// Whether `specs` were built from the tools `offered` offers now (by name and description,
/// in order).
fn built_from(specs: &[ToolSpec], offered: &Registry) -> bool {
    specs.len() == offered.iter().count()
        && offered
            .iter()
            .zip(specs.iter())
            .all(|(t, spec)| t.name() == spec.name && t.description() == spec.description)
}

impl SpecCache {
    /// The specs of `offered`: the cached ones while the tools are the same, else those of
    /// another agent of the process that offers the same tools, else built anew (with `build`,
    /// one spec per offered tool, in order, with its name and description) and shared.
    /// Generating the schemas was each teammate's largest cost before its first model call.
    pub(crate) fn get(
        &mut self,
        offered: &Registry,
        build: impl FnOnce() -> Vec<ToolSpec>,
    ) -> Arc<[ToolSpec]> {
        self.set(offered, build).specs.clone()
    }

    /// The bytes of the specs of `offered` (names, descriptions and schemas) as the context
    /// meter estimates them; the specs are found or built as [`SpecCache::get`] does.
    pub(crate) fn bytes(
        &mut self,
        offered: &Registry,
        build: impl FnOnce() -> Vec<ToolSpec>,
    ) -> u64 {
        self.set(offered, build).bytes
    }

    fn set(&mut self, offered: &Registry, build: impl FnOnce() -> Vec<ToolSpec>) -> &SpecSet {
        let current = match self.set.take() {
            Some(set) if built_from(&set.specs, offered) => set,
            _ => known(offered).unwrap_or_else(|| intern(build())),
        };
        self.set.insert(current)
    }
}

/// A set some agent of the process built from the same tools, if one is alive.
fn known(offered: &Registry) -> Option<Arc<SpecSet>> {
    INTERNED.find(|set| built_from(&set.specs, offered))
}

/// The process's shared copy of `specs` (this one when none is alive yet).
fn intern(specs: Vec<ToolSpec>) -> Arc<SpecSet> {
    let bytes = specs
        .iter()
        .map(|spec| {
            (spec.name.len() + spec.description.len()) as u64
                + crate::compact::meter::schema_bytes(&spec.input_schema)
        })
        .sum();
    let made = Arc::new(SpecSet {
        specs: specs.into(),
        bytes,
    });
    INTERNED.intern(made, |a, b| *a.specs == *b.specs)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn spec(name: &str) -> ToolSpec {
        ToolSpec {
            name: name.into(),
            description: "d".into(),
            input_schema: json!({"type": "object"}).into(),
        }
    }

    #[test]
    fn equal_sets_share_one_copy_and_different_ones_do_not() {
        let a = intern(vec![spec("x"), spec("y")]);
        let b = intern(vec![spec("x"), spec("y")]);
        assert!(Arc::ptr_eq(&a, &b));
        let c = intern(vec![spec("x")]);
        assert!(!Arc::ptr_eq(&a, &c));
        assert_eq!(&*c.specs, &[spec("x")]);
        assert_eq!(
            c.bytes,
            2 + crate::compact::meter::json_bytes(&json!({"type": "object"}))
        );
    }
}
