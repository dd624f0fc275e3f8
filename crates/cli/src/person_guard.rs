//! Only the person answers as the person: `troupe team approve`, `reject`, `send`, `stop` and
//! the dashboard speak as `user:<name>`, so they refuse to run inside an agent's tool call.
//!
//! Two signs, either enough: the call marker troupe sets in every process a tool call, hook or
//! background command starts (`TROUPE_TOOL_CALL`), and, since a command can drop a variable, a
//! troupe process among the ancestors (troupe is the child subreaper of everything its calls
//! start, so no descendant escapes its tree). What makes it hold whatever a command does is the
//! kernel's: a confined call cannot write the team's state (`.troupe` is read-only to it) and
//! holds no store credentials. This check is what says why.

use std::path::{Path, PathBuf};
use troupe_tools::process::CALL_MARKER_ENV;

/// Why `action` may not run here, or `None` when nothing says this is inside a tool call.
pub fn refusal(action: &str) -> Option<String> {
    let why = if std::env::var_os(CALL_MARKER_ENV).is_some() {
        format!("{CALL_MARKER_ENV} is set")
    } else {
        let pid = troupe_ancestor()?;
        format!("troupe (pid {pid}) started it")
    };
    Some(format!(
        "`troupe {action}` answers as the person, and this runs inside an agent's tool call \
         ({why}); answer in the session itself or from a terminal of your own"
    ))
}

/// The nearest ancestor running the same troupe binary, if any.
fn troupe_ancestor() -> Option<u32> {
    let me = std::fs::read_link("/proc/self/exe").ok()?;
    let mut pid = parent_of(std::process::id())?;
    // A bounded walk: pids can be reused, a cycle cannot last.
    for _ in 0..64 {
        if pid <= 1 {
            return None;
        }
        if let Ok(exe) = std::fs::read_link(format!("/proc/{pid}/exe")) {
            if same_program(&exe, &me) {
                return Some(pid);
            }
        }
        pid = parent_of(pid)?;
    }
    None
}

/// Whether `exe` is troupe: the same file as this one, or a binary named `troupe`.
fn same_program(exe: &Path, me: &Path) -> bool {
    let name = |p: &Path| p.file_name().map(|n| n.to_owned());
    let strip = |p: &Path| -> PathBuf {
        // A replaced binary reads as "path (deleted)".
        PathBuf::from(p.to_string_lossy().trim_end_matches(" (deleted)"))
    };
    strip(exe) == strip(me) || name(&strip(exe)).is_some_and(|n| n == "troupe")
}

/// The parent of `pid`, from `/proc/<pid>/stat` (the field after the command's closing `)`).
fn parent_of(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after = stat.rsplit_once(')')?.1;
    after.split_whitespace().nth(1)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_parent_is_read_from_stat() {
        let me = std::process::id();
        let parent = parent_of(me).unwrap();
        assert_eq!(parent, std::os::unix::process::parent_id());
    }

    #[test]
    fn troupe_is_known_by_its_file_or_its_name() {
        let me = Path::new("/opt/bin/troupe-dev");
        assert!(same_program(Path::new("/opt/bin/troupe-dev (deleted)"), me));
        assert!(same_program(Path::new("/usr/local/bin/troupe"), me));
        assert!(!same_program(Path::new("/usr/bin/bash"), me));
    }
}
