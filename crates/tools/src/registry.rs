//! The tool registry: the ordered set of tools an agent offers the model, looked up by name.

use crate::{
    BashTool, DynTool, EditFileTool, GlobTool, GrepTool, NotebookEditTool, ReadFileTool,
    WebFetchTool, WebSearchTool, WriteFileTool,
};
use std::fmt;
use std::sync::Arc;

/// An ordered collection of tools with unique names; order is the order shown to the model.
#[derive(Clone, Default)]
pub struct Registry {
    tools: Vec<DynTool>,
}

impl Registry {
    /// An empty registry.
    pub fn new() -> Self {
        Registry::default()
    }

    /// A registry holding the built-in tools: bash, read_file, write_file, edit_file,
    /// notebook_edit, glob, grep, web_fetch, web_search.
    pub fn with_builtins() -> Self {
        let mut registry = Registry::new();
        registry.register(Arc::new(BashTool));
        registry.register(Arc::new(ReadFileTool));
        registry.register(Arc::new(WriteFileTool));
        registry.register(Arc::new(EditFileTool));
        registry.register(Arc::new(NotebookEditTool));
        registry.register(Arc::new(GlobTool));
        registry.register(Arc::new(GrepTool));
        registry.register(Arc::new(WebFetchTool::default()));
        registry.register(Arc::new(WebSearchTool::default()));
        registry
    }

    /// Adds a tool; one with the same name is replaced in place and returned.
    pub fn register(&mut self, tool: DynTool) -> Option<DynTool> {
        match self.tools.iter_mut().find(|t| t.name() == tool.name()) {
            Some(slot) => Some(std::mem::replace(slot, tool)),
            None => {
                self.tools.push(tool);
                None
            }
        }
    }

    /// The tool called `name`, if registered.
    pub fn get(&self, name: &str) -> Option<DynTool> {
        self.tools.iter().find(|t| t.name() == name).cloned()
    }

    /// Removes and returns the tool called `name`.
    pub fn remove(&mut self, name: &str) -> Option<DynTool> {
        let index = self.tools.iter().position(|t| t.name() == name)?;
        Some(self.tools.remove(index))
    }

    /// Keeps only the tools for which `keep` returns true (e.g. to apply an allow list).
    pub fn retain(&mut self, mut keep: impl FnMut(&DynTool) -> bool) {
        self.tools.retain(|t| keep(t));
    }

    /// The tools in order.
    pub fn iter(&self) -> impl Iterator<Item = &DynTool> {
        self.tools.iter()
    }

    /// The tool names in order.
    pub fn names(&self) -> Vec<&str> {
        self.tools.iter().map(|t| t.name()).collect()
    }

    /// How many tools are registered.
    pub fn len(&self) -> usize {
        self.tools.len()
    }

    /// True when no tool is registered.
    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }
}

impl fmt::Debug for Registry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.names()).finish()
    }
}
