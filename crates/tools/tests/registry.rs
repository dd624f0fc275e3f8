//! The registry: ordered, unique names, replace/remove/retain.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code may panic on a broken fixture

use async_trait::async_trait;
use serde_json::{json, Value};
use std::sync::Arc;
use troupe_tools::{Effect, Registry, Tool, ToolContext, ToolOutput};

/// A stand-in tool whose name can collide with a built-in.
struct Named(&'static str, &'static str);

#[async_trait]
impl Tool for Named {
    fn name(&self) -> &str {
        self.0
    }
    fn description(&self) -> &str {
        self.1
    }
    fn input_schema(&self) -> Value {
        json!({"type": "object"})
    }
    fn effect(&self, _input: &Value) -> Effect {
        Effect::Coordinate
    }
    async fn call(&self, _input: Value, _ctx: &ToolContext) -> ToolOutput {
        ToolOutput::ok(self.1)
    }
}

#[test]
fn builtins_are_registered_in_order() {
    let registry = Registry::with_builtins();
    assert_eq!(
        registry.names(),
        [
            "bash",
            "read_file",
            "write_file",
            "edit_file",
            "notebook_edit",
            "glob",
            "grep",
            "web_fetch",
            "web_search"
        ]
    );
    assert_eq!(registry.len(), 9);
    assert!(registry.get("nope").is_none());
    assert!(Registry::new().is_empty());
}

#[test]
fn register_replaces_a_same_named_tool_in_place() {
    let mut registry = Registry::with_builtins();
    let old = registry.register(Arc::new(Named("glob", "mine")));
    assert!(old.unwrap().description().starts_with("Finds files"));
    assert_eq!(registry.names()[5], "glob");
    assert_eq!(registry.get("glob").unwrap().description(), "mine");
    assert_eq!(registry.len(), 9);
    assert!(registry.register(Arc::new(Named("extra", "x"))).is_none());
    assert_eq!(registry.names().last(), Some(&"extra"));
}

#[test]
fn remove_and_retain() {
    let mut registry = Registry::with_builtins();
    assert_eq!(registry.remove("bash").unwrap().name(), "bash");
    assert!(registry.remove("bash").is_none());
    registry.retain(|tool| tool.effect(&json!({})) == Effect::ReadOnly);
    assert_eq!(registry.names(), ["read_file", "glob", "grep"]);
    assert_eq!(registry.iter().count(), 3);
}

#[test]
fn bash_effect_depends_on_the_command() {
    let bash = Registry::with_builtins().get("bash").unwrap();
    assert_eq!(bash.effect(&json!({"command": "ls -la"})), Effect::ReadOnly);
    assert_eq!(
        bash.effect(&json!({"command": "rm -rf x"})),
        Effect::Execute
    );
    assert_eq!(bash.effect(&json!({"command": 5})), Effect::Execute);
    let registry = Registry::with_builtins();
    assert_eq!(
        registry.get("write_file").unwrap().effect(&json!({})),
        Effect::Edit
    );
    assert_eq!(
        registry.get("edit_file").unwrap().effect(&json!({})),
        Effect::Edit
    );
}
