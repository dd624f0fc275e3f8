//! Claude Code's model aliases (`sonnet`, `opus`, `haiku`, `opusplan`, `default`, and the
//! `[1m]` suffix) and the full model ids they stand for: one table, overridden per family by
//! Claude Code's variables (`ANTHROPIC_DEFAULT_{OPUS,SONNET,HAIKU}_MODEL`, and the older
//! `ANTHROPIC_SMALL_FAST_MODEL` for haiku).
//!
//! A name ending in `[1m]` asks for the 1M-token context window: the suffix stays on the name
//! troupe carries (as Claude Code shows it), the window is 1,000,000 tokens, and the Anthropic
//! client sends the name without it and the [`CONTEXT_1M_BETA`] header.

/// Default Anthropic model.
pub const DEFAULT_ANTHROPIC_MODEL: &str = "claude-sonnet-4-5";

/// The suffix asking for the 1M-token context window (`sonnet[1m]`).
pub const CONTEXT_1M_SUFFIX: &str = "[1m]";

/// The beta header value the 1M-token window needs, as Claude Code sends it.
pub const CONTEXT_1M_BETA: &str = "context-1m-2025-08-07";

/// The context window a `[1m]` name has.
pub const CONTEXT_1M_WINDOW: u64 = 1_000_000;

/// One alias: its name, the full id it stands for, and the variables that override that id
/// (the first set one wins).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Alias {
    /// What a person types (`sonnet`).
    pub name: &'static str,
    /// The full model id sent when no variable overrides it.
    pub id: &'static str,
    /// Variables naming another id for it, in order of precedence.
    pub overrides: &'static [&'static str],
}

/// Claude Code's variable for the model `opus` (and `opusplan`) stands for.
pub const OPUS_VAR: &str = "ANTHROPIC_DEFAULT_OPUS_MODEL";
/// Claude Code's variable for the model `sonnet` (and `default`) stands for.
pub const SONNET_VAR: &str = "ANTHROPIC_DEFAULT_SONNET_MODEL";
/// Claude Code's variable for the model `haiku` stands for.
pub const HAIKU_VAR: &str = "ANTHROPIC_DEFAULT_HAIKU_MODEL";
/// The older name of [`HAIKU_VAR`], still read after it.
pub const SMALL_FAST_VAR: &str = "ANTHROPIC_SMALL_FAST_MODEL";

/// Every alias troupe resolves. `opusplan` is Claude Code's "opus while planning, sonnet
/// otherwise"; troupe keeps one model per agent, so it is opus throughout. `default` is the
/// model troupe uses when none is named (sonnet).
pub const ALIASES: &[Alias] = &[
    Alias {
        name: "sonnet",
        id: DEFAULT_ANTHROPIC_MODEL,
        overrides: &[SONNET_VAR],
    },
    Alias {
        name: "opus",
        id: "claude-opus-4-1",
        overrides: &[OPUS_VAR],
    },
    Alias {
        name: "haiku",
        id: "claude-haiku-4-5",
        overrides: &[HAIKU_VAR, SMALL_FAST_VAR],
    },
    Alias {
        name: "opusplan",
        id: "claude-opus-4-1",
        overrides: &[OPUS_VAR],
    },
    Alias {
        name: "default",
        id: DEFAULT_ANTHROPIC_MODEL,
        overrides: &[SONNET_VAR],
    },
];

/// The alias `name` is (case and surrounding blanks aside, `[1m]` suffix allowed), if any.
pub fn alias_of(name: &str) -> Option<&'static Alias> {
    let (base, _) = split_1m(name.trim());
    ALIASES
        .iter()
        .find(|alias| alias.name.eq_ignore_ascii_case(base.trim()))
}

/// The full model id `name` stands for: an alias becomes its id (or its override variable's
/// value, looked up by `env`), keeping a `[1m]` suffix; any other name is returned trimmed,
/// unchanged.
pub fn resolve(name: &str, env: &impl Fn(&str) -> Option<String>) -> String {
    let name = name.trim();
    let Some(alias) = alias_of(name) else {
        return name.to_string();
    };
    let (_, one_m) = split_1m(name);
    let id = alias
        .overrides
        .iter()
        .find_map(|var| {
            env(var)
                .map(|v| v.trim().to_string())
                .filter(|v| !v.is_empty())
        })
        .unwrap_or_else(|| alias.id.to_string());
    // An override may carry the suffix itself; it is never doubled.
    if one_m && !split_1m(&id).1 {
        format!("{id}{CONTEXT_1M_SUFFIX}")
    } else {
        id
    }
}

/// `name` without a trailing `[1m]` (any case), and whether it had one.
pub fn split_1m(name: &str) -> (&str, bool) {
    let cut = name.len().checked_sub(CONTEXT_1M_SUFFIX.len());
    match cut {
        Some(cut)
            if name.is_char_boundary(cut)
                && name[cut..].eq_ignore_ascii_case(CONTEXT_1M_SUFFIX) =>
        {
            (&name[..cut], true)
        }
        _ => (name, false),
    }
}

/// The model id as the provider's API takes it: without the `[1m]` suffix.
pub fn wire_name(name: &str) -> &str {
    split_1m(name).0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env_of(pairs: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |key| {
            pairs
                .iter()
                .find(|(k, _)| *k == key)
                .map(|(_, v)| v.to_string())
        }
    }

    #[test]
    fn aliases_become_full_ids_and_other_names_stay() {
        let none = env_of(&[]);
        assert_eq!(resolve("sonnet", &none), "claude-sonnet-4-5");
        assert_eq!(resolve(" Opus ", &none), "claude-opus-4-1");
        assert_eq!(resolve("haiku", &none), "claude-haiku-4-5");
        assert_eq!(resolve("opusplan", &none), "claude-opus-4-1");
        assert_eq!(resolve("default", &none), "claude-sonnet-4-5");
        assert_eq!(resolve("sonnet[1m]", &none), "claude-sonnet-4-5[1m]");
        assert_eq!(resolve("claude-opus-4-1", &none), "claude-opus-4-1");
        assert_eq!(resolve("qwen2.5-coder:7b", &none), "qwen2.5-coder:7b");
        assert_eq!(resolve("sonnet-ish", &none), "sonnet-ish");
    }

    #[test]
    fn the_variables_override_each_family() {
        let env = env_of(&[
            (OPUS_VAR, "claude-opus-4-5"),
            (SONNET_VAR, "my-sonnet"),
            (SMALL_FAST_VAR, "old-haiku"),
        ]);
        assert_eq!(resolve("opus", &env), "claude-opus-4-5");
        assert_eq!(resolve("opusplan", &env), "claude-opus-4-5");
        assert_eq!(resolve("sonnet[1m]", &env), "my-sonnet[1m]");
        assert_eq!(resolve("default", &env), "my-sonnet");
        // The older variable is read when the newer one is not set.
        assert_eq!(resolve("haiku", &env), "old-haiku");
        let both = env_of(&[(HAIKU_VAR, "new-haiku"), (SMALL_FAST_VAR, "old-haiku")]);
        assert_eq!(resolve("haiku", &both), "new-haiku");
        // An override carrying the suffix keeps one.
        let suffixed = env_of(&[(SONNET_VAR, "claude-sonnet-4-5[1m]")]);
        assert_eq!(resolve("sonnet[1m]", &suffixed), "claude-sonnet-4-5[1m]");
    }

    #[test]
    fn the_1m_suffix_is_split_off_for_the_wire() {
        assert_eq!(
            split_1m("claude-sonnet-4-5[1m]"),
            ("claude-sonnet-4-5", true)
        );
        assert_eq!(
            split_1m("claude-sonnet-4-5[1M]"),
            ("claude-sonnet-4-5", true)
        );
        assert_eq!(split_1m("claude-sonnet-4-5"), ("claude-sonnet-4-5", false));
        assert_eq!(split_1m("[1m]"), ("", true));
        assert_eq!(split_1m("é"), ("é", false));
        assert_eq!(wire_name("x[1m]"), "x");
        assert!(alias_of("SONNET[1m]").is_some());
        assert!(alias_of("claude-sonnet-4-5").is_none());
    }
}
