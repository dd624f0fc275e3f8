//! The size guard of the `troupe` binary, beside the syscall and allocation budgets: the binary
//! this test run built (the debug one under `cargo test`, the release one under `cargo test
//! --release`) is compared with its figure in `tests/fixtures/binary_size_baseline.json`, and
//! fails more than 10 % over it. With `TROUPE_CHECK_BINARY_SIZE=1` the release binary beside
//! the debug one (`<target>/release/troupe`, stripped by the release profile) is checked too:
//! `.ci/run` sets it after building the release binary once.
//!
//! The debug binary stands in for the release one where no release build is made: its code is
//! the same crates at a lower optimisation level, plus line tables, so a dependency or a
//! feature that adds code shows in both. After a change meant to add size (or one that saved a
//! lot), write the new figures with `TROUPE_WRITE_BASELINE=1 cargo test -p troupe-cli --test
//! binary_size` (and `--release`, or `TROUPE_CHECK_BINARY_SIZE=1` with a release build) and
//! commit them with the change.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code may panic on a broken fixture

use std::path::{Path, PathBuf};

/// How far over the baseline the size may go.
const TOLERANCE: f64 = 1.10;

fn baseline_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/binary_size_baseline.json")
}

/// Compares the size of `binary` with the baseline's `figure`, or writes it there with
/// `TROUPE_WRITE_BASELINE` set.
fn within_budget(figure: &str, binary: &Path) {
    let size = std::fs::metadata(binary)
        .unwrap_or_else(|e| panic!("{}: {e}", binary.display()))
        .len();
    let path = baseline_path();
    let mut baseline: serde_json::Map<String, serde_json::Value> =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    if std::env::var_os("TROUPE_WRITE_BASELINE").is_some() {
        baseline.insert(figure.to_owned(), size.into());
        let text = serde_json::to_string_pretty(&baseline).unwrap();
        std::fs::write(&path, text + "\n").unwrap();
        eprintln!("wrote {figure} = {size} to {}", path.display());
        return;
    }
    let base = baseline[figure]
        .as_u64()
        .unwrap_or_else(|| panic!("the baseline has no figure {figure}"));
    let limit = (base as f64 * TOLERANCE).ceil() as u64;
    eprintln!(
        "{figure}: {size} bytes (baseline {base}, limit {limit}): {}",
        binary.display()
    );
    assert!(
        size <= limit,
        "{} is {size} bytes, more than 10 % over its baseline of {base} ({figure}). Find what \
         grew (`cargo tree -e normal -p troupe-cli`, a new dependency or feature); if the growth \
         is meant, write the new baseline (TROUPE_WRITE_BASELINE=1) and commit it with the change.",
        binary.display()
    );
}

#[test]
fn the_binary_stays_within_its_size_budget() {
    let figure = match cfg!(debug_assertions) {
        true => "debug_bytes",
        false => "release_bytes",
    };
    within_budget(figure, Path::new(env!("CARGO_BIN_EXE_troupe")));
}

#[test]
fn the_release_binary_stays_within_its_size_budget() {
    if std::env::var("TROUPE_CHECK_BINARY_SIZE").as_deref() != Ok("1") || !cfg!(debug_assertions) {
        return;
    }
    // `<target>/debug/troupe` → `<target>/release/troupe`.
    let built = Path::new(env!("CARGO_BIN_EXE_troupe"));
    let release = built
        .parent()
        .and_then(Path::parent)
        .map(|target| target.join("release/troupe"))
        .unwrap();
    assert!(
        release.is_file(),
        "TROUPE_CHECK_BINARY_SIZE=1 checks {}, which is not built: `cargo build --release -p \
         troupe-cli` first",
        release.display()
    );
    within_budget("release_bytes", &release);
}

/// The shared libraries the binary asks the loader for (`DT_NEEDED`), read by `readelf -d`.
fn needed_libraries(binary: &Path) -> Vec<String> {
    let out = std::process::Command::new("readelf")
        .arg("-dW")
        .arg(binary)
        .output()
        .expect("readelf (binutils, installed with the C toolchain that links the binary)");
    assert!(out.status.success(), "readelf -d {}", binary.display());
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| l.contains("(NEEDED)"))
        .filter_map(|l| Some(l.split_once('[')?.1.split_once(']')?.0.to_owned()))
        .collect()
}

/// The binary defines the few C math functions its dependencies call (`src/libm_calls.rs`), so
/// the loader never opens libm. A dependency that calls another one brings libm back; its
/// definition belongs beside the others.
#[test]
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn the_binary_loads_no_libm() {
    let binary = Path::new(env!("CARGO_BIN_EXE_troupe"));
    let needed = needed_libraries(binary);
    assert!(
        needed.iter().any(|l| l.starts_with("libc.so")),
        "readelf found no libc among {needed:?}: the check reads the wrong thing"
    );
    let libm: Vec<&String> = needed.iter().filter(|l| l.starts_with("libm.")).collect();
    assert!(
        libm.is_empty(),
        "{} needs {libm:?} again: some code calls a C math function src/libm_calls.rs does not \
         define. Find it with `nm -D --undefined-only {}` against `nm -D` of libm and add it there.",
        binary.display(),
        binary.display()
    );
}
