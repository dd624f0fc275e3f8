//! `Read` deny rules against the paths a shell command names.
//!
//! `Read(./secrets/**)` refuses `read_file secrets/key`; a bash call that names a covered path
//! in any word or redirection (`cat secrets/key`, `head ./secrets/key`, `cat < secrets/key`,
//! `git show HEAD:secrets/key`, `dd if=secrets/key`) is refused as well. A word is checked as
//! written, after its first `=` (an option's value) and after its first `:` (git's `<rev>:<path>`),
//! each relative to the workspace root and, symlinks followed, where it really leads. A glob word
//! (`sec*/key`) is expanded against the workspace as the shell would, dot-files included; a
//! word the shell expands at run time in ways no one can know (`"$f"`) is left to the kernel,
//! whose read-only sandbox leaves denied paths out.

use super::path_glob::CallPath;
use super::Rule;
use globset::GlobBuilder;
use std::path::{Path, PathBuf};
use troupe_tools::shell::{Analysis, WordKind};

/// At most this many paths are tried for one glob word; a glob that matches more counts as
/// naming a denied path if any rule could be reached, so it fails closed.
const GLOB_LIMIT: usize = 2_000;

/// The path-specific `Read` deny rules among `deny`.
pub(super) fn read_rules(deny: &[Rule]) -> Vec<&Rule> {
    deny.iter()
        .filter(|rule| rule.applies_to("Read") && !rule.is_tool_wide())
        .collect()
}

/// The first rule of `rules` covering a path the commands of `analysis` name, with why (the
/// path as the command wrote it). A line the analysis could not follow might read anything, so
/// it is refused too, as a `Bash` deny rule refuses it.
pub(super) fn denied<'r>(
    rules: &[&'r Rule],
    analysis: &Analysis,
    root: &Path,
) -> Option<(&'r Rule, String)> {
    let first = rules.first()?;
    if !analysis.is_understood() {
        return Some((
            first,
            format!(
                "the command could not be analysed ({}) and might read what the rule keeps from \
                 being read",
                analysis.unknown_reasons()
            ),
        ));
    }
    let names =
        |text: &str| format!("the command names `{text}`, which the rule keeps from being read");
    for command in &analysis.commands {
        let words = command.assignments.iter().chain(&command.words);
        let words = words.map(|w| (w.text.clone(), w.kind));
        // A redirection is one token, `< target`: its target is what it names.
        let targets = command
            .redirections
            .iter()
            .filter_map(|r| r.text.split_once(' ').map(|(_, t)| (unquote(t), r.kind)));
        for (text, kind) in words.chain(targets) {
            let paths = match kind {
                WordKind::Static => candidates(&text),
                WordKind::DynamicOperand | WordKind::Dynamic => match is_plain_glob(&text) {
                    true => match expand(&text, root) {
                        Some(found) => found,
                        // Too many to try: the glob may reach anything below it.
                        None => {
                            let why = format!(
                                "the glob `{text}` matches more paths than can be checked, and might \
                                 name what the rule keeps from being read"
                            );
                            return Some((first, why));
                        }
                    },
                    false => continue,
                },
            };
            for path in paths {
                if let Some(rule) = covering(rules, &path, root) {
                    return Some((rule, names(&text)));
                }
            }
        }
    }
    None
}

/// A redirection target as the analysis rendered it: single-quoted when it needed quoting.
fn unquote(target: &str) -> String {
    match target.strip_prefix('\'').and_then(|t| t.strip_suffix('\'')) {
        Some(inner) => inner.replace("'\\''", "'"),
        None => target.to_string(),
    }
}

/// The rule covering `raw`, named or resolved.
fn covering<'r>(rules: &[&'r Rule], raw: &str, root: &Path) -> Option<&'r Rule> {
    if raw.is_empty() {
        return None;
    }
    let named = CallPath::resolve(raw, root);
    let real = CallPath::resolve_real(raw, root);
    rules.iter().copied().find(|rule| {
        rule.matches_path(&named) || real.as_ref().is_some_and(|real| rule.matches_path(real))
    })
}

/// The paths a static word may name: itself, an option's value, a git `<rev>:<path>`'s path,
/// an `@file` argument.
fn candidates(text: &str) -> Vec<String> {
    let mut out = vec![text.to_string()];
    if let Some((_, value)) = text.split_once('=') {
        out.push(value.to_string());
    }
    if let Some((_, path)) = text.split_once(':') {
        out.push(path.to_string());
    }
    if let Some(file) = text.strip_prefix('@') {
        out.push(file.to_string());
    }
    out
}

/// Whether a word's only run-time expansion is pathname expansion (`*`, `?`, `[…]`, `{a,b}`).
fn is_plain_glob(text: &str) -> bool {
    text.contains(['*', '?', '[', '{']) && !text.contains(['$', '`', '\\', '"', '\'', '~'])
}

/// What a glob word expands to in the workspace (dot-files included, since a denied dot-file
/// matters more than the shell's default), with the same candidates as a static word; `None`
/// when it matches more than [`GLOB_LIMIT`] paths.
fn expand(text: &str, root: &Path) -> Option<Vec<String>> {
    let mut found = Vec::new();
    for alternative in braces(text) {
        for candidate in candidates(&alternative) {
            let (base, rest) = match candidate.strip_prefix('/') {
                Some(rest) => (PathBuf::from("/"), rest.to_string()),
                None => (root.to_path_buf(), candidate.clone()),
            };
            let parts: Vec<&str> = rest.split('/').filter(|p| !p.is_empty()).collect();
            let mut level = vec![base];
            for part in parts {
                let mut next = Vec::new();
                for dir in &level {
                    if !part.contains(['*', '?', '[']) {
                        next.push(dir.join(part));
                        continue;
                    }
                    let Ok(glob) = GlobBuilder::new(part).literal_separator(true).build() else {
                        next.push(dir.join(part));
                        continue;
                    };
                    let matcher = glob.compile_matcher();
                    let Ok(entries) = std::fs::read_dir(dir) else {
                        continue;
                    };
                    for entry in entries.flatten() {
                        if matcher.is_match(entry.file_name()) {
                            next.push(entry.path());
                        }
                    }
                }
                if next.len() > GLOB_LIMIT {
                    return None;
                }
                level = next;
            }
            found.extend(level.into_iter().map(|p| p.to_string_lossy().into_owned()));
            // The word as written too: an unmatched glob stays itself.
            found.push(candidate);
            if found.len() > GLOB_LIMIT {
                return None;
            }
        }
    }
    Some(found)
}

/// Brace expansion (`{a,b}c` → `ac`, `bc`), as the shell does before globbing; nested and
/// repeated groups expand in turn.
fn braces(text: &str) -> Vec<String> {
    let Some(open) = text.find('{') else {
        return vec![text.to_string()];
    };
    let mut depth = 0;
    let mut close = None;
    let mut commas = Vec::new();
    for (i, c) in text[open..].char_indices() {
        match c {
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    close = Some(open + i);
                    break;
                }
            }
            ',' if depth == 1 => commas.push(open + i),
            _ => {}
        }
    }
    let Some(close) = close else {
        return vec![text.to_string()];
    };
    if commas.is_empty() {
        return vec![text.to_string()];
    }
    let (head, tail) = (&text[..open], &text[close + 1..]);
    let mut cuts = vec![open];
    cuts.extend(&commas);
    cuts.push(close);
    let mut out = Vec::new();
    for pair in cuts.windows(2) {
        let middle = &text[pair[0] + 1..pair[1]];
        out.extend(braces(&format!("{head}{middle}{tail}")));
        if out.len() > GLOB_LIMIT {
            break;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn braces_expand_like_the_shell() {
        assert_eq!(braces("a{b,c}d"), vec!["abd", "acd"]);
        assert_eq!(braces("{x,y}/{1,2}"), vec!["x/1", "x/2", "y/1", "y/2"]);
        assert_eq!(braces("plain"), vec!["plain"]);
        assert_eq!(braces("{single}"), vec!["{single}"]);
    }

    #[test]
    fn words_name_paths_in_values_and_revisions() {
        assert_eq!(
            candidates("HEAD:secrets/key"),
            vec!["HEAD:secrets/key", "secrets/key"]
        );
        assert_eq!(
            candidates("if=secrets/k"),
            vec!["if=secrets/k", "secrets/k"]
        );
    }
}
