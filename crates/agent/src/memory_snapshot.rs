//! Memory files as this process first read them. A memory file goes into every agent's system
//! prompt, so one an agent changed during the session (a `CLAUDE.md` edited by a tool call) is
//! not read again for the next subagent or teammate until the person has seen it: `/memory`
//! shows the files as they are now and takes that as the new snapshot ([`refresh`]), and a `#`
//! note the person typed updates its file's entry.
//!
//! A process teammate is a process of its own and reads the files when it starts.

use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// One memory file as first looked at: its canonical path and text, or nothing (it did not
/// exist, was not a file, or could not be read).
type Entry = Option<(PathBuf, String)>;

static FIRST_READ: Mutex<Option<HashMap<PathBuf, Entry>>> = Mutex::new(None);

/// The file at `path` (as named) as this process first found it.
pub(crate) fn read(path: &Path) -> Entry {
    let mut guard = match FIRST_READ.lock() {
        Ok(guard) => guard,
        Err(poisoned) => poisoned.into_inner(),
    };
    guard
        .get_or_insert_with(HashMap::new)
        .entry(path.to_path_buf())
        .or_insert_with(|| look(path))
        .clone()
}

/// Forgets every snapshot: the person has seen the files as they are now.
pub fn refresh() {
    let mut guard = match FIRST_READ.lock() {
        Ok(guard) => guard,
        Err(poisoned) => poisoned.into_inner(),
    };
    *guard = None;
}

/// Forgets the snapshot of one file (the person changed it).
pub(crate) fn forget(path: &Path) {
    let mut guard = match FIRST_READ.lock() {
        Ok(guard) => guard,
        Err(poisoned) => poisoned.into_inner(),
    };
    if let Some(map) = guard.as_mut() {
        map.retain(|named, entry| {
            named != path && entry.as_ref().is_none_or(|(real, _)| real != path)
        });
    }
}

fn look(path: &Path) -> Entry {
    // Most memory files do not exist: one failed lstat says so, where resolving the path
    // would read every directory's link on the way.
    fs::symlink_metadata(path).ok()?;
    let canonical = fs::canonicalize(path).ok()?;
    if !canonical.is_file() {
        return None;
    }
    let text = fs::read_to_string(&canonical).ok()?;
    Some((canonical, text))
}
