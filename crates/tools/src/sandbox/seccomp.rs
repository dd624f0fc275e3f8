//! The seccomp filter of a confined call, compiled in troupe (with `seccompiler`) before the
//! spawn, so the forked child only hands the finished program to the kernel.
//!
//! Every confined call refuses (`EPERM`) the system calls that would step around the other
//! layers: `setns` (back into troupe's mount namespace, past the read-only mounts),
//! `open_by_handle_at` (an open by inode, past mount and path checks), `io_uring_setup`
//! (io_uring runs operations, sockets included, without these system calls), and every call
//! that makes or changes mounts (`mount`, `umount2`, `pivot_root`, `open_tree`, `move_mount`,
//! `fsopen`, `fsconfig`, `fsmount`, `fspick`, `mount_setattr`). At workspace-write by default
//! (`"network": "inet"`) `socket()` is refused for every domain but `AF_INET` and `AF_INET6`:
//! TCP and UDP work (builds download, tests listen on loopback), but no unix socket, pathname
//! or abstract, reaches the person's tmux server, ssh agent or session bus. Without network
//! (the read-only level, and workspace-write with `"sandbox": {"network": "deny"}`) `socket()`
//! is refused too, for every domain: no pathname or abstract unix socket, no UDP, no netlink, no
//! raw socket, no TCP. `socketpair()` stays allowed (pipes between a call's own processes).
//!
//! On x86_64 the filter first refuses every x32 system call (numbers with bit 30 set), which the
//! kernel would otherwise run under the same architecture tag with other numbers.

use super::SandboxError;
use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch,
};
use std::collections::BTreeMap;
use std::io;

/// Which sockets a confined call may open.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Network {
    /// Internet sockets only (workspace-write's default): `socket()` of any domain but
    /// `AF_INET` and `AF_INET6` is refused, so no unix socket reaches a server of the person's.
    #[default]
    Inet,
    /// Every socket the rest of the sandbox allows (`"network": "allow"`).
    Allow,
    /// `socket()` is refused for every domain.
    Deny,
}

impl Network {
    /// The setting as settings spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            Network::Inet => "inet",
            Network::Allow => "allow",
            Network::Deny => "deny",
        }
    }
}

/// A compiled filter, ready for the child.
#[derive(Debug)]
pub(crate) struct Filter {
    program: BpfProgram,
}

/// The system calls every confined call is refused. The mount calls matter where the command
/// holds `CAP_SYS_ADMIN` (troupe runs as root, or root inside the call's user namespace):
/// Landlock refuses `mount`, `umount` and `move_mount`, but a detached copy of a mount made with
/// `open_tree` would reach a protected file without the read-only mount on top of it.
const ALWAYS: [libc::c_long; 13] = [
    libc::SYS_setns,
    libc::SYS_open_by_handle_at,
    libc::SYS_io_uring_setup,
    libc::SYS_mount,
    libc::SYS_umount2,
    libc::SYS_pivot_root,
    libc::SYS_open_tree,
    libc::SYS_move_mount,
    libc::SYS_fsopen,
    libc::SYS_fsconfig,
    libc::SYS_fsmount,
    libc::SYS_fspick,
    libc::SYS_mount_setattr,
];

/// `SECCOMP_RET_ERRNO | EPERM`.
const RET_EPERM: u32 = 0x0005_0000 | libc::EPERM as u32;

/// Compiles the filter for a call with `network`.
pub(crate) fn build(network: Network) -> Result<Filter, SandboxError> {
    let arch = TargetArch::try_from(std::env::consts::ARCH)
        .map_err(|e| SandboxError::Seccomp(format!("unsupported architecture: {e}")))?;
    let mut refused: Vec<libc::c_long> = ALWAYS.to_vec();
    if network == Network::Deny {
        refused.push(libc::SYS_socket);
    }
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> =
        refused.into_iter().map(|nr| (nr, Vec::new())).collect();
    if network == Network::Inet {
        rules.insert(libc::SYS_socket, vec![not_inet()?]);
    }
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EPERM as u32),
        arch,
    )
    .map_err(|e| SandboxError::Seccomp(e.to_string()))?;
    let mut program: BpfProgram = filter
        .try_into()
        .map_err(|e: seccompiler::BackendError| SandboxError::Seccomp(e.to_string()))?;
    if cfg!(target_arch = "x86_64") {
        program.splice(0..0, x32_guard());
    }
    Ok(Filter { program })
}

/// The rule matching a `socket()` whose domain is neither `AF_INET` nor `AF_INET6`.
fn not_inet() -> Result<SeccompRule, SandboxError> {
    let domain_is_not = |family: libc::c_int| {
        SeccompCondition::new(0, SeccompCmpArgLen::Dword, SeccompCmpOp::Ne, family as u64)
            .map_err(|e| SandboxError::Seccomp(e.to_string()))
    };
    SeccompRule::new(vec![
        domain_is_not(libc::AF_INET)?,
        domain_is_not(libc::AF_INET6)?,
    ])
    .map_err(|e| SandboxError::Seccomp(e.to_string()))
}

/// Refuses x32 system calls: load the number, and return EPERM when bit 30 is set.
fn x32_guard() -> Vec<seccompiler::sock_filter> {
    const X32_SYSCALL_BIT: u32 = 0x4000_0000;
    let insn = |code: u16, jt: u8, jf: u8, k: u32| seccompiler::sock_filter { code, jt, jf, k };
    let (ld_w_abs, jge_k, ret_k) = (0x20, 0x35, 0x06);
    vec![
        // seccomp_data.nr is at offset 0.
        insn(ld_w_abs, 0, 0, 0),
        insn(jge_k, 0, 1, X32_SYSCALL_BIT),
        insn(ret_k, 0, 0, RET_EPERM),
    ]
}

impl Filter {
    /// Installs the filter on the calling thread. Runs in the forked child, after
    /// `PR_SET_NO_NEW_PRIVS`: one system call on memory prepared before the fork.
    pub(crate) fn apply(&self) -> io::Result<()> {
        const SECCOMP_SET_MODE_FILTER: libc::c_ulong = 1;
        let len = u16::try_from(self.program.len())
            .map_err(|_| io::Error::from_raw_os_error(libc::E2BIG))?;
        let prog = libc::sock_fprog {
            len,
            filter: self.program.as_ptr() as *mut libc::sock_filter,
        };
        // SAFETY: `prog` points at the program, which lives (in troupe's copied memory) until
        // exec; seccomp(SECCOMP_SET_MODE_FILTER) copies it into the kernel and keeps no pointer.
        // seccompiler's `sock_filter` has the kernel's layout, as libc's does.
        let done = unsafe {
            libc::syscall(
                libc::SYS_seccomp,
                SECCOMP_SET_MODE_FILTER,
                0 as libc::c_ulong,
                &prog as *const libc::sock_fprog,
            )
        };
        match done {
            0 => Ok(()),
            _ => Err(io::Error::last_os_error()),
        }
    }
}

/// Whether this kernel can install a seccomp filter, or why not.
pub(crate) fn probe() -> Result<(), String> {
    // Disabled, or already filtered (a container runtime's filter): another filter can still
    // be added. (Strict mode would have killed us for asking.)
    match rustix::thread::secure_computing_mode() {
        Ok(_) => Ok(()),
        Err(_) => Err("the kernel has no seccomp (CONFIG_SECCOMP_FILTER)".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_filter_compiles_for_both_settings_and_denying_the_network_adds_rules() {
        let allow = build(Network::Allow).unwrap();
        let inet = build(Network::Inet).unwrap();
        let deny = build(Network::Deny).unwrap();
        assert!(!allow.program.is_empty());
        assert!(deny.program.len() > allow.program.len());
        assert!(inet.program.len() > deny.program.len());
    }
}
