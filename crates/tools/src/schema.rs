//! Input schemas: generated from a tool's input type ([`schema_of`]), and built into troupe as
//! JSON text for the built-in tools ([`crate::Tool::built_schema`]), so that a run's requests
//! carry them as they are. Each crate with tools keeps the texts in a generated
//! `src/tool_schemas.rs` (constants only, so it imports nothing); its test ([`check`], given
//! each text with its input type) fails when one is stale and rewrites the file when asked
//! ([`REWRITE`]), and a debug build checks each text against its tool's schema when the tool
//! is first offered.

use schemars::JsonSchema;
use serde_json::Value;
use std::path::Path;

/// How to bring the built-in schema texts up to date.
pub const REWRITE: &str =
    "rewrite them with `TROUPE_WRITE_SCHEMAS=1 cargo test --workspace --lib tool_schemas`";

/// JSON Schema of a tool's input type: subschemas inlined, no `$schema`/`title`/root description
/// (the tool has its own), optional fields given their plain type (providers choke on
/// `["string", "null"]` unions) and unit enums as a plain `enum` list.
pub fn schema_of<T: JsonSchema>() -> Value {
    let generator = schemars::generate::SchemaSettings::draft2020_12()
        .with(|settings| {
            settings.inline_subschemas = true;
            settings.meta_schema = None;
        })
        .into_generator();
    let mut schema = generator.into_root_schema_for::<T>().to_value();
    if let Value::Object(root) = &mut schema {
        root.remove("title");
        root.remove("$schema");
        root.remove("description");
    }
    troupe_protocol::schema::plain_optionals(&mut schema);
    schema
}

/// The text a built-in schema must hold: `schema` cleaned for the providers, printed compactly.
pub fn built_text(schema: &Value) -> String {
    troupe_protocol::schema::clean_schema(schema).to_string()
}

/// One built-in schema, for a crate's check: its name in the generated file, its input type
/// and its text there.
#[derive(Debug)]
pub struct Built {
    name: &'static str,
    text: &'static str,
    generate: fn() -> Value,
}

impl Built {
    /// `T`'s schema, named `name` in the generated file, where it reads `text`.
    pub fn new<T: JsonSchema>(name: &'static str, text: &'static str) -> Built {
        Built {
            name,
            text,
            generate: schema_of::<T>,
        }
    }
}

/// Checks the built-in schemas of the crate `krate` at `manifest_dir` (`all`, declared in its
/// `src/tool_schemas.rs`) against their types: `Ok` when every text is current; with
/// `TROUPE_WRITE_SCHEMAS` set, the file is rewritten first. `Err` names the stale ones.
pub fn check(all: &[Built], manifest_dir: &str, krate: &str) -> Result<(), String> {
    let file = Path::new(manifest_dir).join("src/tool_schemas.rs");
    let current: Vec<(&Built, String)> = all
        .iter()
        .map(|b| (b, built_text(&(b.generate)())))
        .collect();
    if std::env::var_os("TROUPE_WRITE_SCHEMAS").is_some() {
        std::fs::write(&file, generated_file(&current, krate))
            .map_err(|e| format!("cannot write {}: {e}", file.display()))?;
        return Ok(());
    }
    let stale: Vec<&str> = current
        .iter()
        .filter(|(b, text)| b.text != text)
        .map(|(b, _)| b.name)
        .collect();
    match stale.is_empty() {
        true => Ok(()),
        false => Err(format!(
            "stale built-in input schemas in {}: {}; {REWRITE}",
            file.display(),
            stale.join(", ")
        )),
    }
}

/// The generated file's text.
fn generated_file(current: &[(&Built, String)], krate: &str) -> String {
    let mut out = format!(
        "//! Generated from the tools' input types: each one's schema as requests carry it (see\n\
         //! `troupe_tools::schema`). `TROUPE_WRITE_SCHEMAS=1 cargo test -p {krate} tool_schemas`\n\
         //! rewrites it; that test fails when a schema changed without it.\n\n"
    );
    for (built, text) in current {
        let hashes = "#".repeat(raw_hashes(text));
        out.push_str(&format!(
            "pub(crate) const {}: &str = r{hashes}\"{text}\"{hashes};\n",
            built.name
        ));
    }
    out
}

/// How many `#` a raw string holding `text` needs.
fn raw_hashes(text: &str) -> usize {
    (1..)
        .find(|n| !text.contains(&format!("\"{}", "#".repeat(*n))))
        .unwrap_or(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(schemars::JsonSchema)]
    #[allow(dead_code)] // only its schema is used
    struct Example {
        /// A path, like `"#/a"`.
        path: String,
        limit: Option<u32>,
    }

    #[test]
    fn a_stale_text_is_named_and_a_rewritten_file_holds_the_current_one() {
        let stale = Built::new::<Example>("EXAMPLE", "{}");
        let dir = tempfile::tempdir().unwrap();
        let err = check(&[stale], &dir.path().to_string_lossy(), "troupe-tools").unwrap_err();
        assert!(
            err.contains("EXAMPLE") && err.contains("TROUPE_WRITE_SCHEMAS"),
            "{err}"
        );
        let text = built_text(&schema_of::<Example>());
        let stale = Built::new::<Example>("EXAMPLE", "{}");
        let written = generated_file(&[(&stale, text.clone())], "troupe-tools");
        assert!(
            written.contains("pub(crate) const EXAMPLE: &str = r##\""),
            "{written}"
        );
        assert!(written.contains(&text));
        assert_eq!(raw_hashes("a\"b"), 1);
    }
}
