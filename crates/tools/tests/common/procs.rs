//! Process state read from `/proc`, for tests that check no process outlives its owner. Also
//! included by the cli crate's tests (by path), so it uses only `std`.

/// Whether a process is running (a zombie counts as gone).
pub fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        !matches!(
            stat.rsplit_once(')')
                .and_then(|(_, rest)| rest.trim_start().chars().next()),
            Some('Z' | 'X')
        )
    })
}
