//! [`ToolFilter`]: which tools an agent may be offered, decided by name by whoever builds it (a
//! teammate restricted to some tools or servers). The builder applies it to the base tools, to
//! every extension's tools (but those of extensions that say they must always stay) and to every
//! tool source, so a tool that appears while the agent runs is filtered as well.

use crate::extension::ToolSource;
use async_trait::async_trait;
use std::sync::Arc;
use troupe_tools::DynTool;

/// A test on tool names: `true` keeps the tool. Cheap to clone.
#[derive(Clone)]
pub struct ToolFilter(Arc<dyn Fn(&str) -> bool + Send + Sync>);

impl ToolFilter {
    /// A filter that keeps the tools `keep` says yes to.
    pub fn new(keep: impl Fn(&str) -> bool + Send + Sync + 'static) -> ToolFilter {
        ToolFilter(Arc::new(keep))
    }

    /// Whether the tool called `name` may be offered.
    pub fn keeps(&self, name: &str) -> bool {
        (self.0)(name)
    }

    /// A filter keeping what both keep; either alone when the other is `None`.
    pub fn both(a: Option<ToolFilter>, b: Option<ToolFilter>) -> Option<ToolFilter> {
        match (a, b) {
            (Some(a), Some(b)) => Some(ToolFilter::new(move |name| a.keeps(name) && b.keeps(name))),
            (a, b) => a.or(b),
        }
    }
}

impl std::fmt::Debug for ToolFilter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ToolFilter")
    }
}

/// A tool source seen through a filter: what it offers, less what the filter refuses.
pub(crate) struct FilteredSource {
    pub(crate) inner: Arc<dyn ToolSource>,
    pub(crate) filter: ToolFilter,
}

#[async_trait]
impl ToolSource for FilteredSource {
    async fn tools(&self) -> Vec<DynTool> {
        let mut tools = self.inner.tools().await;
        tools.retain(|t| self.filter.keeps(t.name()));
        tools
    }
}
