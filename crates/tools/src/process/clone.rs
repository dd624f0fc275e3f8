//! Starting a program without copying troupe: `clone(CLONE_VM | CLONE_VFORK)`, the way
//! `posix_spawn` starts one, with troupe's own steps between clone and exec (the parent-death
//! signal, the sandbox).
//!
//! The child shares troupe's memory until it executes the program or exits, and the thread that
//! cloned it is suspended meanwhile. So the child runs on a stack of its own, only reads what
//! [`Prepared`] holds (built before the clone: paths, argument and environment vectors, the
//! sandbox plan), allocates nothing, takes no lock, and reports a failure through one atomic.
//! Signals are blocked around the clone, and the child puts every handled signal back to its
//! default before unblocking them, so no handler of troupe's ever runs in it.
//!
//! `clone` with a stack of our own and the child's steps are libc calls: rustix has no `clone`,
//! and the child's calls stay raw (see `process::child::confine_self`).

use super::child::confine_self;
use crate::sandbox::ChildPlan;
use std::ffi::{CString, OsStr};
use std::io;
use std::os::fd::RawFd;
use std::os::unix::ffi::OsStrExt;
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::Arc;

/// The child's stack. What runs on it is a few system calls deep (the mount plan, Landlock,
/// seccomp); untouched pages cost nothing.
const STACK_SIZE: usize = 256 * 1024;

/// Signals 1 to 64 (`NSIG` − 1 on Linux).
const LAST_SIGNAL: libc::c_int = 64;

/// Everything the child reads, prepared in troupe before the clone.
pub(super) struct Prepared {
    pub(super) path: CString,
    /// Kept for `argv`'s pointers.
    _args: Vec<CString>,
    argv: Vec<*const libc::c_char>,
    _env: Vec<CString>,
    envp: Vec<*const libc::c_char>,
    pub(super) cwd: Option<CString>,
    /// The descriptors that become the child's stdin, stdout and stderr (each above 2).
    pub(super) stdio: [RawFd; 3],
    /// A descriptor the child also gets, and the number it gets it as (a side channel).
    pub(super) side: Option<(RawFd, RawFd)>,
    /// The child leads a process group of its own.
    pub(super) own_group: bool,
    /// troupe's pid, to check the parent-death signal was armed in time.
    pub(super) parent: libc::pid_t,
    pub(super) plan: Option<Arc<ChildPlan>>,
    /// The errno of the step that failed in the child; 0 when it executed the program.
    failed: AtomicI32,
    /// The namespaces the clone made the child in (read by the child).
    entered: AtomicI32,
}

/// Set once the kernel refused the namespaces a clone asked for (no PID namespaces here, or
/// none for this user): later calls run without a private `/proc`, as the sandbox did before.
static NAMESPACES_REFUSED: std::sync::atomic::AtomicBool =
    std::sync::atomic::AtomicBool::new(false);

/// A path, argument or variable as the C string exec wants; a NUL byte inside is an error.
pub(super) fn c_string(s: &OsStr) -> io::Result<CString> {
    CString::new(s.as_bytes()).map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{} holds a NUL byte", s.to_string_lossy()),
        )
    })
}

impl Prepared {
    pub(super) fn new(
        path: CString,
        args: Vec<CString>,
        env: Vec<CString>,
        cwd: Option<CString>,
        stdio: [RawFd; 3],
        own_group: bool,
        plan: Option<Arc<ChildPlan>>,
    ) -> Prepared {
        let argv = args
            .iter()
            .map(|a| a.as_ptr())
            .chain(std::iter::once(std::ptr::null()))
            .collect();
        let envp = env
            .iter()
            .map(|e| e.as_ptr())
            .chain(std::iter::once(std::ptr::null()))
            .collect();
        Prepared {
            path,
            _args: args,
            argv,
            _env: env,
            envp,
            cwd,
            stdio,
            side: None,
            own_group,
            // SAFETY: getpid(2) has no preconditions.
            parent: unsafe { libc::getpid() },
            plan,
            failed: AtomicI32::new(0),
            entered: AtomicI32::new(0),
        }
    }
}

/// The child's stack: fresh pages of its own (mapped, so they are never zeroed by hand or
/// taken from the heap), unmapped when the clone has returned.
struct Stack(*mut libc::c_void);

impl Stack {
    fn new() -> io::Result<Stack> {
        // SAFETY: an anonymous private mapping at an address the kernel picks.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                STACK_SIZE,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_STACK | libc::MAP_NORESERVE,
                -1,
                0,
            )
        };
        match base {
            libc::MAP_FAILED => Err(io::Error::last_os_error()),
            base => Ok(Stack(base)),
        }
    }

    /// The stack grows down from its end (page-aligned, so 16-byte aligned).
    fn top(&self) -> *mut libc::c_void {
        (self.0 as usize + STACK_SIZE) as *mut libc::c_void
    }
}

impl Drop for Stack {
    fn drop(&mut self) {
        // SAFETY: unmaps the mapping `new` made, once.
        unsafe { libc::munmap(self.0, STACK_SIZE) };
    }
}

/// Clones a child that sets itself up as `prepared` says and executes its program; returns its
/// pid once it has (or the error of the step that failed, the child reaped).
pub(super) fn spawn(prepared: &Prepared) -> io::Result<libc::pid_t> {
    let stack = Stack::new()?;
    // SAFETY: sigfillset and pthread_sigmask write the sets passed; `all` and `old` live here.
    let mut old: libc::sigset_t = unsafe { std::mem::zeroed() };
    let mut all: libc::sigset_t = unsafe { std::mem::zeroed() };
    unsafe {
        libc::sigfillset(&mut all);
        libc::pthread_sigmask(libc::SIG_SETMASK, &all, &mut old);
    }
    let wanted = match NAMESPACES_REFUSED.load(Ordering::Relaxed) {
        true => 0,
        false => prepared
            .plan
            .as_ref()
            .and_then(|plan| plan.mounts.as_ref())
            .map_or(0, |mounts| mounts.clone_flags()),
    };
    let clone_with = |namespaces: libc::c_int| {
        prepared.entered.store(namespaces, Ordering::Release);
        // SAFETY: the child runs `child_main` on `stack` (alive until clone returns, which with
        // CLONE_VFORK is after the child executed its program or exited) and only reads
        // `prepared` (borrowed for this whole call) and stores into its atomic; see the module
        // comment.
        let pid = unsafe {
            libc::clone(
                child_main,
                stack.top(),
                libc::CLONE_VM | libc::CLONE_VFORK | libc::SIGCHLD | namespaces,
                prepared as *const Prepared as *mut libc::c_void,
            )
        };
        (pid, io::Error::last_os_error())
    };
    let (mut pid, mut clone_error) = clone_with(wanted);
    let refused = [libc::EPERM, libc::EINVAL, libc::ENOSPC, libc::EUSERS];
    if pid < 0 && wanted != 0 && refused.contains(&clone_error.raw_os_error().unwrap_or(0)) {
        // No PID namespace here (or no more of them): once said, later calls do not ask.
        NAMESPACES_REFUSED.store(true, Ordering::Relaxed);
        (pid, clone_error) = clone_with(0);
    }
    // SAFETY: restores the mask saved above.
    unsafe { libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut()) };
    // A child that made a user namespace made the shared memory dumpable for its id maps.
    if prepared
        .plan
        .as_ref()
        .is_some_and(|plan| plan.mounts.as_ref().is_some_and(|m| m.uses_userns()))
    {
        super::keep_undumpable();
    }
    drop(stack);
    if pid < 0 {
        return Err(clone_error);
    }
    match prepared.failed.load(Ordering::Acquire) {
        0 => Ok(pid),
        errno => {
            let mut status = 0;
            // SAFETY: reaps our own child, which has exited; `status` is a valid out pointer.
            unsafe { libc::waitpid(pid, &mut status, 0) };
            Err(io::Error::from_raw_os_error(errno))
        }
    }
}

/// The child's side: only system calls on memory `arg` points at.
extern "C" fn child_main(arg: *mut libc::c_void) -> libc::c_int {
    // SAFETY: `arg` is the `Prepared` that `spawn` borrows until this child has exec'd or exited.
    let prepared = unsafe { &*(arg as *const Prepared) };
    let errno = match set_up_and_exec(prepared, prepared.entered.load(Ordering::Acquire)) {
        Ok(()) => libc::EINVAL, // exec returned without an error: cannot happen
        Err(err) => err.raw_os_error().unwrap_or(libc::EINVAL),
    };
    prepared.failed.store(errno, Ordering::Release);
    // SAFETY: _exit(2) ends the child at once, running nothing of troupe's.
    unsafe { libc::_exit(127) }
}

fn check(result: libc::c_int) -> io::Result<()> {
    match result {
        -1 => Err(io::Error::last_os_error()),
        _ => Ok(()),
    }
}

fn set_up_and_exec(p: &Prepared, entered: libc::c_int) -> io::Result<()> {
    // SAFETY (the whole function): async-signal-safe system calls on integers and on `p`'s
    // memory, which outlives the child's use of it.
    unsafe {
        // No handler of troupe's may run in the child: every handled signal back to its
        // default, and SIGPIPE too (Rust ignores it; programs expect the default).
        for signal in 1..=LAST_SIGNAL {
            if signal == libc::SIGKILL || signal == libc::SIGSTOP {
                continue;
            }
            let mut current: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(signal, std::ptr::null(), &mut current) != 0 {
                continue; // reserved by the C library
            }
            let handled =
                current.sa_sigaction != libc::SIG_DFL && current.sa_sigaction != libc::SIG_IGN;
            if handled || signal == libc::SIGPIPE {
                let mut default: libc::sigaction = std::mem::zeroed();
                default.sa_sigaction = libc::SIG_DFL;
                libc::sigaction(signal, &default, std::ptr::null_mut());
            }
        }
        for (target, &source) in p.stdio.iter().enumerate() {
            check(libc::dup2(source, target as libc::c_int))?;
        }
        if let Some((source, target)) = p.side {
            match source == target {
                true => check(libc::fcntl(target, libc::F_SETFD, 0))?,
                false => check(libc::dup2(source, target))?,
            };
        }
        if let Some(cwd) = &p.cwd {
            check(libc::chdir(cwd.as_ptr()))?;
        }
        if p.own_group {
            check(libc::setpgid(0, 0))?;
        }
        confine_self(p.parent, p.plan.as_deref(), entered)?;
        let empty: libc::sigset_t = {
            let mut set = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            set
        };
        libc::pthread_sigmask(libc::SIG_SETMASK, &empty, std::ptr::null_mut());
        libc::execve(p.path.as_ptr(), p.argv.as_ptr(), p.envp.as_ptr());
    }
    Err(io::Error::last_os_error())
}
