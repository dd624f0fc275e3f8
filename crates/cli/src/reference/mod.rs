//! The reference pages under docs/reference/, generated from the code: each test renders its
//! page and compares it with the checked-in file, so a flag, a settings key, an environment
//! variable or a stream-json event added without regenerating fails CI. Regenerate them all with
//! `TROUPE_REGENERATE_DOCS=1 cargo test -p troupe-cli --bin troupe reference`.

mod cli;
mod environment;
mod stream_json;

use std::path::{Path, PathBuf};

/// The command that rewrites every generated page.
pub const REGENERATE: &str =
    "TROUPE_REGENERATE_DOCS=1 cargo test -p troupe-cli --bin troupe reference";

/// The repository's root.
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Rewrites `page` (a path from the repository's root) under `TROUPE_REGENERATE_DOCS`, then
/// checks the checked-in file is `text`.
fn check_page(page: &str, text: &str) {
    let path = root().join(page);
    if std::env::var_os("TROUPE_REGENERATE_DOCS").is_some() {
        if let Some(folder) = path.parent() {
            std::fs::create_dir_all(folder).unwrap_or_else(|e| panic!("{}: {e}", folder.display()));
        }
        std::fs::write(&path, text).unwrap_or_else(|e| panic!("{page}: {e}"));
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == text,
        "{page} is out of date; regenerate it with {REGENERATE}"
    );
}

/// The text of every `.rs` file under `dir` (tests modules included), by path.
fn sources(dir: &Path) -> Vec<(PathBuf, String)> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(sources(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            let text = std::fs::read_to_string(&path).unwrap_or_default();
            out.push((path, text));
        }
    }
    out.sort();
    out
}

/// docs/reference/settings.md is what `troupe_settings::compatibility` renders for the hook
/// events and types troupe has.
#[test]
fn settings_page_is_up_to_date() {
    let page = troupe_settings::compatibility::markdown(
        &|event| troupe_hooks::HookEvent::parse(event).is_some(),
        &|kind| crate::hooks::RUNNABLE_TYPES.contains(&kind),
    );
    assert!(!page.contains("**unlisted**"), "{page}");
    check_page("docs/reference/settings.md", &page);
}
