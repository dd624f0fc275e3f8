//! docs/reference/settings.md, rendered from the tables of `claude_keys` and the schema's key
//! names: which of Claude Code's settings troupe honours, ignores or does not honour yet.

use crate::claude_keys::{
    schema, Gap, HONOURED, MODES, TROUPE_KEYS, TROUPE_SANDBOX_KEYS, UNHONOURED,
};
use std::fmt::Write;

/// The page. `fires` says which hook events troupe fires, `runs` which hook types it runs
/// (the hooks crate knows; this crate does not depend on it).
pub fn markdown(fires: &dyn Fn(&str) -> bool, runs: &dyn Fn(&str) -> bool) -> String {
    let schema = schema();
    let mut page = String::from(
        "# Claude Code settings in troupe\n\n\
         Generated from `crates/settings/src/claude_keys.rs` and the key names of Claude Code's\n\
         settings schema (`crates/settings/schema/`); do not edit by hand. Regenerate with\n\
         `TROUPE_REGENERATE_DOCS=1 cargo test -p troupe-cli --bin troupe reference`.\n\n\
         Every key below loads. A key troupe ignores or does not honour yet is one warning when a\n\
         settings file sets it (on stderr with `-p`, above the REPL's first prompt, and in\n\
         `troupe doctor`); a key that is neither Claude Code's nor troupe's is a warning naming\n\
         the file and the nearest known key. Only a file that is not JSON, or a key of the wrong\n\
         type, stops troupe.\n",
    );
    section(&mut page, "Top-level keys", "", &schema.keys);
    section(
        &mut page,
        "`permissions`",
        "permissions.",
        &schema.permissions,
    );
    page.push_str("\n### `permissions.defaultMode`\n\n| Mode | In troupe |\n|---|---|\n");
    for mode in &schema.default_mode {
        let meaning = MODES.iter().find(|(m, _)| m == mode).map_or(
            "not a troupe mode: a warning, and `default` applies",
            |(_, what)| what,
        );
        let _ = writeln!(page, "| `{mode}` | {meaning} |");
    }
    section(&mut page, "`sandbox`", "sandbox.", &schema.sandbox);
    let _ = writeln!(
        page,
        "\ntroupe's own spelling is also accepted: `\"sandbox\": \"auto\"|\"off\"` or `{{{}}}` with `network` one of `\"inet\"`, `\"allow\"`, `\"deny\"`.",
        TROUPE_SANDBOX_KEYS.iter().map(|k| format!("\"{k}\"")).collect::<Vec<_>>().join(", ")
    );
    page.push_str("\n## Hook events\n\n| Event | In troupe |\n|---|---|\n");
    for event in &schema.hooks {
        let what = match fires(event) {
            true => "fired",
            false => "not fired yet: its hooks never run (a warning says so)",
        };
        let _ = writeln!(page, "| `{event}` | {what} |");
    }
    page.push_str("\n## Hook types\n\n| Type | In troupe |\n|---|---|\n");
    for kind in &schema.hook_types {
        let what = match runs(kind) {
            true => "run",
            false => "loads; not run yet: skipped with a warning naming the type",
        };
        let _ = writeln!(page, "| `{kind}` | {what} |");
    }
    page.push_str("\n## troupe's own keys\n\n");
    let own: Vec<String> = TROUPE_KEYS.iter().map(|k| format!("`{k}`")).collect();
    let _ = writeln!(page, "{}.", own.join(", "));
    page
}

fn section(page: &mut String, title: &str, prefix: &str, keys: &[String]) {
    let _ = write!(
        page,
        "\n## {title}\n\n| Key | In troupe | Note |\n|---|---|---|\n"
    );
    for key in keys {
        let dotted = format!("{prefix}{key}");
        let (status, note) = match HONOURED.iter().find(|(k, _)| *k == dotted) {
            Some((_, how)) => ("honoured", *how),
            None => match UNHONOURED.iter().find(|u| u.key == dotted) {
                Some(u) if u.gap == Gap::Ignored => ("ignored", u.why),
                Some(u) => ("not yet", u.why),
                None => ("**unlisted**", ""),
            },
        };
        let _ = writeln!(
            page,
            "| `{key}` | {status} | {} |",
            note.replace('|', "\\|")
        );
    }
}
