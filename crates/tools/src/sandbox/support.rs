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
