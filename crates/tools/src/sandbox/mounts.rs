//! The private mount namespace of a confined call: protected files mounted read-only over
//! themselves, Read-denied paths covered by something empty.
//!
//! Landlock alone cannot do it: a right granted on a directory covers everything beneath it, and
//! `git commit` must create files in `.git` itself. So, before Landlock, the child enters a mount
//! namespace of its own (`unshare(CLONE_NEWNS)` when troupe holds `CAP_SYS_ADMIN`, else a user
//! namespace too, mapping only its own ids), makes every mount private (nothing propagates back
//! to troupe's namespace), and then:
//!
//! - binds each directory between the workspace and a protected file onto itself (`.git`,
//!   `.claude`, …), so it is a mount point, which cannot be renamed or removed: a command cannot
//!   move `.git` aside and put a writable copy in its place;
//! - binds each protected path onto itself and remounts that read-only (writes fail `EROFS`);
//! - covers each hidden directory with an empty read-only tmpfs and each hidden file with
//!   `/dev/null` mounted read-only.
//!
//! Landlock (applied right after) forbids the command any later mount or unmount, and the
//! seccomp filter refuses `setns`, so the command cannot undo any of it.
//!
//! Every path and buffer is prepared here, in troupe; [`MountPlan::apply`] runs in the forked
//! child and makes plain system calls on them only — libc's, like the rest of the child's steps
//! (see `process::child::confine_self`).

use std::ffi::{CStr, CString};
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::OnceLock;

/// Test hook: with `1`, the user-namespace path is taken even when troupe holds
/// `CAP_SYS_ADMIN`, so it can be exercised as root.
pub const FORCE_USERNS_ENV: &str = "TROUPE_SANDBOX_FORCE_USERNS";

/// What one mount does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// Bind the directory onto itself, writable: it becomes a mount point that cannot be renamed.
    Anchor,
    /// Bind the path onto itself read-only.
    ReadOnly,
    /// Cover the directory with an empty read-only tmpfs.
    HideDir,
    /// Cover the file with `/dev/null`, read-only.
    HideFile,
}

#[derive(Debug)]
struct Op {
    kind: Kind,
    target: CString,
    /// The flags the read-only remount must keep (`nosuid`, `nodev`, `noexec`, atime flags of
    /// the mount the bind comes from); a user namespace may not drop them.
    keep: libc::c_ulong,
}

/// The ids a user namespace maps: only troupe's own.
#[derive(Debug)]
struct UserMaps {
    uid_map: Vec<u8>,
    gid_map: Vec<u8>,
}

/// Everything the child does to its mount namespace, prepared.
#[derive(Debug, Default)]
pub(crate) struct MountPlan {
    userns: Option<UserMaps>,
    ops: Vec<Op>,
    /// A PID namespace of its own with a private `/proc`, so troupe's processes and the
    /// teammates' are not visible to the call at all (made by the clone, see [`Self::clone_flags`]).
    pids: bool,
}

const ROOT: &CStr = c"/";
const DEV_NULL: &CStr = c"/dev/null";
const TMPFS: &CStr = c"tmpfs";
const SETGROUPS: &CStr = c"/proc/self/setgroups";
const UID_MAP: &CStr = c"/proc/self/uid_map";
const GID_MAP: &CStr = c"/proc/self/gid_map";
const PROC: &CStr = c"/proc";

impl MountPlan {
    /// An empty plan for this process: a plain mount namespace when troupe may make one, else a
    /// user namespace mapping troupe's ids.
    pub(crate) fn new() -> MountPlan {
        MountPlan {
            userns: uses_userns().then(user_maps),
            ops: Vec::new(),
            pids: false,
        }
    }

    /// Asks for a PID namespace with a private `/proc` (where the clone can make one).
    pub(crate) fn private_pids(&mut self) {
        self.pids = true;
    }

    /// The namespaces the clone makes for this plan: a PID namespace (with the user namespace,
    /// when troupe needs one, since the PID namespace must belong to it to mount its `/proc`).
    pub(crate) fn clone_flags(&self) -> libc::c_int {
        match (self.pids, self.userns.is_some()) {
            (false, _) => 0,
            (true, false) => libc::CLONE_NEWPID,
            (true, true) => libc::CLONE_NEWPID | libc::CLONE_NEWUSER,
        }
    }

    /// Adds one mount on `target` (which must exist).
    pub(crate) fn push(&mut self, kind: Kind, target: &Path) -> io::Result<()> {
        let keep = match kind {
            Kind::Anchor | Kind::HideDir => 0,
            Kind::ReadOnly => kept_flags(target)?,
            Kind::HideFile => kept_flags(Path::new("/dev/null"))?,
        };
        let target = CString::new(target.as_os_str().as_bytes())
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a NUL byte in a path"))?;
        self.ops.push(Op { kind, target, keep });
        Ok(())
    }

    /// Whether the plan mounts nothing.
    pub(crate) fn is_empty(&self) -> bool {
        self.ops.is_empty() && !self.pids
    }

    /// Whether the child makes a user namespace.
    pub(crate) fn uses_userns(&self) -> bool {
        self.userns.is_some()
    }

    /// Enters the namespace and makes the mounts. Runs in the forked child: system calls on
    /// memory prepared before the fork only (no allocation, no locks).
    ///
    /// `entered` are the namespaces the clone already made ([`Self::clone_flags`], or 0 where
    /// the kernel refused them): a user namespace made there is not made again, and the private
    /// `/proc` is mounted only inside a PID namespace of the call's own.
    pub(crate) fn apply(&self, entered: libc::c_int) -> io::Result<()> {
        match &self.userns {
            None => check(unsafe_unshare(libc::CLONE_NEWNS))?,
            Some(maps) => {
                let user = match entered & libc::CLONE_NEWUSER {
                    0 => libc::CLONE_NEWUSER,
                    _ => 0,
                };
                check(unsafe_unshare(user | libc::CLONE_NEWNS))?;
                // The id map files of an undumpable process belong to root, whom the new user
                // namespace does not map: dumpable for the writes (the memory is troupe's until
                // the exec; troupe makes itself undumpable again once the spawn returns).
                // SAFETY: prctl(PR_SET_DUMPABLE) takes only integers.
                unsafe { libc::prctl(libc::PR_SET_DUMPABLE, 1 as libc::c_ulong, 0, 0, 0) };
                write_file(SETGROUPS, b"deny")?;
                write_file(UID_MAP, &maps.uid_map)?;
                write_file(GID_MAP, &maps.gid_map)?;
            }
        }
        mount(None, ROOT, None, libc::MS_REC | libc::MS_PRIVATE, None)?;
        if entered & libc::CLONE_NEWPID != 0 {
            // The calls's own processes only. Where the kernel refuses a new proc (a container
            // that masks parts of its /proc), the call still runs: troupe's environment holds no
            // credential and the seccomp filter and Landlock hold as before.
            let _ = mount(
                Some(PROC),
                PROC,
                Some(c"proc"),
                libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
                None,
            );
        }
        for op in &self.ops {
            let target = op.target.as_c_str();
            match op.kind {
                Kind::Anchor => mount(Some(target), target, None, libc::MS_BIND, None)?,
                Kind::ReadOnly => {
                    mount(Some(target), target, None, libc::MS_BIND, None)?;
                    remount_read_only(target, op.keep)?;
                }
                Kind::HideFile => {
                    mount(Some(DEV_NULL), target, None, libc::MS_BIND, None)?;
                    remount_read_only(target, op.keep)?;
                }
                Kind::HideDir => mount(
                    Some(TMPFS),
                    target,
                    Some(TMPFS),
                    libc::MS_RDONLY | libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
                    Some(c"size=4k,mode=0555"),
                )?,
            }
        }
        Ok(())
    }
}

fn remount_read_only(target: &CStr, keep: libc::c_ulong) -> io::Result<()> {
    mount(
        None,
        target,
        None,
        libc::MS_REMOUNT | libc::MS_BIND | libc::MS_RDONLY | keep,
        None,
    )
}

fn unsafe_unshare(flags: libc::c_int) -> libc::c_int {
    // SAFETY: unshare(2) takes only flags.
    unsafe { libc::unshare(flags) }
}

fn check(result: libc::c_int) -> io::Result<()> {
    match result {
        0 => Ok(()),
        _ => Err(io::Error::last_os_error()),
    }
}

fn mount(
    source: Option<&CStr>,
    target: &CStr,
    fstype: Option<&CStr>,
    flags: libc::c_ulong,
    data: Option<&CStr>,
) -> io::Result<()> {
    let ptr = |s: Option<&CStr>| s.map_or(std::ptr::null(), CStr::as_ptr);
    // SAFETY: every pointer is null or a NUL-terminated string that outlives the call.
    check(unsafe {
        libc::mount(
            ptr(source),
            target.as_ptr(),
            ptr(fstype),
            flags,
            ptr(data).cast(),
        )
    })
}

/// Writes `data` to `path` with open/write/close (async-signal-safe).
fn write_file(path: &CStr, data: &[u8]) -> io::Result<()> {
    // SAFETY: `path` is NUL-terminated; open returns a descriptor or -1.
    let fd = unsafe { libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `data` is valid for its length; `fd` is ours.
    let written = unsafe { libc::write(fd, data.as_ptr().cast(), data.len()) };
    let err = io::Error::last_os_error();
    // SAFETY: `fd` is ours and closed once.
    unsafe { libc::close(fd) };
    match usize::try_from(written) {
        Ok(n) if n == data.len() => Ok(()),
        _ => Err(err),
    }
}

/// The mount flags of the mount holding `path` that a read-only remount must keep.
fn kept_flags(path: &Path) -> io::Result<libc::c_ulong> {
    let c = CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a NUL byte in a path"))?;
    // SAFETY: an all-zero statvfs is a valid value to be overwritten.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: `c` is NUL-terminated and `st` is a valid out-pointer.
    check(unsafe { libc::statvfs(c.as_ptr(), &mut st) })?;
    let pairs = [
        (libc::ST_NOSUID, libc::MS_NOSUID),
        (libc::ST_NODEV, libc::MS_NODEV),
        (libc::ST_NOEXEC, libc::MS_NOEXEC),
        (libc::ST_NOATIME, libc::MS_NOATIME),
        (libc::ST_NODIRATIME, libc::MS_NODIRATIME),
        (libc::ST_RELATIME, libc::MS_RELATIME),
    ];
    Ok(pairs
        .iter()
        .filter(|(st_flag, _)| st.f_flag & st_flag != 0)
        .fold(0, |acc, (_, ms)| acc | ms))
}

fn forced_userns() -> bool {
    std::env::var(FORCE_USERNS_ENV).is_ok_and(|v| v == "1")
}

fn user_maps() -> UserMaps {
    // SAFETY: getuid/getgid have no preconditions.
    let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
    UserMaps {
        uid_map: format!("{uid} {uid} 1\n").into_bytes(),
        gid_map: format!("{gid} {gid} 1\n").into_bytes(),
    }
}

/// Whether a call's namespace is made with a user namespace (troupe lacks `CAP_SYS_ADMIN`, or
/// the test hook asks for it).
pub fn uses_userns() -> bool {
    !may_mount() || forced_userns()
}

/// Whether troupe holds `CAP_SYS_ADMIN` (it may make a mount namespace without a user one).
fn may_mount() -> bool {
    static MAY: OnceLock<bool> = OnceLock::new();
    *MAY.get_or_init(|| {
        const CAP_SYS_ADMIN: u32 = 21;
        let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
        status
            .lines()
            .find_map(|line| line.strip_prefix("CapEff:"))
            .and_then(|hex| u64::from_str_radix(hex.trim(), 16).ok())
            .is_some_and(|caps| caps & (1 << CAP_SYS_ADMIN) != 0)
    })
}

/// Whether a child can make the namespace (the plan `MountPlan::new` makes, with no mounts),
/// tried once per process with a real child; `Err` says why not.
pub(crate) fn probe() -> Result<(), String> {
    use std::os::unix::process::CommandExt;
    let plan = std::sync::Arc::new(MountPlan::new());
    let how = match plan.uses_userns() {
        true => "a user and mount namespace",
        false => "a mount namespace",
    };
    let mut cmd = std::process::Command::new("sh");
    cmd.args(["-c", "exit 0"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    let in_child = plan.clone();
    // SAFETY: the closure only calls `MountPlan::apply`, which makes system calls on memory
    // prepared before the fork.
    unsafe {
        cmd.pre_exec(move || in_child.apply(0));
    }
    match cmd.status() {
        Ok(status) if status.success() => Ok(()),
        Ok(status) => Err(format!("a child in {how} failed ({status})")),
        Err(err) => Err(format!(
            "the kernel refused {how} ({err}); unprivileged user namespaces may be disabled \
             (sysctl kernel.unprivileged_userns_clone, user.max_user_namespaces, or an AppArmor \
             restriction)"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plan_keeps_the_flags_of_the_mount_it_remounts_and_rejects_nul_bytes() {
        let mut plan = MountPlan::default();
        plan.push(Kind::HideFile, Path::new("/etc/hostname"))
            .unwrap();
        plan.push(Kind::ReadOnly, Path::new("/")).unwrap();
        assert_eq!(plan.ops.len(), 2);
        let bad = std::ffi::OsStr::from_bytes(b"/tmp/a\0b");
        assert!(plan.push(Kind::Anchor, Path::new(bad)).is_err());
    }

    #[test]
    fn the_user_namespace_maps_only_our_own_ids() {
        let maps = user_maps();
        // SAFETY: getuid has no preconditions.
        let uid = unsafe { libc::getuid() };
        assert_eq!(maps.uid_map, format!("{uid} {uid} 1\n").into_bytes());
    }
}
