//! The link-order list (`link/hot-functions.txt`, written by `scripts/link-order.py`, handed to
//! the linker by `build.rs`) names functions that still exist. A stale list costs memory, never
//! correctness, so nothing else would notice: this test looks the names up in the symbol table
//! of the `troupe` binary the test run built (the debug one in CI; the release one is stripped,
//! and the test then says so and passes).
//!
//! The list spells the names of a release build, whose hashes differ from a debug build's (each
//! crate's hash covers the profile; LTO adds `.llvm.N` suffixes), so two checks:
//! - by name without the hashes: at most 10 % of the list may be missing (inlined in a debug
//!   build, or gone). A function renamed, moved or removed on the start-up or headless path
//!   shows here. The list names even the smallest functions a run executes (6–8 % of them are
//!   inlined everywhere in a debug build, whose dependencies are built at opt-level 1).
//! - exactly, for the standard library's own functions (`_RNv…` without a suffix, compiled
//!   once by the toolchain, so the same in every profile): at most 30 % missing (a debug build
//!   links only those it calls; about a fifth of a release run's are not). A toolchain upgrade
//!   renames them all.
//!
//! What neither catches: a dependency bumped or added changes the hash in every name of the
//! crates above it, which only a release build shows. So the script also writes the digest of
//! Cargo.lock and every manifest beside the list (`link/hot-functions.inputs`), and a third
//! check fails when the checkout's digest differs: after such a change (and after a toolchain
//! upgrade, which the second check sees) run `python3 scripts/link-order.py`.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code may panic on a broken fixture

use std::collections::HashSet;
use std::path::Path;
use std::process::Command;

/// The share of the list that may be missing by name.
const MISSING: f64 = 0.10;

/// The share of the standard library's functions that may be missing exactly.
const MISSING_STD: f64 = 0.30;

/// A symbol without what changes between builds of the same code: the legacy mangling's hash
/// (`17h<16 hex>E`), v0's crate disambiguators (`Cs<base62>_`) and LTO's suffixes (`.llvm.<N>`,
/// and `.<N>` on a local symbol renamed apart from another of its name).
fn unhashed(symbol: &str) -> String {
    let symbol = match symbol.find(".llvm.") {
        Some(at) => &symbol[..at],
        None => symbol,
    };
    let symbol = match symbol.rsplit_once('.') {
        Some((name, n)) if !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) => name,
        _ => symbol,
    };
    let bytes = symbol.as_bytes();
    let mut out = String::with_capacity(symbol.len());
    let mut i = 0;
    while i < bytes.len() {
        let rest = &symbol[i..];
        if rest.starts_with("17h")
            && rest.len() >= 20
            && rest.as_bytes()[3..19].iter().all(u8::is_ascii_hexdigit)
            && rest.as_bytes()[19] == b'E'
        {
            out.push('E');
            i += 20;
            continue;
        }
        if let Some(after) = rest.strip_prefix("Cs") {
            if let Some(end) = after.find('_') {
                if after[..end].bytes().all(|b| b.is_ascii_alphanumeric()) {
                    out.push_str("Cs_");
                    i += 2 + end + 1;
                    continue;
                }
            }
        }
        out.push(bytes[i] as char);
        i += 1;
    }
    out
}

#[test]
fn unhashed_names_drop_only_the_hashes() {
    assert_eq!(
        unhashed("_ZN6troupe4main17h448f450624e3ade3E"),
        "_ZN6troupe4mainE"
    );
    assert_eq!(
        unhashed("_RNvNtCsjrHSEGnQ3l9_3std3env7args_os.llvm.123"),
        "_RNvNtCs_3std3env7args_os"
    );
    assert_eq!(
        unhashed("_RNvNtCslNYArtu3iFV_5alloc5boxed14box_new_uninit.12470"),
        "_RNvNtCs_5alloc5boxed14box_new_uninit"
    );
}

/// FNV-1a 64 over each file's path and its lines without comments or blanks: Cargo.lock, the
/// workspace manifest, then every crate's manifest by path (as `scripts/link-order.py` does).
fn build_inputs(root: &Path) -> String {
    let mut crates: Vec<String> = std::fs::read_dir(root.join("crates"))
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.path().join("Cargo.toml").is_file())
        .map(|e| format!("crates/{}/Cargo.toml", e.file_name().to_string_lossy()))
        .collect();
    crates.sort();
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    let mut feed = |bytes: &[u8]| {
        for &b in bytes {
            hash = (hash ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
    };
    for rel in ["Cargo.lock".to_owned(), "Cargo.toml".to_owned()]
        .into_iter()
        .chain(crates)
    {
        feed(rel.as_bytes());
        feed(b"\n");
        let text = std::fs::read_to_string(root.join(&rel)).unwrap();
        for line in text.lines().map(str::trim) {
            if !line.is_empty() && !line.starts_with('#') {
                feed(line.as_bytes());
                feed(b"\n");
            }
        }
    }
    format!("{hash:016x}")
}

#[test]
fn the_link_order_list_was_written_for_these_dependencies() {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let root = manifest.parent().and_then(Path::parent).unwrap();
    let recorded = std::fs::read_to_string(manifest.join("link/hot-functions.inputs")).unwrap();
    assert_eq!(
        recorded.trim(),
        build_inputs(root),
        "Cargo.lock or a manifest changed since the link-order list was written, and a release \
         build's function names change with them: regenerate it (python3 scripts/link-order.py, \
         two release builds) and commit both files in crates/cli/link/"
    );
}

#[test]
fn the_link_order_list_names_functions_that_exist() {
    let list_path = Path::new(env!("CARGO_MANIFEST_DIR")).join("link/hot-functions.txt");
    let text = std::fs::read_to_string(&list_path).unwrap();
    let listed: Vec<&str> = text.lines().filter(|l| !l.is_empty()).collect();
    assert!(!listed.is_empty(), "{} is empty", list_path.display());
    let unique: HashSet<&str> = listed.iter().copied().collect();
    assert_eq!(
        unique.len(),
        listed.len(),
        "the list names a function twice"
    );

    let nm = Command::new("nm")
        .args(["--defined-only", env!("CARGO_BIN_EXE_troupe")])
        .output();
    let Some(nm) = nm
        .ok()
        .filter(|o| o.status.success() && !o.stdout.is_empty())
    else {
        assert!(
            std::env::var("CI").as_deref() != Ok("true") || cfg!(not(debug_assertions)),
            "nm (binutils) is missing"
        );
        eprintln!("skipped: no symbol table to read (nm missing, or a stripped binary)");
        return;
    };
    let symbols: Vec<String> = String::from_utf8_lossy(&nm.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().last().map(str::to_owned))
        .collect();
    let exact: HashSet<&str> = symbols.iter().map(String::as_str).collect();
    let loose: HashSet<String> = symbols.iter().map(|s| unhashed(s)).collect();

    let report = |what: &str, names: &[&str], missing: &[&str], allowed: f64| {
        let share = missing.len() as f64 / names.len().max(1) as f64;
        eprintln!(
            "{what}: {} of {} missing ({:.1} %)",
            missing.len(),
            names.len(),
            share * 100.0
        );
        assert!(
            share <= allowed,
            "{what}: {} of the {} functions in {} are not in the binary (more than {:.0} %), \
             e.g. {:?}. Regenerate the list: python3 scripts/link-order.py",
            missing.len(),
            names.len(),
            list_path.display(),
            allowed * 100.0,
            &missing[..missing.len().min(10)]
        );
    };
    let missing: Vec<&str> = listed
        .iter()
        .copied()
        .filter(|name| !loose.contains(&unhashed(name)))
        .collect();
    report("by name", &listed, &missing, MISSING);

    let std_own: Vec<&str> = listed
        .iter()
        .copied()
        .filter(|name| name.starts_with("_RNv") && !name.contains('.'))
        .collect();
    let missing: Vec<&str> = std_own
        .iter()
        .copied()
        .filter(|name| !exact.contains(name))
        .collect();
    report(
        "the standard library's, exactly",
        &std_own,
        &missing,
        MISSING_STD,
    );
}
