//! `--json-schema`: the lead is told to end with only a JSON value valid against the schema;
//! its final text is parsed and checked, and the value becomes the result's
//! `structured_output`. The check is troupe's own (no JSON Schema crate is available to the
//! build): `type` (one or a list, `integer` included), `enum`, `const`, `required`,
//! `properties`, `additionalProperties` (false or a schema), `items`, `minItems`/`maxItems`,
//! `minLength`/`maxLength`, `minimum`/`maximum`, `anyOf`, `oneOf` and `allOf`; other keywords
//! are not checked.

use anyhow::{Context, Result};
use serde_json::Value;

/// The schema given to `--json-schema`, parsed.
pub fn parse_schema(text: &str) -> Result<Value> {
    let schema: Value =
        serde_json::from_str(text).context("--json-schema is not valid JSON (a JSON Schema)")?;
    anyhow::ensure!(
        schema.is_object() || schema.is_boolean(),
        "--json-schema must be a JSON Schema object"
    );
    Ok(schema)
}

/// What the lead's system prompt gains: the schema and how to answer.
pub fn instruction(schema: &Value) -> String {
    format!(
        "When you have finished the task, your final message must be only a JSON value valid \
         against this JSON Schema, with no prose around it and no code fence:\n{schema}"
    )
}

/// What the lead is told when its answer did not fit.
pub fn retry_prompt(why: &str) -> String {
    format!(
        "Your final answer does not satisfy the required JSON Schema: {why}. Reply again with \
         only the corrected JSON value, no prose and no code fence."
    )
}

/// The final text as a JSON value valid against `schema`, or why it is not.
pub fn check(schema: &Value, text: &str) -> Result<Value, String> {
    let value = parse_answer(text)?;
    let mut errors = Vec::new();
    validate(schema, &value, "$", &mut errors);
    match errors.is_empty() {
        true => Ok(value),
        false => Err(errors.join("; ")),
    }
}

/// The JSON of an answer: the whole text, else inside a ```json fence.
fn parse_answer(text: &str) -> Result<Value, String> {
    let trimmed = text.trim();
    if let Ok(value) = serde_json::from_str(trimmed) {
        return Ok(value);
    }
    let fenced = trimmed
        .split_once("```")
        .map(|(_, rest)| rest.trim_start_matches("json"))
        .and_then(|rest| rest.split_once("```"))
        .map(|(inner, _)| inner.trim());
    match fenced.map(serde_json::from_str::<Value>) {
        Some(Ok(value)) => Ok(value),
        _ => Err("it is not JSON".to_string()),
    }
}

fn type_matches(name: &str, value: &Value) -> bool {
    match name {
        "object" => value.is_object(),
        "array" => value.is_array(),
        "string" => value.is_string(),
        "boolean" => value.is_boolean(),
        "null" => value.is_null(),
        "number" => value.is_number(),
        "integer" => {
            value.is_i64() || value.is_u64() || value.as_f64().is_some_and(|f| f.fract() == 0.0)
        }
        _ => true,
    }
}

fn validate(schema: &Value, value: &Value, at: &str, errors: &mut Vec<String>) {
    let schema = match schema {
        Value::Bool(true) => return,
        Value::Bool(false) => return errors.push(format!("{at} is not allowed")),
        Value::Object(schema) => schema,
        _ => return,
    };
    if let Some(kind) = schema.get("type") {
        let names: Vec<&str> = match kind {
            Value::String(one) => vec![one.as_str()],
            Value::Array(many) => many.iter().filter_map(Value::as_str).collect(),
            _ => Vec::new(),
        };
        if !names.is_empty() && !names.iter().any(|n| type_matches(n, value)) {
            errors.push(format!("{at} should be {}", names.join(" or ")));
            return;
        }
    }
    if let Some(Value::Array(allowed)) = schema.get("enum") {
        if !allowed.contains(value) {
            errors.push(format!(
                "{at} should be one of {}",
                Value::from(allowed.clone())
            ));
        }
    }
    if let Some(constant) = schema.get("const") {
        if constant != value {
            errors.push(format!("{at} should be {constant}"));
        }
    }
    let number = |key: &str| schema.get(key).and_then(Value::as_f64);
    if let Some(n) = value.as_f64() {
        if number("minimum").is_some_and(|min| n < min) {
            errors.push(format!("{at} is below the minimum {}", schema["minimum"]));
        }
        if number("maximum").is_some_and(|max| n > max) {
            errors.push(format!("{at} is above the maximum {}", schema["maximum"]));
        }
    }
    if let Some(s) = value.as_str() {
        let len = s.chars().count() as f64;
        if number("minLength").is_some_and(|min| len < min) {
            errors.push(format!("{at} is shorter than {}", schema["minLength"]));
        }
        if number("maxLength").is_some_and(|max| len > max) {
            errors.push(format!("{at} is longer than {}", schema["maxLength"]));
        }
    }
    if let Some(object) = value.as_object() {
        if let Some(Value::Array(required)) = schema.get("required") {
            for key in required.iter().filter_map(Value::as_str) {
                if !object.contains_key(key) {
                    errors.push(format!("{at} lacks the required property `{key}`"));
                }
            }
        }
        let properties = schema.get("properties").and_then(Value::as_object);
        for (key, item) in object {
            let path = format!("{at}.{key}");
            match properties.and_then(|p| p.get(key)) {
                Some(sub) => validate(sub, item, &path, errors),
                None => match schema.get("additionalProperties") {
                    Some(Value::Bool(false)) => errors.push(format!(
                        "{at} has a property `{key}` the schema does not allow"
                    )),
                    Some(sub @ Value::Object(_)) => validate(sub, item, &path, errors),
                    _ => {}
                },
            }
        }
    }
    if let Some(items) = value.as_array() {
        let len = items.len() as f64;
        if number("minItems").is_some_and(|min| len < min) {
            errors.push(format!("{at} has fewer than {} items", schema["minItems"]));
        }
        if number("maxItems").is_some_and(|max| len > max) {
            errors.push(format!("{at} has more than {} items", schema["maxItems"]));
        }
        if let Some(sub) = schema
            .get("items")
            .filter(|s| s.is_object() || s.is_boolean())
        {
            for (i, item) in items.iter().enumerate() {
                validate(sub, item, &format!("{at}[{i}]"), errors);
            }
        }
    }
    let passes = |sub: &Value| {
        let mut scratch = Vec::new();
        validate(sub, value, at, &mut scratch);
        scratch.is_empty()
    };
    if let Some(Value::Array(all)) = schema.get("allOf") {
        for sub in all {
            validate(sub, value, at, errors);
        }
    }
    if let Some(Value::Array(any)) = schema.get("anyOf") {
        if !any.iter().any(passes) {
            errors.push(format!("{at} matches none of anyOf's schemas"));
        }
    }
    if let Some(Value::Array(one)) = schema.get("oneOf") {
        let matched = one.iter().filter(|s| passes(s)).count();
        if matched != 1 {
            errors.push(format!(
                "{at} matches {matched} of oneOf's schemas, not exactly one"
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_answer_is_checked_against_the_schema_and_each_fault_is_named() {
        let schema = json!({
            "type": "object",
            "properties": {
                "name": {"type": "string", "minLength": 1},
                "count": {"type": "integer", "minimum": 0},
                "tags": {"type": "array", "items": {"enum": ["a", "b"]}}
            },
            "required": ["name", "count"],
            "additionalProperties": false
        });
        let ok = check(&schema, r#"{"name": "x", "count": 2, "tags": ["a"]}"#);
        assert_eq!(ok, Ok(json!({"name": "x", "count": 2, "tags": ["a"]})));
        let fenced = check(
            &schema,
            "Here:\n```json\n{\"name\": \"x\", \"count\": 0}\n```",
        );
        assert!(fenced.is_ok(), "{fenced:?}");
        let bad = check(&schema, r#"{"count": 1.5, "tags": ["c"], "extra": 1}"#).unwrap_err();
        for fault in [
            "lacks the required property `name`",
            "$.count should be integer",
            "$.tags[0] should be one of",
            "`extra` the schema does not allow",
        ] {
            assert!(bad.contains(fault), "{fault}: {bad}");
        }
        assert_eq!(check(&schema, "no json here"), Err("it is not JSON".into()));
        let either = json!({"anyOf": [{"type": "string"}, {"type": "null"}]});
        assert!(check(&either, "null").is_ok());
        assert!(check(&either, "3").is_err());
    }
}
