//! Jupyter notebooks (nbformat 4): their cells shown as text, one cell replaced, inserted or
//! deleted, and the file written back as Jupyter writes it (one-space indent, a final newline),
//! every other field kept as it was.

use crate::output::truncate_middle;
use serde::Serialize;
use serde_json::{json, Map, Value};

/// Bytes of one cell's outputs shown at most; the middle of longer ones is cut.
const OUTPUT_BUDGET: usize = 8_000;

/// Whether `path` names a notebook.
pub fn is_notebook(path: &std::path::Path) -> bool {
    path.extension()
        .is_some_and(|ext| ext.eq_ignore_ascii_case("ipynb"))
}

/// A parsed notebook: the whole document, so that saving keeps what troupe does not touch.
#[derive(Debug, Clone)]
pub struct Notebook {
    doc: Map<String, Value>,
}

/// Which kind a cell is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum CellType {
    /// Code, with outputs and an execution count.
    Code,
    /// Markdown text.
    Markdown,
}

impl CellType {
    fn as_str(self) -> &'static str {
        match self {
            CellType::Code => "code",
            CellType::Markdown => "markdown",
        }
    }
}

impl Notebook {
    /// Parses a notebook; the message says what is wrong with one that is not.
    pub fn parse(text: &str) -> Result<Notebook, String> {
        let value: Value =
            serde_json::from_str(text).map_err(|err| format!("not valid notebook JSON: {err}"))?;
        let Value::Object(doc) = value else {
            return Err("a notebook is a JSON object".into());
        };
        if !doc.get("cells").is_some_and(Value::is_array) {
            return Err("the notebook has no `cells` list".into());
        }
        Ok(Notebook { doc })
    }

    fn cells(&self) -> &[Value] {
        self.doc
            .get("cells")
            .and_then(Value::as_array)
            .map_or(&[], Vec::as_slice)
    }

    fn cells_mut(&mut self) -> &mut Vec<Value> {
        if !self.doc.get("cells").is_some_and(Value::is_array) {
            self.doc.insert("cells".into(), Value::Array(Vec::new()));
        }
        match self.doc.get_mut("cells") {
            Some(Value::Array(cells)) => cells,
            _ => unreachable!("cells was just made a list"),
        }
    }

    /// How many cells it has.
    pub fn len(&self) -> usize {
        self.cells().len()
    }

    /// Whether it has no cells.
    pub fn is_empty(&self) -> bool {
        self.cells().is_empty()
    }

    /// The notebook's language (from its kernel or language metadata), when it names one.
    fn language(&self) -> Option<&str> {
        let metadata = self.doc.get("metadata")?;
        metadata
            .pointer("/language_info/name")
            .or_else(|| metadata.pointer("/kernelspec/language"))
            .and_then(Value::as_str)
    }

    /// Whether cells carry ids (nbformat 4.5 and later).
    fn has_ids(&self) -> bool {
        let minor = self.doc.get("nbformat_minor").and_then(Value::as_u64);
        minor.is_some_and(|m| m >= 5) || self.cells().iter().any(|c| c.get("id").is_some())
    }

    /// The id a cell is called by: its own, or `cell-N` (its index) when it has none.
    fn id_of(cell: &Value, index: usize) -> String {
        cell.get("id")
            .and_then(Value::as_str)
            .map_or_else(|| format!("cell-{index}"), str::to_string)
    }

    /// The index of the cell `id` names: its id, or `cell-N` / `N` for the N-th cell.
    pub fn find(&self, id: &str) -> Option<usize> {
        let cells = self.cells();
        if let Some(found) = cells
            .iter()
            .position(|c| c.get("id").and_then(Value::as_str) == Some(id))
        {
            return Some(found);
        }
        let index: usize = id.strip_prefix("cell-").unwrap_or(id).parse().ok()?;
        (index < cells.len()).then_some(index)
    }

    /// Every cell as text: index, type and id, its source, then its outputs.
    pub fn render(&self) -> String {
        let mut out = String::new();
        if let Some(language) = self.language() {
            out.push_str(&format!("Notebook language: {language}\n"));
        }
        if self.is_empty() {
            out.push_str("(the notebook has no cells)\n");
        }
        for (index, cell) in self.cells().iter().enumerate() {
            let kind = cell
                .get("cell_type")
                .and_then(Value::as_str)
                .unwrap_or("unknown");
            let id = Notebook::id_of(cell, index);
            out.push_str(&format!(
                "<cell index=\"{index}\" id=\"{id}\" type=\"{kind}\">\n"
            ));
            let source = text_of(cell.get("source"));
            out.push_str(&source);
            if !source.is_empty() && !source.ends_with('\n') {
                out.push('\n');
            }
            out.push_str("</cell>\n");
            let outputs = render_outputs(cell);
            if !outputs.is_empty() {
                out.push_str(&format!("<outputs cell=\"{id}\">\n"));
                out.push_str(&truncate_middle(&outputs, OUTPUT_BUDGET));
                if !outputs.ends_with('\n') {
                    out.push('\n');
                }
                out.push_str("</outputs>\n");
            }
        }
        out
    }

    /// Replaces cell `index`'s source (and its type, when given); a code cell's outputs and
    /// execution count are cleared, as Jupyter does for an edited cell.
    pub fn replace(&mut self, index: usize, source: &str, kind: Option<CellType>) {
        let cell = &mut self.cells_mut()[index];
        if !cell.is_object() {
            *cell = json!({});
        }
        let Value::Object(cell) = cell else {
            return;
        };
        cell.insert("source".into(), source_lines(source));
        let kind = kind.unwrap_or_else(|| match cell.get("cell_type").and_then(Value::as_str) {
            Some("markdown") => CellType::Markdown,
            _ => CellType::Code,
        });
        cell.insert("cell_type".into(), kind.as_str().into());
        match kind {
            CellType::Code => {
                cell.insert("execution_count".into(), Value::Null);
                cell.insert("outputs".into(), Value::Array(Vec::new()));
            }
            CellType::Markdown => {
                cell.remove("execution_count");
                cell.remove("outputs");
            }
        }
        cell.entry("metadata").or_insert_with(|| json!({}));
    }

    /// Inserts a new cell at `index`; returns its id.
    pub fn insert(&mut self, index: usize, source: &str, kind: CellType) -> String {
        let mut cell = Map::new();
        cell.insert("cell_type".into(), kind.as_str().into());
        if kind == CellType::Code {
            cell.insert("execution_count".into(), Value::Null);
        }
        let id = if self.has_ids() {
            let id = self.fresh_id();
            cell.insert("id".into(), id.clone().into());
            Some(id)
        } else {
            None
        };
        cell.insert("metadata".into(), json!({}));
        if kind == CellType::Code {
            cell.insert("outputs".into(), Value::Array(Vec::new()));
        }
        cell.insert("source".into(), source_lines(source));
        self.cells_mut().insert(index, Value::Object(cell));
        id.unwrap_or_else(|| format!("cell-{index}"))
    }

    /// Deletes cell `index`.
    pub fn delete(&mut self, index: usize) {
        self.cells_mut().remove(index);
    }

    /// An id no cell has yet, in Jupyter's style (eight hex digits).
    fn fresh_id(&self) -> String {
        let taken = |id: &str| {
            self.cells()
                .iter()
                .any(|c| c.get("id").and_then(Value::as_str) == Some(id))
        };
        loop {
            let id = uuid::Uuid::new_v4().simple().to_string()[..8].to_string();
            if !taken(&id) {
                return id;
            }
        }
    }

    /// The notebook as Jupyter writes it: one-space indent, non-ASCII kept, a final newline.
    pub fn to_jupyter_string(&self) -> String {
        let mut buf = Vec::new();
        let formatter = serde_json::ser::PrettyFormatter::with_indent(b" ");
        let mut serializer = serde_json::Serializer::with_formatter(&mut buf, formatter);
        // Serializing a map of JSON values to memory cannot fail.
        if self.doc.serialize(&mut serializer).is_err() {
            return String::new();
        }
        let mut text = String::from_utf8(buf).unwrap_or_default();
        text.push('\n');
        text
    }
}

/// A source or text field as one string: nbformat stores it as a string or a list of lines.
fn text_of(value: Option<&Value>) -> String {
    match value {
        Some(Value::String(text)) => text.clone(),
        Some(Value::Array(lines)) => lines.iter().filter_map(Value::as_str).collect(),
        _ => String::new(),
    }
}

/// Source text as Jupyter stores it: a list of lines, each but the last ending in `\n`.
fn source_lines(source: &str) -> Value {
    Value::Array(
        source
            .split_inclusive('\n')
            .map(|line| Value::from(line.to_string()))
            .collect(),
    )
}

/// A cell's outputs as text: streams, results' `text/plain`, errors, and a note per image.
fn render_outputs(cell: &Value) -> String {
    let Some(outputs) = cell.get("outputs").and_then(Value::as_array) else {
        return String::new();
    };
    let mut out = String::new();
    for output in outputs {
        let piece = match output.get("output_type").and_then(Value::as_str) {
            Some("stream") => text_of(output.get("text")),
            Some("execute_result" | "display_data") => rich_output(output.get("data")),
            Some("error") => {
                let name = output
                    .get("ename")
                    .and_then(Value::as_str)
                    .unwrap_or("Error");
                let value = output.get("evalue").and_then(Value::as_str).unwrap_or("");
                format!("{name}: {value}")
            }
            _ => String::new(),
        };
        if piece.is_empty() {
            continue;
        }
        out.push_str(&piece);
        if !piece.ends_with('\n') {
            out.push('\n');
        }
    }
    out
}

/// A rich output's `text/plain`, and a note for each image in it.
fn rich_output(data: Option<&Value>) -> String {
    let Some(Value::Object(data)) = data else {
        return String::new();
    };
    let mut out = text_of(data.get("text/plain"));
    for kind in data.keys().filter(|k| k.starts_with("image/")) {
        if !out.is_empty() && !out.ends_with('\n') {
            out.push('\n');
        }
        out.push_str(&format!("[{kind} output]"));
    }
    out
}
