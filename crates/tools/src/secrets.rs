//! troupe's own credentials (provider keys, the store's password), held in memory only.
//!
//! A same-user process can read any other's environment block (`/proc/<pid>/environ` shows the
//! strings as they were at exec, whatever `unsetenv` did since), so a key left in troupe's
//! environment is one read away from every command the model runs. At start, before any thread
//! or child exists, the binary [`take`]s each credential: its value is copied here, the bytes of
//! the original `NAME=value` string are overwritten with zeros where the kernel reads them, and
//! the variable is removed. troupe itself reads them through [`crate::child_env::var`]; teammate
//! processes get them in their launch document on a pipe ([`all`], [`hold`]); no command, hook
//! or server sees them unless `commandEnv.passthrough` names one.

use std::ffi::{CStr, OsString};
use std::os::unix::ffi::OsStringExt;
use std::sync::RwLock;

/// The credentials troupe holds, by variable name.
static HELD: RwLock<Vec<(String, String)>> = RwLock::new(Vec::new());

/// Holds `value` as the credential `name` (a name held again is replaced).
pub fn hold(name: &str, value: String) {
    let mut held = match HELD.write() {
        Ok(held) => held,
        Err(poisoned) => poisoned.into_inner(),
    };
    held.retain(|(k, _)| k != name);
    held.push((name.to_string(), value));
}

/// The credential `name`, when troupe holds it.
pub fn held(name: &str) -> Option<String> {
    let held = match HELD.read() {
        Ok(held) => held,
        Err(poisoned) => poisoned.into_inner(),
    };
    held.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone())
}

/// Every credential troupe holds, for a teammate process's launch document.
pub fn all() -> Vec<(String, String)> {
    match HELD.read() {
        Ok(held) => held.clone(),
        Err(poisoned) => poisoned.into_inner().clone(),
    }
}

/// Takes `name` out of the process environment: returns its value, after overwriting the
/// original string's bytes and removing the variable. `None` when it is not set.
///
/// Call it only before any other thread exists (the environment is not safe to change once
/// they run); the binary does so first thing in `main`.
pub fn take(name: &str) -> Option<OsString> {
    let value = std::env::var_os(name)?;
    wipe(name);
    std::env::remove_var(name);
    Some(value)
}

/// Takes every variable `is_secret` names out of the environment ([`take`]) and holds those
/// that are UTF-8. Returns the names taken.
pub fn take_all(is_secret: impl Fn(&str) -> bool) -> Vec<String> {
    let names: Vec<String> = std::env::vars_os()
        .filter_map(|(key, _)| key.into_string().ok())
        .filter(|name| is_secret(name))
        .collect();
    for name in &names {
        if let Some(value) = take(name) {
            if let Ok(value) = value.into_string() {
                hold(name, value);
            }
        }
    }
    names
}

/// Overwrites with zeros every `name=…` string the C environment points at. Those of the
/// initial environment live in the block `/proc/<pid>/environ` reads.
fn wipe(name: &str) {
    extern "C" {
        static mut environ: *mut *mut libc::c_char;
    }
    let prefix = {
        let mut bytes = OsString::from(name).into_vec();
        bytes.push(b'=');
        bytes
    };
    // SAFETY: called before any other thread exists (see `take`), so nothing changes the
    // environment meanwhile; each entry is a NUL-terminated string in writable memory (the
    // initial block on the stack, or one setenv allocated), and only its own bytes are written.
    unsafe {
        let mut entry = environ;
        if entry.is_null() {
            return;
        }
        while !(*entry).is_null() {
            let text = CStr::from_ptr(*entry);
            let len = text.to_bytes().len();
            if text.to_bytes().starts_with(&prefix) {
                std::ptr::write_bytes(*entry, 0, len);
            }
            entry = entry.add(1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_taken_variable_is_held_and_gone_from_the_environment() {
        std::env::set_var("TROUPE_SECRETS_TEST_KEY", "sk-held");
        let taken = take_all(|name| name == "TROUPE_SECRETS_TEST_KEY");
        assert_eq!(taken, vec!["TROUPE_SECRETS_TEST_KEY".to_string()]);
        assert!(std::env::var_os("TROUPE_SECRETS_TEST_KEY").is_none());
        assert_eq!(held("TROUPE_SECRETS_TEST_KEY").as_deref(), Some("sk-held"));
        assert!(all()
            .iter()
            .any(|(k, v)| k == "TROUPE_SECRETS_TEST_KEY" && v == "sk-held"));
        hold("TROUPE_SECRETS_TEST_KEY", "sk-new".into());
        assert_eq!(held("TROUPE_SECRETS_TEST_KEY").as_deref(), Some("sk-new"));
    }
}
