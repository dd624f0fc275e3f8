//! git: the subcommands and options that only read, and the options and subcommands through which
//! git runs other programs (`-c core.pager=…`, `rebase --exec`, `bisect run`…).

use super::options::{self, Order, Spec};
use super::wrappers::{Inner, Peel};
use super::{Origin, UnknownReason, Word, WordKind};

/// Global options that take no value and change nothing about what runs.
#[rustfmt::skip]
const GLOBAL_FLAGS: &[&str] = &[
    "--no-pager", "-P", "--no-optional-locks", "--literal-pathspecs", "--glob-pathspecs",
    "--noglob-pathspecs", "--icase-pathspecs", "--no-replace-objects", "--no-lazy-fetch",
    "--no-advice",
];

/// Global options that take a value (`-C dir`, `--git-dir=…`).
#[rustfmt::skip]
const GLOBAL_VALUED: &[&str] = &[
    "-C", "-c", "--git-dir", "--work-tree", "--namespace", "--super-prefix", "--config-env",
    "--exec-path", "--attr-source", "--list-cmds",
];

/// `-c` settings that cannot make git run anything.
#[rustfmt::skip]
const SAFE_CONFIG: &[&str] = &[
    "user.name", "user.email", "core.quotepath", "init.defaultbranch", "commit.gpgsign",
    "tag.gpgsign", "push.default", "pull.rebase", "fetch.prune", "diff.renames",
    "protocol.version",
];

/// Setting prefixes that cannot make git run anything.
#[rustfmt::skip]
const SAFE_CONFIG_PREFIXES: &[&str] = &["color.", "advice."];

/// git's global options and its subcommand.
pub(super) struct Invocation<'w> {
    /// Each global option with its value (if it took one).
    pub globals: Vec<(&'w str, Option<&'w Word>)>,
    /// The subcommand and its arguments.
    pub rest: &'w [Word],
}

/// Splits `args` at the subcommand; `None` if a global option is dynamic or lacks its value.
pub(super) fn invocation(args: &[Word]) -> Option<Invocation<'_>> {
    let mut globals = Vec::new();
    let mut i = 0;
    while let Some(word) = args.get(i) {
        if word.kind == WordKind::Dynamic {
            return None;
        }
        let text = word.text.as_str();
        if word.kind != WordKind::Static || !text.starts_with('-') {
            break;
        }
        i += 1;
        let name = text.split_once('=').map_or(text, |(name, _)| name);
        if GLOBAL_VALUED.contains(&name) && !text.contains('=') {
            globals.push((text, Some(args.get(i)?)));
            i += 1;
        } else {
            globals.push((text, None));
        }
    }
    Some(Invocation {
        globals,
        rest: &args[i..],
    })
}

/// What `git ARGS` runs besides git itself.
pub(super) fn runs(args: &[Word]) -> Peel {
    let Some(call) = invocation(args) else {
        return unknown("a global option");
    };
    for (option, value) in &call.globals {
        let name = option.split_once('=').map_or(*option, |(name, _)| name);
        match name {
            "-c" => {
                let setting = value.map_or("", |v| v.text.as_str());
                let key = setting
                    .split_once('=')
                    .map_or(setting, |(k, _)| k)
                    .to_ascii_lowercase();
                let safe = value.is_some_and(|v| v.kind == WordKind::Static)
                    && (SAFE_CONFIG.contains(&key.as_str())
                        || SAFE_CONFIG_PREFIXES.iter().any(|p| key.starts_with(p)));
                if !safe {
                    return unknown(&format!("-c {setting}"));
                }
            }
            "--config-env" => return unknown(option),
            "--exec-path" if option.contains('=') => return unknown(option),
            _ => {}
        }
    }
    let Some((sub, rest)) = call.rest.split_first() else {
        return Peel::NotWrapper;
    };
    match sub.text.as_str() {
        "rebase" => exec_option(rest, "rebase", &["-x", "--exec"]),
        "difftool" | "mergetool" => exec_option(rest, &sub.text, &["-x", "--extcmd"]),
        "submodule" => match rest.iter().position(|w| w.text == "foreach") {
            Some(at) => {
                let words: Vec<&Word> = rest[at + 1..]
                    .iter()
                    .skip_while(|w| w.text.starts_with('-'))
                    .collect();
                if words.iter().any(|w| w.kind != WordKind::Static) {
                    return unknown("submodule foreach");
                }
                let text: Vec<&str> = words.iter().map(|w| w.text.as_str()).collect();
                Peel::Script(text.join(" "))
            }
            None => Peel::NotWrapper,
        },
        "bisect" if rest.first().is_some_and(|w| w.text == "run") && rest.len() > 1 => {
            Peel::Runs(vec![Inner {
                assignments: Vec::new(),
                words: rest[1..].to_vec(),
                origin: Origin::Wrapper,
            }])
        }
        "filter-branch" => unknown("filter-branch"),
        _ => Peel::NotWrapper,
    }
}

fn unknown(option: &str) -> Peel {
    Peel::Unknown(UnknownReason::GitConfig(option.to_string()))
}

/// `git rebase -x CMD` and the like: each value is a script.
fn exec_option(rest: &[Word], sub: &str, names: &[&str]) -> Peel {
    let mut scripts = Vec::new();
    let mut i = 0;
    while let Some(word) = rest.get(i) {
        i += 1;
        let text = word.text.as_str();
        // `-ix CMD` and `-xCMD`: the short form inside a cluster.
        let in_cluster = (!text.starts_with("--") && text.starts_with('-'))
            .then(|| text[1..].split_once('x'))
            .flatten();
        let value = if names.contains(&text) {
            i += 1;
            rest.get(i - 1)
        } else if let Some((_, attached)) = in_cluster {
            if attached.is_empty() {
                i += 1;
                rest.get(i - 1)
            } else {
                scripts.push(attached.to_string());
                continue;
            }
        } else if let Some(value) = names
            .iter()
            .find_map(|n| text.strip_prefix(&format!("{n}=")))
        {
            scripts.push(value.to_string());
            continue;
        } else if word.kind == WordKind::Dynamic {
            return unknown(&format!("{sub} {text}"));
        } else {
            continue;
        };
        match value {
            Some(value) if value.kind == WordKind::Static => scripts.push(value.text.clone()),
            _ => return unknown(&format!("{sub} {text}")),
        }
    }
    match scripts.is_empty() {
        true => Peel::NotWrapper,
        false => Peel::Script(scripts.join("\n")),
    }
}

/// Which operands a read-only subcommand may have.
#[derive(Clone, Copy)]
enum Operands {
    /// Revisions, paths, patterns: anything.
    Any,
    /// Only with `-l`/`--list` (for `branch` and `tag`, an operand otherwise creates one).
    ListOnly,
}

/// Whether `git ARGS` only reads.
pub(super) fn is_read_only(args: &[Word]) -> bool {
    let Some(call) = invocation(args) else {
        return false;
    };
    let globals_read = call.globals.iter().all(|(option, _)| {
        GLOBAL_FLAGS.contains(option) || *option == "-C" || *option == "--version"
    });
    if !globals_read {
        return false;
    }
    let Some((sub, rest)) = call.rest.split_first() else {
        // `git --version` alone reads; `git` alone prints help, which nobody asked for.
        return call.globals.iter().any(|(o, _)| *o == "--version");
    };
    if sub.kind != WordKind::Static {
        return false;
    }
    let (spec, operands) = match sub.text.as_str() {
        "status" => (&STATUS, Operands::Any),
        "diff" | "log" | "show" | "whatchanged" | "diff-tree" | "diff-index" | "diff-files" => {
            (&LOG, Operands::Any)
        }
        "branch" => (&BRANCH, Operands::ListOnly),
        "tag" => (&TAG, Operands::ListOnly),
        "grep" => (&GREP, Operands::Any),
        "cat-file" => (&CAT_FILE, Operands::Any),
        "rev-parse" | "ls-files" | "ls-tree" | "rev-list" | "show-ref" | "merge-base"
        | "count-objects" | "for-each-ref" | "check-ignore" | "check-attr" | "name-rev"
        | "shortlog" | "blame" | "annotate" | "describe" | "cherry" | "version" => return true,
        // `git stash` alone stashes; `git reflog` alone shows.
        "stash" => return !rest.is_empty() && listing(rest, &["list", "show"]),
        "reflog" => return listing(rest, &["show"]),
        "remote" => return remote(rest),
        "worktree" => {
            return rest.first().is_some_and(|w| w.text == "list")
                && options::parse(&WORKTREE_LIST, &rest[1..], Order::Permute)
                    .is_ok_and(|p| p.operands.is_empty())
        }
        "config" => return config(rest),
        _ => return false,
    };
    let Ok(parsed) = options::parse(spec, rest, Order::Permute) else {
        return false;
    };
    match operands {
        Operands::Any => true,
        Operands::ListOnly => parsed.operands.is_empty() || parsed.has(&["-l", "--list"]),
    }
}

/// `git stash list`, `git reflog show …`: the first operand must be one of `subs` (or absent).
fn listing(rest: &[Word], subs: &[&str]) -> bool {
    let args = match rest.first() {
        None => return true,
        Some(first) if first.kind == WordKind::Static && subs.contains(&first.text.as_str()) => {
            &rest[1..]
        }
        Some(_) => return false,
    };
    options::parse(&LOG, args, Order::Permute).is_ok()
}

/// `git remote`, `git remote -v`, `git remote get-url NAME`.
fn remote(rest: &[Word]) -> bool {
    let Ok(parsed) = options::parse(&REMOTE, rest, Order::Permute) else {
        return false;
    };
    match parsed.operands.as_slice() {
        [] => true,
        [sub, _name] => sub.text == "get-url",
        _ => false,
    }
}

/// `git config --get …`, `--list`, or the `git config get|list` form.
fn config(rest: &[Word]) -> bool {
    let Ok(parsed) = options::parse(&CONFIG, rest, Order::Permute) else {
        return false;
    };
    let first = parsed.operands.first().map(|w| w.text.as_str());
    let reads = parsed.has(&[
        "--get",
        "--get-all",
        "--get-regexp",
        "--get-urlmatch",
        "--list",
        "-l",
    ]) || matches!(first, Some("get" | "list"));
    reads && parsed.operands.len() <= 3
}

#[rustfmt::skip]
const STATUS: Spec = Spec {
    short: "sbvzu::",
    long: &[
        "short", "branch", "porcelain?", "long", "verbose", "untracked-files?", "ignored?",
        "ignore-submodules?", "column?", "no-column", "ahead-behind", "no-ahead-behind", "renames",
        "no-renames", "find-renames?", "show-stash", "null",
    ],
};

/// Options of diff, log and show (and the plumbing diffs) that only change what is printed.
/// Left out on purpose: `--output` (writes a file), `--ext-diff` and `--textconv` (run programs
/// from the config), `--show-signature` (runs gpg), `--open-files-in-pager`.
#[rustfmt::skip]
pub(super) const LOG: Spec = Spec {
    short: "pusRabwWzcmtrigEFPD#U:M::C::B::l:S:G:O:I:X::n:L:",
    long: &[
        "patch", "no-patch", "raw", "patch-with-raw", "patch-with-stat", "stat?", "numstat",
        "shortstat", "compact-summary", "dirstat?", "cumulative", "summary", "name-only",
        "name-status", "submodule?", "color?", "no-color", "color-moved?", "no-color-moved",
        "color-moved-ws=", "word-diff?", "word-diff-regex=", "color-words?", "no-renames",
        "rename-empty", "no-rename-empty", "check", "ws-error-highlight=", "full-index", "binary",
        "abbrev?", "break-rewrites?", "find-renames?", "find-copies?", "find-copies-harder",
        "irreversible-delete", "diff-filter=", "find-object=", "pickaxe-all", "pickaxe-regex",
        "skip-to=", "rotate-to=", "relative?", "no-relative", "text", "ignore-cr-at-eol",
        "ignore-space-at-eol", "ignore-space-change", "ignore-all-space", "ignore-blank-lines",
        "ignore-matching-lines=", "inter-hunk-context=", "function-context", "exit-code", "quiet",
        "no-ext-diff", "no-textconv", "ignore-submodules?", "src-prefix=", "dst-prefix=",
        "no-prefix", "default-prefix", "line-prefix=", "ita-invisible-in-index",
        "ita-visible-in-index", "cached", "staged", "merge-base", "minimal", "patience",
        "histogram", "anchored=", "diff-algorithm=", "unified=", "indent-heuristic",
        "no-indent-heuristic", "stat-width=", "stat-name-width=", "stat-count=",
        "stat-graph-width=", "no-index", "oneline", "max-count=", "skip=", "since=", "after=",
        "until=", "before=", "author=", "committer=", "grep=", "grep-reflog=", "all-match",
        "invert-grep", "regexp-ignore-case", "basic-regexp", "extended-regexp", "fixed-strings",
        "perl-regexp", "merges", "no-merges", "min-parents=", "max-parents=", "no-min-parents",
        "no-max-parents", "first-parent", "exclude-first-parent-only", "not", "all", "branches?",
        "tags?", "remotes?", "glob=", "exclude=", "reflog", "walk-reflogs", "single-worktree",
        "ignore-missing", "cherry-mark", "cherry-pick", "left-only", "right-only", "cherry",
        "boundary", "simplify-by-decoration", "full-history", "dense", "sparse", "simplify-merges",
        "ancestry-path?", "show-pulls", "topo-order", "date-order", "author-date-order", "reverse",
        "no-walk?", "do-walk", "pretty?", "format=", "abbrev-commit", "no-abbrev-commit",
        "encoding=", "expand-tabs?", "no-expand-tabs", "notes?", "no-notes", "show-notes?",
        "relative-date", "date=", "parents", "children", "left-right", "graph", "decorate?",
        "no-decorate", "decorate-refs=", "decorate-refs-exclude=", "source", "mailmap",
        "no-mailmap", "use-mailmap", "no-use-mailmap", "full-diff", "log-size", "follow",
        "no-follow", "diff-merges=", "no-diff-merges", "combined-all-paths", "cc", "dd", "root",
        "no-commit-id", "stdin",
    ],
};

#[rustfmt::skip]
const BRANCH: Spec = Spec {
    short: "arvli",
    long: &[
        "all", "remotes", "verbose", "list", "show-current", "color?", "no-color", "contains=",
        "no-contains=", "merged=", "no-merged=", "sort=", "format=", "points-at=", "column?",
        "no-column", "abbrev?", "no-abbrev", "ignore-case", "omit-empty",
    ],
};

#[rustfmt::skip]
const TAG: Spec = Spec {
    short: "ln::i",
    long: &[
        "list", "contains=", "no-contains=", "merged=", "no-merged=", "points-at=", "sort=",
        "format=", "column?", "no-column", "ignore-case", "color?", "omit-empty",
    ],
};

/// `git grep` without `-O`/`--open-files-in-pager` (runs a pager program) or `--textconv`.
#[rustfmt::skip]
pub(super) const GREP: Spec = Spec {
    short: "aiIwvhHEGFPnlLcopWzqr#A:B:C:e:f:m:",
    long: &[
        "cached", "untracked", "no-index", "no-exclude-standard", "exclude-standard",
        "recurse-submodules", "text", "no-textconv", "ignore-case", "max-depth=", "recursive",
        "no-recursive", "word-regexp", "invert-match", "full-name", "extended-regexp",
        "basic-regexp", "perl-regexp", "fixed-strings", "line-number", "column",
        "files-with-matches", "name-only", "files-without-match", "null", "only-matching", "count",
        "color?", "no-color", "break", "heading", "show-function", "context=", "after-context=",
        "before-context=", "function-context", "max-count=", "threads=", "and", "or", "not",
        "all-match", "quiet",
    ],
};

/// `git cat-file` without `--textconv`/`--filters` (which run filters from the config).
#[rustfmt::skip]
pub(super) const CAT_FILE: Spec = Spec {
    short: "tspe",
    long: &[
        "batch?", "batch-check?", "batch-command?", "batch-all-objects", "buffer",
        "follow-symlinks", "unordered", "allow-unknown-type", "use-mailmap", "no-use-mailmap",
        "mailmap", "no-mailmap", "Z",
    ],
};

const REMOTE: Spec = Spec {
    short: "v",
    long: &["verbose", "push", "all"],
};

const WORKTREE_LIST: Spec = Spec {
    short: "vz",
    long: &["porcelain", "verbose", "expire="],
};

/// `git config` reading options (no `-e`/`--edit`, which starts an editor).
#[rustfmt::skip]
const CONFIG: Spec = Spec {
    short: "lzf:",
    long: &[
        "get", "get-all", "get-regexp", "get-urlmatch", "list", "show-origin", "show-scope",
        "null", "name-only", "local", "global", "system", "worktree", "file=", "blob=", "type=",
        "bool", "int", "bool-or-int", "path", "expiry-date", "default=", "includes", "no-includes",
        "fixed-value", "all", "regexp", "value=", "url=",
    ],
};
