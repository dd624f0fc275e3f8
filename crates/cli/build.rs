//! Link options of the `troupe` binary (the start-up and memory floor).
//!
//! - Packed relative relocations (`-z pack-relative-relocs`, DT_RELR). The position-independent
//!   binary carries ~47,000 relative relocations; as `Elf64_Rela` entries they are 1.1 MB that
//!   the dynamic loader reads (resident in every run, `--version` included) before `main`;
//!   packed they are a few KB. glibc loads such a binary from 2.36 on, so the option is used
//!   only when building for the machine we build on (no cross target) whose glibc is that new:
//!   a binary built on an older system stays loadable there.
//! - Not position-independent (`-no-pie`) on the same targets, unless `TROUPE_PIE=on`. A
//!   position-independent binary's loader writes every pointer of `.data.rel.ro` (0.9 MB of
//!   vtables, string tables and the like) before `main`, so all of it is resident and dirty in
//!   every run; at a fixed address nothing is written and only the pages a run reads come in
//!   (decision 0030 weighs this against ASLR of the binary's own code).
//! - Hot functions first (`--symbol-ordering-file=link/hot-functions.txt`, written by
//!   `scripts/link-order.py`): the functions a headless run and `--version` execute, placed
//!   together at the start of `.text`. The kernel maps a binary's code in blocks around each
//!   page touched, so the same code scattered over 20 MB of `.text` made ~12 MB resident. Only
//!   with rust-lld, the default linker of x86_64 Linux from Rust 1.90 on (GNU ld has no such
//!   option); a stale list costs memory, never correctness. `TROUPE_LINK_ORDER=off` leaves it
//!   out, `TROUPE_LINK_MAP=FILE` writes the linker's map (both for the script).

use std::path::Path;
use std::process::Command;

const ORDER: &str = "link/hot-functions.txt";

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed={ORDER}");
    println!("cargo:rerun-if-env-changed=TROUPE_LINK_ORDER");
    println!("cargo:rerun-if-env-changed=TROUPE_LINK_MAP");
    println!("cargo:rerun-if-env-changed=TROUPE_PIE");
    let var = |k: &str| std::env::var(k).unwrap_or_default();
    let native = var("TARGET") == var("HOST");
    let linux_gnu = var("CARGO_CFG_TARGET_OS") == "linux" && var("CARGO_CFG_TARGET_ENV") == "gnu";
    if native && linux_gnu && var("TROUPE_PIE") != "on" {
        println!("cargo:rustc-link-arg-bins=-no-pie");
    } else if native && linux_gnu && host_glibc().is_some_and(|v| v >= (2, 36)) {
        println!("cargo:rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
    }
    let map = var("TROUPE_LINK_MAP");
    if !map.is_empty() {
        println!("cargo:rustc-link-arg-bins=-Wl,-Map={map}");
    }
    let order = Path::new(&var("CARGO_MANIFEST_DIR")).join(ORDER);
    if var("TROUPE_LINK_ORDER") != "off" && order.is_file() && default_lld(&var) {
        println!(
            "cargo:rustc-link-arg-bins=-Wl,--symbol-ordering-file={}",
            order.display()
        );
        println!("cargo:rustc-link-arg-bins=-Wl,--no-warn-symbol-ordering");
    }
}

/// The host's glibc version, from `getconf GNU_LIBC_VERSION` ("glibc 2.36").
fn host_glibc() -> Option<(u32, u32)> {
    let out = Command::new("getconf")
        .arg("GNU_LIBC_VERSION")
        .output()
        .ok()?;
    let text = String::from_utf8(out.stdout).ok()?;
    let mut parts = text.trim().strip_prefix("glibc ")?.split('.');
    let major = parts.next()?.parse().ok()?;
    let minor = parts
        .next()?
        .trim_end_matches(|c: char| !c.is_ascii_digit())
        .parse()
        .ok()?;
    Some((major, minor))
}

/// True when the binary is linked by rust-lld as rustc does by default: x86_64 Linux (GNU),
/// Rust 1.90 or later, and no linker chosen by configuration.
fn default_lld(var: &dyn Fn(&str) -> String) -> bool {
    if var("TARGET") != "x86_64-unknown-linux-gnu"
        || !var("CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_LINKER").is_empty()
        || ["linker", "fuse-ld"]
            .iter()
            .any(|k| var("CARGO_ENCODED_RUSTFLAGS").contains(k))
    {
        return false;
    }
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let Ok(out) = Command::new(rustc).arg("-vV").output() else {
        return false;
    };
    let text = String::from_utf8_lossy(&out.stdout);
    let Some(release) = text.lines().find_map(|l| l.strip_prefix("release: ")) else {
        return false;
    };
    let mut parts = release.split(['.', '-']);
    let major: u32 = parts.next().and_then(|p| p.parse().ok()).unwrap_or(0);
    let minor: u32 = parts.next().and_then(|p| p.parse().ok()).unwrap_or(0);
    (major, minor) >= (1, 90)
}
