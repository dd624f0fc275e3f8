//! `claudeMdExcludes`: glob patterns of memory files not to read, matched as Claude Code
//! matches them — against the file's absolute path (as found, and after symlinks are
//! resolved), `*` within one path component and `**` across them.

use globset::{GlobBuilder, GlobSet, GlobSetBuilder};
use std::path::Path;
use troupe_settings::Settings;

/// The settings key.
pub const KEY: &str = "claudeMdExcludes";

/// The memory files the settings exclude.
#[derive(Debug, Clone, Default)]
pub struct Excludes {
    set: Option<GlobSet>,
}

impl Excludes {
    /// The patterns of `settings`' `claudeMdExcludes`; one that is not a glob is skipped with
    /// a warning in the log.
    pub fn of(settings: &Settings) -> Excludes {
        let patterns: Vec<&str> = settings
            .other
            .get(KEY)
            .and_then(serde_json::Value::as_array)
            .map(|list| list.iter().filter_map(serde_json::Value::as_str).collect())
            .unwrap_or_default();
        Excludes::new(&patterns)
    }

    /// These patterns.
    pub fn new(patterns: &[&str]) -> Excludes {
        if patterns.is_empty() {
            return Excludes::default();
        }
        let mut builder = GlobSetBuilder::new();
        for pattern in patterns {
            match GlobBuilder::new(pattern).literal_separator(true).build() {
                Ok(glob) => {
                    builder.add(glob);
                }
                Err(e) => tracing::warn!("settings {KEY}: {pattern:?} is not a glob: {e}"),
            }
        }
        Excludes {
            set: builder.build().ok(),
        }
    }

    /// Whether the memory file at `path` (`canonical` after symlinks) is excluded.
    pub fn excludes(&self, path: &Path, canonical: &Path) -> bool {
        self.set
            .as_ref()
            .is_some_and(|set| set.is_match(path) || set.is_match(canonical))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_match_absolute_paths_a_star_within_one_folder() {
        let excludes = Excludes::new(&["**/other-team/CLAUDE.md", "/repo/*.local.md"]);
        let p = Path::new;
        assert!(excludes.excludes(p("/repo/other-team/CLAUDE.md"), p("/x")));
        assert!(excludes.excludes(p("/x"), p("/repo/CLAUDE.local.md")));
        assert!(!excludes.excludes(p("/repo/sub/CLAUDE.local.md"), p("/x")));
        assert!(!excludes.excludes(p("/repo/CLAUDE.md"), p("/repo/CLAUDE.md")));
        assert!(!Excludes::default().excludes(p("/repo/CLAUDE.md"), p("/repo/CLAUDE.md")));
    }
}
