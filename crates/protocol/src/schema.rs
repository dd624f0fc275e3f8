//! The one place JSON Schemas are cleaned: a tool's generated input schema made plain
//! ([`plain_optionals`], for `troupe_tools::schema_of`), and any tool's schema (troupe's or an
//! MCP server's) made self-contained in the shape providers accept ([`clean_schema`], for the
//! model clients).

use serde_json::{Map, Value};

/// How deep `$ref`s are inlined; a recursive type stops here with an open schema (`{}`).
const MAX_REF_DEPTH: usize = 8;

/// Formats defined by JSON Schema itself; schemars adds Rust ones (`uint32`, `double`, …)
/// that some OpenAI-compatible servers reject when turning schemas into grammars.
const STANDARD_FORMATS: [&str; 13] = [
    "date-time",
    "date",
    "time",
    "duration",
    "email",
    "hostname",
    "ipv4",
    "ipv6",
    "uri",
    "uri-reference",
    "uuid",
    "regex",
    "json-pointer",
];

/// A clean copy of `schema` for any provider: no `$schema`, no top-level `title`, every local
/// `$ref` to `$defs`/`definitions` inlined, and a top-level `type: "object"` with
/// `properties`, without non-standard `format` values and `"default": null`.
pub fn clean_schema(schema: &Value) -> Value {
    let defs = collect_defs(schema);
    let mut cleaned = inline(schema, &defs, 0);
    if !cleaned.is_object() {
        // A boolean schema (`true`) or garbage: the most permissive object schema.
        cleaned = Value::Object(Map::new());
    }
    if let Value::Object(map) = &mut cleaned {
        map.remove("$schema");
        map.remove("title");
        map.remove("$defs");
        map.remove("definitions");
        map.insert("type".to_owned(), Value::String("object".to_owned()));
        map.entry("properties")
            .or_insert_with(|| Value::Object(Map::new()));
    }
    cleaned
}

/// The named definitions of a schema, from `$defs` and the older `definitions`.
fn collect_defs(schema: &Value) -> Map<String, Value> {
    let mut defs = Map::new();
    for key in ["definitions", "$defs"] {
        if let Some(Value::Object(map)) = schema.get(key) {
            for (name, def) in map {
                defs.insert(name.clone(), def.clone());
            }
        }
    }
    defs
}

/// The definition a local `$ref` points to.
fn resolve_ref<'a>(reference: &str, defs: &'a Map<String, Value>) -> Option<&'a Value> {
    let name = reference
        .strip_prefix("#/$defs/")
        .or_else(|| reference.strip_prefix("#/definitions/"))?;
    defs.get(name)
}

/// Copies `value` with local refs inlined (recursively) and the noise keywords dropped.
fn inline(value: &Value, defs: &Map<String, Value>, depth: usize) -> Value {
    match value {
        Value::Object(map) => {
            if let Some(reference) = map.get("$ref").and_then(Value::as_str) {
                if let Some(target) = resolve_ref(reference, defs) {
                    if depth >= MAX_REF_DEPTH {
                        return Value::Object(Map::new());
                    }
                    let mut resolved = inline(target, defs, depth + 1);
                    // Keywords beside the `$ref` (often a field's description) win over the
                    // definition's own.
                    if let Value::Object(resolved_map) = &mut resolved {
                        for (key, sibling) in map {
                            if key != "$ref" {
                                resolved_map.insert(key.clone(), inline(sibling, defs, depth));
                            }
                        }
                    }
                    return resolved;
                }
            }
            let mut out = Map::new();
            for (key, child) in map {
                if key == "$defs" || key == "definitions" {
                    continue;
                }
                // A Rust-specific `format` keyword (a string; a property named "format" is
                // an object) and `"default": null` say nothing a model uses: both cost tokens
                // on every request, and some OpenAI-compatible servers reject the former.
                if key == "format" && child.is_string() && !is_standard_format(child) {
                    continue;
                }
                if key == "default" && child.is_null() {
                    continue;
                }
                out.insert(key.clone(), inline(child, defs, depth));
            }
            Value::Object(out)
        }
        Value::Array(items) => {
            Value::Array(items.iter().map(|item| inline(item, defs, depth)).collect())
        }
        other => other.clone(),
    }
}

fn is_standard_format(format: &Value) -> bool {
    format
        .as_str()
        .is_some_and(|f| STANDARD_FORMATS.contains(&f))
}

/// Rewrites `Option<T>` schemas (`type: [T, "null"]`, `anyOf: [T, null]`) into plain `T`
/// everywhere, because optionality is already expressed by `required`; turns documented unit
/// enums (`oneOf` of `const`s) into a plain `enum` list.
pub fn plain_optionals(value: &mut Value) {
    match value {
        Value::Object(map) => {
            simplify_nullable(map);
            simplify_const_choice(map);
            for child in map.values_mut() {
                plain_optionals(child);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(plain_optionals),
        _ => {}
    }
}

/// Simplifies one schema object whose only nullability is an added `null` alternative.
fn simplify_nullable(map: &mut Map<String, Value>) {
    if let Some(Value::Array(types)) = map.get_mut("type") {
        types.retain(|t| t != "null");
        if types.len() == 1 {
            let only = types.remove(0);
            map.insert("type".to_owned(), only);
        }
    }
    if let Some(Value::Array(values)) = map.get_mut("enum") {
        values.retain(|v| !v.is_null());
    }
    let Some(Value::Array(alternatives)) = map.get("anyOf") else {
        return;
    };
    let is_null = |v: &Value| v.get("type").is_some_and(|t| t == "null");
    let rest: Vec<Value> = alternatives
        .iter()
        .filter(|v| !is_null(v))
        .cloned()
        .collect();
    if rest.len() == 1 && rest.len() < alternatives.len() {
        map.remove("anyOf");
        if let Some(Value::Object(inner)) = rest.into_iter().next() {
            for (key, val) in inner {
                // The outer description (from the field's doc comment) wins over the type's.
                map.entry(key).or_insert(val);
            }
        }
    }
}

/// Turns `oneOf: [{const: "a", type: "string"}, …]` (what documented enum variants produce) into
/// `type: "string", enum: ["a", …]`, which every provider understands.
fn simplify_const_choice(map: &mut Map<String, Value>) {
    let Some(Value::Array(choices)) = map.get("oneOf") else {
        return;
    };
    let mut kind = None;
    let mut values = Vec::with_capacity(choices.len());
    for choice in choices {
        let (Some(value), Some(choice_kind)) = (choice.get("const"), choice.get("type")) else {
            return;
        };
        if kind.is_some_and(|k| k != choice_kind) {
            return;
        }
        kind = Some(choice_kind);
        values.push(value.clone());
    }
    let Some(kind) = kind.cloned() else {
        return;
    };
    map.remove("oneOf");
    map.insert("type".to_owned(), kind);
    map.insert("enum".to_owned(), Value::Array(values));
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Roughly what schemars 1 generates for a struct with a nested enum and an optional field.
    fn generated() -> Value {
        json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "title": "EditInput",
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "File to edit"},
                "count": {"type": "integer", "format": "uint32", "minimum": 0},
                "when": {"type": "string", "format": "date-time"},
                "mode": {"$ref": "#/$defs/Mode", "description": "How to edit"},
                "extra": {"anyOf": [{"$ref": "#/definitions/Extra"}, {"type": "null"}]}
            },
            "required": ["path", "mode"],
            "$defs": {
                "Mode": {"type": "string", "enum": ["replace", "append"], "description": "old"}
            },
            "definitions": {
                "Extra": {"type": "object", "title": "Extra", "properties": {"note": {"type": "string"}}}
            }
        })
    }

    #[test]
    fn removes_meta_keys_and_inlines_refs() {
        let cleaned = clean_schema(&generated());
        assert_eq!(
            cleaned,
            json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "File to edit"},
                    "count": {"type": "integer", "minimum": 0},
                    "when": {"type": "string", "format": "date-time"},
                    "mode": {"type": "string", "enum": ["replace", "append"], "description": "How to edit"},
                    "extra": {"anyOf": [
                        {"type": "object", "title": "Extra", "properties": {"note": {"type": "string"}}},
                        {"type": "null"}
                    ]}
                },
                "required": ["path", "mode"]
            })
        );
    }

    #[test]
    fn drops_rust_specific_formats_and_null_defaults_only() {
        let schema = json!({
            "type": "object",
            "properties": {
                "count": {"type": "integer", "format": "uint32", "minimum": 0},
                "when": {"type": "string", "format": "date-time"},
                "format": {"type": "string", "default": null},
                "flag": {"type": "boolean", "default": false}
            }
        });
        let cleaned = clean_schema(&schema);
        assert!(cleaned.pointer("/properties/count/format").is_none());
        assert_eq!(cleaned["properties"]["count"]["minimum"], 0);
        assert_eq!(cleaned["properties"]["when"]["format"], "date-time");
        assert_eq!(cleaned["properties"]["format"], json!({"type": "string"}));
        assert_eq!(cleaned["properties"]["flag"]["default"], false);
    }

    #[test]
    fn adds_type_and_properties_when_missing() {
        assert_eq!(
            clean_schema(&json!({"title": "Unit"})),
            json!({"type": "object", "properties": {}})
        );
        assert_eq!(
            clean_schema(&json!(true)),
            json!({"type": "object", "properties": {}})
        );
    }

    #[test]
    fn recursive_refs_stop_at_a_bounded_depth() {
        let schema = json!({
            "type": "object",
            "properties": {"root": {"$ref": "#/$defs/Node"}},
            "$defs": {"Node": {"type": "object", "properties": {"child": {"$ref": "#/$defs/Node"}}}}
        });
        let cleaned = clean_schema(&schema);
        let mut node = &cleaned["properties"]["root"];
        let mut levels = 0;
        while let Some(child) = node.pointer("/properties/child") {
            node = child;
            levels += 1;
        }
        assert_eq!(levels, MAX_REF_DEPTH);
        assert_eq!(node, &json!({}));
        assert!(!cleaned.to_string().contains("$ref"));
    }

    #[test]
    fn cleaning_is_idempotent() {
        let once = clean_schema(&generated());
        assert_eq!(clean_schema(&once), once);
    }

    #[test]
    fn unknown_refs_are_left_alone() {
        let schema =
            json!({"type": "object", "properties": {"x": {"$ref": "https://example.com/s.json"}}});
        assert_eq!(clean_schema(&schema), schema);
    }
}
