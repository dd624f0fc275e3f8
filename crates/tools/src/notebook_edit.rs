//! The `notebook_edit` tool (Claude Code's `NotebookEdit`): replaces, inserts or deletes one
//! cell of a Jupyter notebook, written atomically beneath the workspace root's handle.

use crate::notebook::{CellType, Notebook};
use crate::{parse_input, schema_of, Effect, Parents, Tool, ToolContext, ToolOutput, Workspace};
use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use std::io::Read;
use std::path::Path;
use std::sync::Arc;

/// What to do with the cell.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum EditMode {
    /// Replace the cell's source (the default).
    #[default]
    Replace,
    /// Insert a new cell after `cell_id` (at the start when no cell_id is given).
    Insert,
    /// Delete the cell.
    Delete,
}

/// Input of the `notebook_edit` tool.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct NotebookEditInput {
    /// The notebook (.ipynb) to edit, relative to the workspace root.
    pub path: String,
    /// The cell to edit, by the id read_file shows (`cell-N` for the N-th cell when cells have
    /// no ids). For insert, the new cell goes after it; without it, at the start.
    pub cell_id: Option<String>,
    /// The new source of the cell (required to replace or insert; ignored for delete).
    pub new_source: Option<String>,
    /// The cell's type: code or markdown. Required for insert; for replace it changes the type.
    pub cell_type: Option<CellType>,
    /// replace (default), insert or delete.
    #[serde(default)]
    pub edit_mode: EditMode,
}

/// Edits notebook cells.
#[derive(Debug, Default, Clone, Copy)]
pub struct NotebookEditTool;

const DESCRIPTION: &str = "Edits one cell of a Jupyter notebook (.ipynb). edit_mode replace \
(default) sets the source of the cell cell_id (a code cell's outputs are cleared); insert adds a \
new cell of cell_type after cell_id, or at the start without one; delete removes cell_id. Cell \
ids are those read_file shows for the notebook. The rest of the notebook is kept as it was.";

#[async_trait]
impl Tool for NotebookEditTool {
    fn name(&self) -> &str {
        "notebook_edit"
    }

    fn description(&self) -> &str {
        DESCRIPTION
    }

    fn input_schema(&self) -> Value {
        schema_of::<NotebookEditInput>()
    }

    fn built_schema(&self) -> Option<&'static str> {
        Some(crate::tool_schemas::NOTEBOOK_EDIT)
    }

    fn effect(&self, _input: &Value) -> Effect {
        Effect::Edit
    }

    async fn call(&self, input: Value, ctx: &ToolContext) -> ToolOutput {
        let input: NotebookEditInput = match parse_input(self.name(), input) {
            Ok(input) => input,
            Err(output) => return output,
        };
        if !crate::notebook::is_notebook(Path::new(&input.path)) {
            return ToolOutput::error(format!(
                "{} is not a notebook (.ipynb); use edit_file for other files",
                input.path
            ));
        }
        let path = match ctx.workspace.resolve(&input.path) {
            Ok(path) => path,
            Err(err) => return err.into(),
        };
        let shown = ctx.workspace.display(&path);
        let workspace = Arc::clone(&ctx.workspace);
        let edited = tokio::task::spawn_blocking(move || edit(&workspace, &path, &input)).await;
        match edited {
            Ok(Ok(done)) => ToolOutput::ok(format!("{done} in {shown}")),
            Ok(Err(why)) => ToolOutput::error(format!("Cannot edit {shown}: {why}")),
            Err(err) => ToolOutput::error(format!("Editing {shown} failed: {err}")),
        }
    }
}

/// Reads the notebook, makes the edit and writes it back; returns what was done.
fn edit(workspace: &Workspace, path: &Path, input: &NotebookEditInput) -> Result<String, String> {
    let mut text = String::new();
    workspace
        .open_read(path)
        .and_then(|mut file| file.read_to_string(&mut text))
        .map_err(|err| err.to_string())?;
    let mut notebook = Notebook::parse(&text)?;
    let index = match &input.cell_id {
        Some(id) => Some(notebook.find(id).ok_or_else(|| {
            format!(
                "no cell has id {id:?} (the notebook has {} cells); read the notebook with \
                 read_file to see the cell ids",
                notebook.len()
            )
        })?),
        None => None,
    };
    let source = match (input.edit_mode, &input.new_source) {
        (EditMode::Delete, _) => "",
        (_, Some(source)) => source.as_str(),
        (_, None) => return Err("new_source is required to replace or insert a cell".into()),
    };
    let done = match (input.edit_mode, index) {
        (EditMode::Replace, Some(index)) => {
            notebook.replace(index, source, input.cell_type);
            format!("Replaced cell {index}")
        }
        (EditMode::Delete, Some(index)) => {
            notebook.delete(index);
            format!("Deleted cell {index}")
        }
        (EditMode::Replace | EditMode::Delete, None) => {
            return Err("cell_id is required to replace or delete a cell".into())
        }
        (EditMode::Insert, after) => {
            let Some(kind) = input.cell_type else {
                return Err("cell_type (code or markdown) is required to insert a cell".into());
            };
            let at = after.map_or(0, |index| index + 1);
            let id = notebook.insert(at, source, kind);
            format!("Inserted cell {at} (id {id})")
        }
    };
    workspace
        .write_atomic(
            path,
            notebook.to_jupyter_string().as_bytes(),
            Parents::MustExist,
        )
        .map_err(|err| err.to_string())?;
    Ok(done)
}
