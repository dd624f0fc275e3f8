//! Whether this machine can confine commands: a Landlock probe, made once per process.

use std::sync::OnceLock;

/// Test hook: when set to `1`, the probe reports Landlock as unsupported, so the fail-closed
/// paths can be exercised on a kernel that has it. Not meant for anything but tests.
pub const FORCE_UNSUPPORTED_ENV: &str = "TROUPE_SANDBOX_FORCE_UNSUPPORTED";

/// The oldest Landlock ABI that restricts every filesystem write troupe must stop. ABI 1 and 2
/// cannot restrict truncation (`truncate(2)`, `O_TRUNC`), so a confined command could still
/// empty any file it can name; that is not a read-only filesystem.
pub const MIN_ABI: i32 = 3;

/// What the kernel offers for confining commands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Support {
    /// Landlock is usable for the full filesystem restriction.
    Available {
        /// The kernel's Landlock ABI version.
        abi: i32,
    },
    /// Commands cannot be confined here.
    Unsupported {
        /// Why, in words a person can act on.
        why: String,
    },
}

impl Support {
    /// Whether commands can be confined.
    pub fn is_available(&self) -> bool {
        matches!(self, Support::Available { .. })
    }
}

/// The probe's answer, computed on first use.
pub fn support() -> &'static Support {
    static SUPPORT: OnceLock<Support> = OnceLock::new();
    SUPPORT.get_or_init(probe)
}

/// The kernel's Landlock ABI version, or the errno that says why there is none.
pub fn kernel_abi() -> Result<i32, i32> {
    const LANDLOCK_CREATE_RULESET_VERSION: libc::c_uint = 1;
    // SAFETY: with a null attribute pointer, size 0 and the VERSION flag, landlock_create_ruleset
    // only returns the ABI version (or -1 and errno); it reads and writes no memory.
    let version = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0usize,
            LANDLOCK_CREATE_RULESET_VERSION,
        )
    };
    match i32::try_from(version) {
        Ok(v) if v > 0 => Ok(v),
        _ => Err(std::io::Error::last_os_error()
            .raw_os_error()
            .unwrap_or(libc::ENOSYS)),
    }
}

fn probe() -> Support {
    if std::env::var(FORCE_UNSUPPORTED_ENV).is_ok_and(|v| v == "1") {
        return Support::Unsupported {
            why: format!("{FORCE_UNSUPPORTED_ENV}=1 is set (a test hook)"),
        };
    }
    match kernel_abi() {
        Ok(abi) if abi >= MIN_ABI => Support::Available { abi },
        Ok(abi) => Support::Unsupported {
            why: format!(
                "the kernel's Landlock ABI {abi} cannot restrict truncation; troupe needs ABI \
                 {MIN_ABI} (Linux 6.2) or later"
            ),
        },
        Err(libc::EOPNOTSUPP) => Support::Unsupported {
            why: "Landlock is built into the kernel but not enabled (add it to the lsm= boot \
                  parameter)"
                .into(),
        },
        Err(_) => Support::Unsupported {
            why: "the kernel has no Landlock (it needs Linux 6.2 or later built with \
                  CONFIG_SECURITY_LANDLOCK)"
                .into(),
        },
    }
}

/// Whether a confined child can make its private mount namespace (tried once per process with a
/// real child); `Err` says why not.
pub fn namespaces() -> &'static Result<(), String> {
    static NAMESPACES: OnceLock<Result<(), String>> = OnceLock::new();
    NAMESPACES.get_or_init(|| {
        if std::env::var(FORCE_NO_NAMESPACE_ENV).is_ok_and(|v| v == "1") {
            return Err(format!("{FORCE_NO_NAMESPACE_ENV}=1 is set (a test hook)"));
        }
        super::mounts::probe()
    })
}

/// Test hook: when set to `1`, the namespace probe reports failure, so the fail-closed path of a
/// call that needs a mount namespace can be exercised.
pub const FORCE_NO_NAMESPACE_ENV: &str = "TROUPE_SANDBOX_FORCE_NO_NAMESPACE";

/// Whether this kernel can install a seccomp filter; `Err` says why not.
pub fn seccomp_support() -> &'static Result<(), String> {
    static SECCOMP: OnceLock<Result<(), String>> = OnceLock::new();
    SECCOMP.get_or_init(super::seccomp::probe)
}

/// Why calls at `level` under `config` cannot be confined here, or `None` when they can (or need
/// no confinement): Landlock, the seccomp filter, and the mount namespace when the level needs
/// one (workspace-write always, for protected files; read-only when Read deny rules hide paths).
pub fn unsupported(level: super::Sandbox, config: &super::SandboxConfig) -> Option<String> {
    if config.effective(level) == super::Sandbox::Unsandboxed {
        return None;
    }
    if let Support::Unsupported { why } = support() {
        return Some(format!("no usable Landlock: {why}"));
    }
    if let Err(why) = seccomp_support() {
        return Some(format!("no seccomp filter: {why}"));
    }
    if config.needs_namespace(level) {
        if let Err(why) = namespaces() {
            let needed = match level {
                super::Sandbox::WorkspaceWrite => "to keep protected files read-only",
                _ => "to hide the paths Read deny rules cover",
            };
            return Some(format!("no private mount namespace {needed}: {why}"));
        }
    }
    None
}
