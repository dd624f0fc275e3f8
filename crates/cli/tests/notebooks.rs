//! Notebooks through the binary: the model reads an `.ipynb` as cells and edits one with
//! notebook_edit (Claude Code's NotebookEdit), which acceptEdits allows and a headless run in
//! default mode, with nobody to ask, refuses.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code may panic on a broken fixture

mod common;

use common::{json_lines, run, stderr, troupe};
use serde_json::{json, Value};
use troupe_testkit::{FakeServer, Step, TempWorkspace, Wire};

const NOTEBOOK: &str = r#"{
 "cells": [
  {
   "cell_type": "code",
   "execution_count": 1,
   "id": "sum",
   "metadata": {},
   "outputs": [
    {
     "name": "stdout",
     "output_type": "stream",
     "text": [
      "3\n"
     ]
    }
   ],
   "source": [
    "print(1 + 2)"
   ]
  }
 ],
 "metadata": {},
 "nbformat": 4,
 "nbformat_minor": 5
}
"#;

/// Runs `-p go` in stream-json in `mode`: the model reads the notebook, then replaces its cell.
fn edit_in_mode(ws: &TempWorkspace, mode: &str) -> (FakeServer, Vec<Value>) {
    ws.write("calc.ipynb", NOTEBOOK);
    let server = FakeServer::start();
    server.script(
        "lead",
        [
            Step::tool("read_file", json!({"path": "calc.ipynb"})),
            Step::tool(
                "notebook_edit",
                json!({"path": "calc.ipynb", "cell_id": "sum", "new_source": "print(2 + 2)"}),
            ),
            Step::text("done"),
        ],
    );
    let out = run(troupe(ws.path(), &server, Wire::Anthropic).args([
        "-p",
        "go",
        "--output-format",
        "stream-json",
        "--verbose",
        "--permission-mode",
        mode,
    ]));
    assert!(out.status.success(), "{}", stderr(&out));
    (server, json_lines(&out))
}

/// The tool results the lead got, in order (text, is_error).
fn results(server: &FakeServer) -> Vec<(String, bool)> {
    server.requests_for("lead")[1..]
        .iter()
        .map(|r| r.last_tool_result().expect("a tool result"))
        .collect()
}

#[test]
fn accept_edits_lets_the_model_read_cells_and_replace_one() {
    let ws = TempWorkspace::new();
    let (server, events) = edit_in_mode(&ws, "acceptEdits");
    let r = results(&server);
    assert!(
        !r[0].1
            && r[0]
                .0
                .contains("<cell index=\"0\" id=\"sum\" type=\"code\">\nprint(1 + 2)\n"),
        "{:?}",
        r[0]
    );
    assert!(r[0].0.contains("<outputs cell=\"sum\">\n3\n"), "{:?}", r[0]);
    assert!(!r[1].1 && r[1].0.contains("Replaced cell 0"), "{:?}", r[1]);
    let written: Value = serde_json::from_str(&ws.read("calc.ipynb")).unwrap();
    assert_eq!(written["cells"][0]["source"], json!(["print(2 + 2)"]));
    assert_eq!(written["cells"][0]["outputs"], json!([]));
    // Claude Code's surfaces see NotebookEdit with an absolute notebook_path.
    let call = events
        .iter()
        .flat_map(|e| e["message"]["content"].as_array().into_iter().flatten())
        .find(|b| b["type"] == "tool_use" && b["name"] == "NotebookEdit")
        .unwrap_or_else(|| panic!("no NotebookEdit call: {events:#?}"));
    let path = call["input"]["notebook_path"].as_str().unwrap();
    assert!(
        path.starts_with('/') && path.ends_with("/calc.ipynb"),
        "{call}"
    );
}

#[test]
fn default_mode_headless_refuses_the_edit_and_says_why() {
    let ws = TempWorkspace::new();
    let (server, events) = edit_in_mode(&ws, "default");
    let r = results(&server);
    assert!(!r[0].1, "reading is allowed: {:?}", r[0]);
    assert!(r[1].1, "{:?}", r[1]);
    assert_eq!(ws.read("calc.ipynb"), NOTEBOOK);
    let denial = events
        .iter()
        .find(|e| e["type"] == "system" && e["subtype"] == "permission_denied")
        .unwrap_or_else(|| panic!("no denial: {events:#?}"));
    assert_eq!(denial["tool_name"], "NotebookEdit");
    assert!(
        denial["message"].as_str().unwrap().contains("acceptEdits"),
        "{denial}"
    );
}
