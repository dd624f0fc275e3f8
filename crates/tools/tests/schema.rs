//! Input schemas: generated from the Rust input types, clean enough for every provider.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code may panic on a broken fixture

use serde_json::Value;
use troupe_tools::Registry;

fn schema(name: &str) -> Value {
    Registry::with_builtins().get(name).unwrap().input_schema()
}

/// Collects every value of `key` anywhere in a JSON tree.
fn all_values<'a>(value: &'a Value, key: &str, found: &mut Vec<&'a Value>) {
    match value {
        Value::Object(map) => {
            for (k, v) in map {
                if k == key {
                    found.push(v);
                }
                all_values(v, key, found);
            }
        }
        Value::Array(items) => items.iter().for_each(|v| all_values(v, key, found)),
        _ => {}
    }
}

#[test]
fn schemas_are_plain_objects_without_noise() {
    for name in Registry::with_builtins().names() {
        let schema = schema(name);
        assert_eq!(schema["type"], "object", "{name}");
        for noise in ["$schema", "title", "$defs", "definitions"] {
            assert!(schema.get(noise).is_none(), "{name} has {noise}: {schema}");
        }
        let mut types = Vec::new();
        all_values(&schema, "type", &mut types);
        assert!(
            types.iter().all(|t| t.is_string()),
            "{name} has a type union: {schema}"
        );
        let mut refs = Vec::new();
        all_values(&schema, "$ref", &mut refs);
        assert!(refs.is_empty(), "{name} has a $ref: {schema}");
    }
}

#[test]
fn required_fields_and_optional_fields_follow_the_rust_types() {
    let edit = schema("edit_file");
    assert_eq!(
        edit["required"],
        serde_json::json!(["path", "old_string", "new_string"])
    );
    assert_eq!(edit["properties"]["replace_all"]["type"], "boolean");
    let bash = schema("bash");
    assert_eq!(bash["required"], serde_json::json!(["command"]));
    assert_eq!(bash["properties"]["timeout_ms"]["type"], "integer");
    assert!(bash["properties"]["command"]["description"].is_string());
}

#[test]
fn grep_output_mode_is_a_string_enum() {
    let mode = &schema("grep")["properties"]["output_mode"];
    assert_eq!(mode["type"], "string");
    assert_eq!(
        mode["enum"],
        serde_json::json!(["content", "files_with_matches", "count"])
    );
}
