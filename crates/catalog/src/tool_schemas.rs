//! Generated from the tools' input types: each one's schema as requests carry it (see
//! `troupe_tools::schema`). `TROUPE_WRITE_SCHEMAS=1 cargo test -p troupe-catalog tool_schemas`
//! rewrites it; that test fails when a schema changed without it.

pub(crate) const LOAD_SKILL: &str = r#"{"type":"object","properties":{"name":{"type":"string","description":"The skill's name, as the catalog lists it."}},"required":["name"]}"#;
pub(crate) const TASK: &str = r#"{"type":"object","properties":{"description":{"type":"string","description":"A short (3–5 word) description of the task."},"prompt":{"type":"string","description":"The whole task for the subagent: it sees nothing else of this conversation."},"subagent_type":{"type":"string","description":"Which agent definition to use; omit for a general-purpose agent."}},"required":["description","prompt"]}"#;
