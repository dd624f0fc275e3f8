//! Helpers shared by the integration tests.

#![allow(dead_code)]

mod procs;

#[allow(unused_imports)] // not every test binary checks processes
pub use procs::alive;
use serde_json::Value;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;
use troupe_tools::{Registry, Sandbox, ToolContext, ToolOutput, Workspace};

/// A temporary workspace and a context for calling tools in it.
pub struct Fixture {
    pub dir: tempfile::TempDir,
    pub ctx: ToolContext,
}

impl Fixture {
    pub fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let workspace = Arc::new(Workspace::new(dir.path()).unwrap());
        let mut ctx = ToolContext::new(workspace, "tester");
        // Tests of what tools do run unconfined; the sandbox has tests of its own.
        ctx.sandbox = Sandbox::Unsandboxed;
        Fixture { dir, ctx }
    }

    /// The same fixture with calls confined to `level`.
    pub fn sandboxed(mut self, level: Sandbox) -> Self {
        self.ctx.sandbox = level;
        self
    }

    /// The canonical workspace root.
    pub fn root(&self) -> &Path {
        self.ctx.workspace.root()
    }

    /// Writes a file under the root, creating directories.
    pub fn write(&self, rel: &str, content: impl AsRef<[u8]>) {
        let path = self.root().join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, content).unwrap();
    }

    /// Reads a file under the root as text.
    pub fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.root().join(rel)).unwrap()
    }

    /// Calls a built-in tool by name.
    pub async fn call(&self, tool: &str, input: Value) -> ToolOutput {
        let tool = Registry::with_builtins().get(tool).unwrap();
        tool.call(input, &self.ctx).await
    }
}

impl Drop for Fixture {
    fn drop(&mut self) {
        // Calls' temporary directories are removed in the background; leave none behind.
        troupe_tools::sandbox::wait_retired(std::time::Duration::from_secs(5));
    }
}

/// Asserts a successful output and returns its text.
#[track_caller]
pub fn ok(output: ToolOutput) -> String {
    assert!(
        !output.is_error,
        "expected success, got error: {}",
        output.content
    );
    output.content
}

/// Asserts an error output and returns its text.
#[track_caller]
pub fn err(output: ToolOutput) -> String {
    assert!(
        output.is_error,
        "expected an error, got: {}",
        output.content
    );
    output.content
}

/// Waits (boundedly) until `cond` holds.
pub async fn eventually(mut cond: impl FnMut() -> bool) -> bool {
    for _ in 0..400 {
        if cond() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    false
}

/// The pid in `pid_file`, once a command has written it (polled until it appears).
pub async fn pid_once_written(pid_file: &Path) -> u32 {
    loop {
        if let Ok(text) = std::fs::read_to_string(pid_file) {
            break text.trim().parse::<u32>().unwrap();
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The names in `dir`, sorted.
pub fn listing(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}
