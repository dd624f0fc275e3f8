//! Jupyter notebooks on disk: read_file shows their cells and outputs, notebook_edit replaces,
//! inserts and deletes cells and writes the file back as Jupyter does.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code may panic on a broken fixture

mod common;

use common::{err, ok, Fixture};
use serde_json::{json, Value};

/// A notebook as Jupyter saves it: sorted keys, one-space indent, source as lists of lines.
const NOTEBOOK: &str = r##"{
 "cells": [
  {
   "cell_type": "markdown",
   "id": "intro",
   "metadata": {},
   "source": [
    "# Sales\n",
    "Numbers for the café."
   ]
  },
  {
   "cell_type": "code",
   "execution_count": 3,
   "id": "load",
   "metadata": {
    "tags": [
     "setup"
    ]
   },
   "outputs": [
    {
     "name": "stdout",
     "output_type": "stream",
     "text": [
      "loaded 12 rows\n"
     ]
    },
    {
     "data": {
      "text/plain": [
       "42"
      ]
     },
     "execution_count": 3,
     "metadata": {},
     "output_type": "execute_result"
    },
    {
     "data": {
      "image/png": "iVBORw0KGgo=",
      "text/plain": [
       "<Figure size 640x480>"
      ]
     },
     "metadata": {},
     "output_type": "display_data"
    }
   ],
   "source": [
    "rows = load()\n",
    "len(rows) * 3 + 6"
   ]
  }
 ],
 "metadata": {
  "kernelspec": {
   "display_name": "Python 3",
   "language": "python",
   "name": "python3"
  }
 },
 "nbformat": 4,
 "nbformat_minor": 5
}
"##;

fn parsed(f: &Fixture) -> Value {
    serde_json::from_str(&f.read("sales.ipynb")).unwrap()
}

#[tokio::test]
async fn read_file_shows_a_notebooks_cells_and_outputs_instead_of_json() {
    let f = Fixture::new();
    f.write("sales.ipynb", NOTEBOOK);
    let text = ok(f.call("read_file", json!({"path": "sales.ipynb"})).await);
    let expected = "Notebook language: python\n\
<cell index=\"0\" id=\"intro\" type=\"markdown\">\n# Sales\nNumbers for the café.\n</cell>\n\
<cell index=\"1\" id=\"load\" type=\"code\">\nrows = load()\nlen(rows) * 3 + 6\n</cell>\n\
<outputs cell=\"load\">\nloaded 12 rows\n42\n<Figure size 640x480>\n[image/png output]\n</outputs>\n";
    assert_eq!(text, expected);
}

#[tokio::test]
async fn cells_without_ids_are_called_by_their_index() {
    let f = Fixture::new();
    f.write(
        "old.ipynb",
        r#"{"cells": [{"cell_type": "code", "metadata": {}, "source": "print(1)", "outputs": [],
            "execution_count": null}], "metadata": {}, "nbformat": 4, "nbformat_minor": 2}"#,
    );
    let text = ok(f.call("read_file", json!({"path": "old.ipynb"})).await);
    assert!(
        text.contains("<cell index=\"0\" id=\"cell-0\" type=\"code\">\nprint(1)\n</cell>"),
        "{text}"
    );
    ok(f.call(
        "notebook_edit",
        json!({"path": "old.ipynb", "cell_id": "cell-0", "new_source": "print(2)"}),
    )
    .await);
    let nb: Value = serde_json::from_str(&f.read("old.ipynb")).unwrap();
    assert_eq!(nb["cells"][0]["source"], json!(["print(2)"]));
    assert!(nb["cells"][0].get("id").is_none(), "no ids before 4.5");
}

#[tokio::test]
async fn a_file_that_is_not_notebook_json_is_shown_as_text() {
    let f = Fixture::new();
    f.write("broken.ipynb", "{ not json\n");
    let text = ok(f.call("read_file", json!({"path": "broken.ipynb"})).await);
    assert_eq!(text, "1\t{ not json\n");
    let message = err(f
        .call(
            "notebook_edit",
            json!({"path": "broken.ipynb", "cell_id": "x", "new_source": "y"}),
        )
        .await);
    assert!(message.contains("not valid notebook JSON"), "{message}");
}

#[tokio::test]
async fn replace_sets_the_source_clears_outputs_and_keeps_everything_else() {
    let f = Fixture::new();
    f.write("sales.ipynb", NOTEBOOK);
    let text = ok(f
        .call(
            "notebook_edit",
            json!({"path": "sales.ipynb", "cell_id": "load", "new_source": "rows = load()\nrows[:5]"}),
        )
        .await);
    assert!(text.contains("Replaced cell 1"), "{text}");
    let mut expected: Value = serde_json::from_str(NOTEBOOK).unwrap();
    expected["cells"][1]["source"] = json!(["rows = load()\n", "rows[:5]"]);
    expected["cells"][1]["outputs"] = json!([]);
    expected["cells"][1]["execution_count"] = Value::Null;
    assert_eq!(parsed(&f), expected);
    // Written as Jupyter writes: the untouched cell is byte for byte as it was, one-space
    // indent, non-ASCII kept, a final newline.
    let written = f.read("sales.ipynb");
    let untouched = &NOTEBOOK[..NOTEBOOK.find("  {\n   \"cell_type\": \"code\"").unwrap()];
    assert!(written.starts_with(untouched), "{written}");
    assert!(
        written.ends_with("\n \"nbformat_minor\": 5\n}\n"),
        "{written}"
    );
}

#[tokio::test]
async fn replace_can_change_a_cells_type() {
    let f = Fixture::new();
    f.write("sales.ipynb", NOTEBOOK);
    ok(f.call(
        "notebook_edit",
        json!({"path": "sales.ipynb", "cell_id": "load", "new_source": "Just text", "cell_type": "markdown"}),
    )
    .await);
    let cell = &parsed(&f)["cells"][1];
    assert_eq!(cell["cell_type"], "markdown");
    assert!(cell.get("outputs").is_none() && cell.get("execution_count").is_none());
    assert_eq!(cell["metadata"]["tags"][0], "setup");
}

#[tokio::test]
async fn insert_goes_after_the_named_cell_or_at_the_start_with_a_fresh_id() {
    let f = Fixture::new();
    f.write("sales.ipynb", NOTEBOOK);
    let text = ok(f
        .call(
            "notebook_edit",
            json!({"path": "sales.ipynb", "cell_id": "intro", "new_source": "import pandas", "cell_type": "code", "edit_mode": "insert"}),
        )
        .await);
    assert!(text.contains("Inserted cell 1"), "{text}");
    ok(f.call(
        "notebook_edit",
        json!({"path": "sales.ipynb", "new_source": "Top", "cell_type": "markdown", "edit_mode": "insert"}),
    )
    .await);
    let nb = parsed(&f);
    let cells = nb["cells"].as_array().unwrap();
    assert_eq!(cells.len(), 4);
    assert_eq!(cells[0]["source"], json!(["Top"]));
    assert_eq!(cells[0]["cell_type"], "markdown");
    assert!(cells[0].get("outputs").is_none());
    assert_eq!(cells[1]["id"], "intro");
    let new = &cells[2];
    assert_eq!(
        new.as_object().unwrap().keys().collect::<Vec<_>>(),
        [
            "cell_type",
            "execution_count",
            "id",
            "metadata",
            "outputs",
            "source"
        ]
    );
    assert_eq!(new["source"], json!(["import pandas"]));
    let id = new["id"].as_str().unwrap();
    assert_eq!(id.len(), 8);
    assert_ne!(cells[0]["id"], new["id"]);
    assert!(text.contains(id), "the result names the new id: {text}");
    assert_eq!(cells[3]["id"], "load");
    let message = err(f
        .call(
            "notebook_edit",
            json!({"path": "sales.ipynb", "new_source": "x", "edit_mode": "insert"}),
        )
        .await);
    assert!(message.contains("cell_type"), "{message}");
}

#[tokio::test]
async fn delete_removes_the_cell_and_unknown_ids_are_refused() {
    let f = Fixture::new();
    f.write("sales.ipynb", NOTEBOOK);
    ok(f.call(
        "notebook_edit",
        json!({"path": "sales.ipynb", "cell_id": "intro", "edit_mode": "delete"}),
    )
    .await);
    let nb = parsed(&f);
    assert_eq!(nb["cells"].as_array().unwrap().len(), 1);
    assert_eq!(nb["cells"][0]["id"], "load");
    let message = err(f
        .call(
            "notebook_edit",
            json!({"path": "sales.ipynb", "cell_id": "gone", "new_source": "x"}),
        )
        .await);
    assert!(
        message.contains("no cell has id \"gone\"") && message.contains("1 cells"),
        "{message}"
    );
    let message = err(f
        .call(
            "notebook_edit",
            json!({"path": "sales.ipynb", "new_source": "x"}),
        )
        .await);
    assert!(message.contains("cell_id is required"), "{message}");
    let message = err(f
        .call(
            "notebook_edit",
            json!({"path": "sales.ipynb", "cell_id": "load"}),
        )
        .await);
    assert!(message.contains("new_source is required"), "{message}");
    assert_eq!(parsed(&f)["cells"][0]["source"][0], "rows = load()\n");
}

#[tokio::test]
async fn notebook_edit_stays_inside_the_workspace_and_edits_notebooks_only() {
    let f = Fixture::new();
    f.write("notes.txt", "text\n");
    let message = err(f
        .call(
            "notebook_edit",
            json!({"path": "notes.txt", "cell_id": "cell-0", "new_source": "x"}),
        )
        .await);
    assert!(message.contains("not a notebook"), "{message}");
    let message = err(f
        .call(
            "notebook_edit",
            json!({"path": "../outside.ipynb", "cell_id": "cell-0", "new_source": "x"}),
        )
        .await);
    assert!(message.contains("outside the workspace"), "{message}");
    assert_eq!(f.read("notes.txt"), "text\n");
}
