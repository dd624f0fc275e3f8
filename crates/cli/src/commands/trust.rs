//! `troupe trust [--yes|--revoke]`: whether this folder is trusted and what it would run or
//! loosen; `--yes` trusts it as it is now (for scripts that then run `-p` under
//! `TROUPE_REQUIRE_TRUST=1`), `--revoke` forgets the answer.

use crate::args::TrustArgs;
use crate::render::sanitize::outln;
use crate::trust::{definitions, Stored, TrustStore};
use anyhow::{Context, Result};

/// Runs `troupe trust`; returns the exit code.
pub fn run(args: &TrustArgs) -> Result<i32> {
    let workspace = crate::workspace::root(args.cwd.as_deref())?;
    let workspace = workspace
        .canonicalize()
        .with_context(|| format!("workspace {} is not accessible", workspace.display()))?;
    let loaded = crate::settings::load(&workspace, None)?;
    let defs = definitions(&workspace, &loaded, false);
    let store = TrustStore::open()
        .context("no home directory (HOME, XDG_CONFIG_HOME) to keep the trust file in")?;
    if args.yes {
        store.record(&workspace, true, &defs.hash)?;
        outln!(
            "trusted {} (remembered in {})",
            workspace.display(),
            store.path().display()
        );
    } else if args.revoke {
        let had = store.forget(&workspace)?;
        outln!(
            "{} {}: the next start asks again",
            if had {
                "forgot the answer for"
            } else {
                "no answer was remembered for"
            },
            workspace.display()
        );
        return Ok(0);
    }
    let status = match store.lookup(&workspace)? {
        _ if defs.is_empty() => "nothing to trust (it defines nothing troupe would run)",
        Stored::Answer {
            trusted: true,
            hash,
        } if hash == defs.hash => "trusted",
        Stored::Answer {
            trusted: false,
            hash,
        } if hash == defs.hash => "not trusted (answered no)",
        Stored::Answer { .. } => "not trusted: what it defines changed since the answer",
        Stored::Unknown => "not trusted: never answered",
    };
    outln!("{}: {status}", workspace.display());
    outln!("trust file: {}", store.path().display());
    if !defs.is_empty() {
        outln!("It would run or apply:\n{}", defs.listing());
    }
    Ok(0)
}
