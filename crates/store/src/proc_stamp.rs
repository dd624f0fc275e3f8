//! Who a process is, beyond its pid: the boot it runs in and its start time in clock ticks
//! since boot (`/proc/<pid>/stat`, field 22). A pid is reused; a pid with the same start time in
//! the same boot is the same process. A lease holder records its stamp, so a successor on the
//! same host can tell at once that the holder is gone (killed, crashed) and take its lease over
//! instead of waiting for it to lapse.

use std::path::Path;
use std::sync::{Mutex, OnceLock, PoisonError};

/// This boot's id (`/proc/sys/kernel/random/boot_id`), if the OS tells it; read once per
/// process (a boot's id does not change while it runs).
pub(crate) fn boot_id() -> Option<String> {
    static BOOT: OnceLock<Option<String>> = OnceLock::new();
    BOOT.get_or_init(|| {
        let id = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").ok()?;
        let id = id.trim();
        (!id.is_empty()).then(|| id.to_string())
    })
    .clone()
}

/// What `/proc/<pid>/stat` says: the state letter and the start time in ticks since boot.
fn stat(proc_root: &Path, pid: u32) -> Option<(char, u64)> {
    let text = std::fs::read_to_string(proc_root.join(pid.to_string()).join("stat")).ok()?;
    // `pid (comm) state ...`: comm may hold spaces and parentheses, so read after the last ')'.
    let after = &text[text.rfind(')')? + 1..];
    let mut fields = after.split_whitespace();
    let state = fields.next()?.chars().next()?;
    // Field 3 is the state; the start time is field 22, i.e. 19 fields after the state.
    let start = fields.nth(18)?.parse().ok()?;
    Some((state, start))
}

/// The stamp of process `pid` as it runs now (`<boot id>/<start ticks>`); `None` when there
/// is no such process or `/proc` does not say.
pub fn of_pid(pid: u32) -> Option<String> {
    if pid == std::process::id() {
        return this_process();
    }
    read_stamp(pid)
}

fn read_stamp(pid: u32) -> Option<String> {
    let (_, start) = stat(Path::new("/proc"), pid)?;
    Some(format!("{}/{start}", boot_id()?))
}

/// This process's stamp; read once per process (each teammate's lease records it), and again
/// in a forked child, which is another process.
pub fn this_process() -> Option<String> {
    static MINE: Mutex<Option<(u32, String)>> = Mutex::new(None);
    let pid = std::process::id();
    let mut mine = MINE.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some((of, stamp)) = mine.as_ref() {
        if *of == pid {
            return Some(stamp.clone());
        }
    }
    let stamp = read_stamp(pid)?;
    *mine = Some((pid, stamp.clone()));
    Some(stamp)
}

/// True when the process that recorded `pid` with `stamp` on this host is certainly gone: no
/// such pid, a zombie, or a pid now used by another process (another start time or boot). A
/// stamp that cannot be checked (no `/proc`) counts as not gone.
pub fn is_gone(pid: u32, stamp: &str) -> bool {
    let Some((boot, start)) = stamp.split_once('/') else {
        return false;
    };
    let Some(this_boot) = boot_id() else {
        return false;
    };
    if boot != this_boot {
        return true; // recorded before this machine last booted
    }
    match stat(Path::new("/proc"), pid) {
        None => Path::new("/proc/self").exists(),
        Some(('Z' | 'X', _)) => true,
        Some((_, now)) => start.parse::<u64>().is_ok_and(|recorded| recorded != now),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_is_read_once_and_says_what_proc_says() {
        let read = read_stamp(std::process::id());
        assert!(read.is_some());
        assert_eq!(this_process(), read);
        assert_eq!(this_process(), read); // the kept one
        assert_eq!(of_pid(std::process::id()), read);
        assert_eq!(boot_id(), boot_id());
    }

    #[test]
    fn a_live_process_is_not_gone_and_a_reaped_one_is() {
        let me = this_process().unwrap_or_else(|| panic!("no /proc stamp for this process"));
        assert!(!is_gone(std::process::id(), &me));
        let mut child = std::process::Command::new("true")
            .spawn()
            .unwrap_or_else(|e| panic!("{e}"));
        let pid = child.id();
        let stamp = of_pid(pid);
        let _ = child.wait();
        if let Some(stamp) = stamp {
            assert!(is_gone(pid, &stamp));
        }
        // The same pid with another start time is another process.
        let (boot, _) = me.split_once('/').unwrap_or_else(|| panic!("{me}"));
        assert!(is_gone(std::process::id(), &format!("{boot}/1")));
        assert!(is_gone(std::process::id(), "another-boot/1"));
        assert!(!is_gone(std::process::id(), "unreadable"));
    }
}
