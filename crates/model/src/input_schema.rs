//! A tool's input schema as a request carries it: JSON text built into troupe, already in the
//! form the providers take, or a schema given at run time (an MCP server's tool), cleaned when
//! it is sent. Built-in tools' schemas are written into requests as they are: generating,
//! cleaning and printing forty of them was most of the work before a run's first request.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

use crate::schema::clean_schema;

/// A tool's input schema (see the module's documentation).
#[derive(Debug, Clone, PartialEq)]
pub enum InputSchema {
    /// JSON text of a cleaned schema ([`clean_schema`]'s output, printed compactly).
    Built(&'static str),
    /// A schema as given; cleaned when it is sent.
    Given(Value),
}

impl InputSchema {
    /// The schema as a JSON value (parsed anew for a built one).
    pub fn value(&self) -> Value {
        match self {
            // The text is generated from a schema and checked when it is written.
            InputSchema::Built(text) => serde_json::from_str(text).unwrap_or(Value::Null),
            InputSchema::Given(value) => value.clone(),
        }
    }

    /// Appends the schema as a provider takes it (cleaned) to `out`.
    pub(crate) fn write_cleaned(&self, out: &mut Vec<u8>) -> Result<(), serde_json::Error> {
        match self {
            InputSchema::Built(text) => {
                out.extend_from_slice(text.as_bytes());
                Ok(())
            }
            InputSchema::Given(value) => serde_json::to_writer(out, &clean_schema(value)),
        }
    }
}

impl From<Value> for InputSchema {
    fn from(value: Value) -> Self {
        InputSchema::Given(value)
    }
}

impl Serialize for InputSchema {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            InputSchema::Built(_) => self.value().serialize(s),
            InputSchema::Given(value) => value.serialize(s),
        }
    }
}

impl<'de> Deserialize<'de> for InputSchema {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Value::deserialize(d).map(InputSchema::Given)
    }
}

/// The `tools` array of a request: one object per tool, `open` before its name, its
/// description, its cleaned schema under `schema_key`, then `close`. Written as bytes, so a
/// built schema is copied rather than parsed and printed again.
pub(crate) fn tools_array(
    tools: &[crate::ToolSpec],
    open: &str,
    schema_key: &str,
    close: &str,
) -> Result<Vec<u8>, serde_json::Error> {
    let mut out = Vec::with_capacity(tools.len() * 1024);
    out.push(b'[');
    for (i, tool) in tools.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(open.as_bytes());
        out.extend_from_slice(b"\"name\":");
        serde_json::to_writer(&mut out, &tool.name)?;
        out.extend_from_slice(b",\"description\":");
        serde_json::to_writer(&mut out, &tool.description)?;
        out.push(b',');
        serde_json::to_writer(&mut out, schema_key)?;
        out.push(b':');
        tool.input_schema.write_cleaned(&mut out)?;
        out.extend_from_slice(close.as_bytes());
    }
    out.push(b']');
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_built_schema_is_written_as_it_is_and_a_given_one_cleaned() {
        let given =
            json!({"title": "X", "type": "object", "properties": {"a": {"type": "string"}}});
        let built = InputSchema::Built(r#"{"properties":{"a":{"type":"string"}},"type":"object"}"#);
        let (mut a, mut b) = (Vec::new(), Vec::new());
        InputSchema::Given(given).write_cleaned(&mut a).unwrap();
        built.write_cleaned(&mut b).unwrap();
        assert_eq!(String::from_utf8(a).unwrap(), String::from_utf8(b).unwrap());
        assert_eq!(built.value()["properties"]["a"]["type"], "string");
        assert_eq!(serde_json::to_value(&built).unwrap(), built.value());
    }

    #[test]
    fn a_tools_array_is_the_same_bytes_whether_its_schemas_are_built_or_given() {
        let schema = json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]});
        let text: &'static str = Box::leak(clean_schema(&schema).to_string().into_boxed_str());
        let spec = |input_schema| crate::ToolSpec {
            name: "read_file".into(),
            description: "Reads a \"file\".".into(),
            input_schema,
        };
        let given = tools_array(
            &[spec(InputSchema::Given(schema.clone()))],
            "{",
            "input_schema",
            "}",
        )
        .unwrap();
        let built =
            tools_array(&[spec(InputSchema::Built(text))], "{", "input_schema", "}").unwrap();
        assert_eq!(
            String::from_utf8(given.clone()).unwrap(),
            String::from_utf8(built).unwrap()
        );
        let parsed: Value = serde_json::from_slice(&given).unwrap();
        assert_eq!(
            parsed,
            json!([{"name": "read_file", "description": "Reads a \"file\".", "input_schema": clean_schema(&schema)}])
        );
        let openai = tools_array(
            &[
                spec(InputSchema::Built(text)),
                spec(InputSchema::Given(schema)),
            ],
            r#"{"type":"function","function":{"#,
            "parameters",
            "}}",
        )
        .unwrap();
        let parsed: Value = serde_json::from_slice(&openai).unwrap();
        assert_eq!(
            parsed[1]["function"]["parameters"],
            parsed[0]["function"]["parameters"]
        );
        assert_eq!(parsed[0]["type"], "function");
    }
}
