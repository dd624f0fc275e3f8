//! Generated from the tools' input types: each one's schema as requests carry it (see
//! `troupe_tools::schema`). `TROUPE_WRITE_SCHEMAS=1 cargo test -p troupe-cron tool_schemas`
//! rewrites it; that test fails when a schema changed without it.

pub(crate) const SCHEDULE: &str = r#"{"type":"object","properties":{"schedule":{"type":"string","description":"When: a five-field cron expression in local time (\"*/10 * * * *\", \"0 9 * * MON-FRI\"),\na delay (\"in 90s\", \"in 3m\", \"in 2h\"), or an RFC 3339 time (\"2026-05-01T09:00:00Z\")."},"prompt":{"type":"string","description":"What the agent is told then; it arrives as \"[Scheduled] <prompt>\"."},"to":{"type":"string","description":"The agent to tell (a teammate's name, or \"lead\"); default: yourself."}},"required":["schedule","prompt"]}"#;
pub(crate) const LIST: &str = r#"{"type":"object","properties":{}}"#;
pub(crate) const CANCEL: &str = r#"{"type":"object","properties":{"id":{"type":"string","description":"The id schedule_cron returned (`cron-…`)."}},"required":["id"]}"#;
