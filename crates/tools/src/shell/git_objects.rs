//! git commands that may print what files hold from git's own store — commits, blobs, the
//! index — rather than from the working tree, where the sandbox can hide a file.
//!
//! [`reads_objects`] says why a command may, or `None` when it cannot (it prints names, ids,
//! counts and messages at most, or it only writes). It fails closed: an option the tables here
//! do not know, a word known only at run time, an unknown subcommand (it may be an alias) all
//! count as reading. Names and line counts (`--stat`, `--name-only`, `git status`) are not
//! contents; `git show` of a blob prints it whatever the format, so `git show` passes only for
//! commits spelled so they cannot be anything else (`HEAD~2`, `X^{commit}`).

use super::git::{invocation, CAT_FILE, GREP, LOG};
use super::options::{self, Order, Parsed};
use super::{Command, Origin, Word, WordKind};

/// Options of the log/diff family that print contents, or tell something about them (pickaxe).
#[rustfmt::skip]
const CONTENT: &[&str] = &[
    "-p", "-u", "--patch", "--patch-with-raw", "--patch-with-stat", "-U", "--unified", "-W",
    "--function-context", "--word-diff", "--word-diff-regex", "--color-words", "-c", "--cc",
    "--dd", "-m", "--diff-merges", "-S", "-G", "--find-object", "--pickaxe-all",
    "--pickaxe-regex", "-L", "--check", "-I", "--ignore-matching-lines", "--binary",
];

/// Output formats that print names, ids and counts only (and replace the default patch).
#[rustfmt::skip]
const NAMES_ONLY: &[&str] = &[
    "--stat", "--numstat", "--shortstat", "--name-only", "--name-status", "--raw", "--summary",
    "--dirstat", "-X", "--compact-summary", "-s", "--no-patch", "--quiet",
];

/// Subcommands that print no file contents (names, ids, messages at most) or only write; those
/// that can run the interactive patch selection are checked for it.
#[rustfmt::skip]
const QUIET: &[&str] = &[
    "status", "branch", "tag", "rev-parse", "ls-files", "ls-tree", "ls-remote", "rev-list",
    "show-ref", "merge-base", "count-objects", "for-each-ref", "check-ignore", "check-attr",
    "name-rev", "describe", "cherry", "version", "help", "remote", "worktree", "config", "init",
    "clone", "fetch", "pull", "push", "commit", "add", "rm", "mv", "switch", "checkout",
    "restore", "reset", "merge", "rebase", "cherry-pick", "revert", "clean", "gc", "prune",
    "fsck", "sparse-checkout", "submodule", "maintenance", "repack", "update-index",
    "update-ref", "symbolic-ref", "hash-object", "mktag", "mktree", "read-tree", "write-tree",
    "commit-tree", "var", "shortlog", "bisect", "am", "apply", "show-branch", "verify-commit",
    "verify-tag", "stripspace", "check-ref-format", "interpret-trailers", "mailinfo",
    "mailsplit", "replace", "filter-branch", "notes",
];

/// Subcommands whose interactive hunk selection (`-p`, `-i`) prints the changes.
const PATCH_PROMPTS: &[&str] = &[
    "add", "checkout", "restore", "reset", "commit", "stash", "clean",
];

/// Why `command`, when it runs git, may print file contents from git's store; `None` when it
/// does not run git or cannot.
pub fn reads_objects(command: &Command) -> Option<String> {
    let name = command.program_name()?;
    let mut args: Vec<Word> = match name {
        "git" => command.words[1..].to_vec(),
        // The programs in git's exec path (`git-show`) are its subcommands.
        _ => match name.strip_prefix("git-") {
            Some(sub) if !sub.is_empty() => {
                let mut args = vec![Word::fixed(sub)];
                args.extend_from_slice(&command.words[1..]);
                args
            }
            _ => return None,
        },
    };
    if command.origin == Origin::Xargs {
        args.push(Word {
            text: "(input)".into(),
            kind: WordKind::Dynamic,
        });
    }
    let Some(call) = invocation(&args) else {
        return Some(unknowable("git"));
    };
    let (sub, rest) = call.rest.split_first()?;
    if sub.kind != WordKind::Static {
        return Some(unknowable("git"));
    }
    let sub = sub.text.as_str();
    let why = |what: &str| Some(format!("`git {sub}` {what}"));
    match sub {
        "log" | "whatchanged" => log_family(sub, rest),
        "reflog" => match rest.first().map(|w| w.text.as_str()) {
            Some("show") => log_family(sub, &rest[1..]),
            Some("expire" | "delete" | "exists" | "list") => None,
            _ => log_family(sub, rest),
        },
        "diff" | "diff-tree" | "diff-index" | "diff-files" => {
            let parsed = match parse(sub, rest) {
                Ok(parsed) => parsed,
                Err(why) => return Some(why),
            };
            if let Some(option) = content_option(&parsed) {
                return Some(format!("`git {sub} {option}` prints what files hold"));
            }
            // `git diff` prints patches unless told otherwise; the plumbing diffs print ids.
            match sub == "diff" && !parsed.has(NAMES_ONLY) {
                true => why("prints the changes of files, their lines included"),
                false => None,
            }
        }
        "show" => show(sub, rest, &["HEAD", "@"]),
        "stash" => match rest.first().map(|w| w.text.as_str()) {
            Some("list") => log_family("stash list", &rest[1..]),
            Some("show") => show("stash show", &rest[1..], &["stash", "HEAD", "@"]),
            _ => patch_prompt(sub, rest),
        },
        "grep" => match options::parse(&GREP, rest, Order::Permute) {
            // Without `--no-index` it searches the index and commits (and the index again for a
            // file marked unchanged), not only the files the sandbox can hide.
            Ok(parsed) if parsed.has(&["--no-index"]) => None,
            Ok(_) => why("searches the index and commits, where git keeps every tracked file"),
            Err(error) => why(&format!("with `{}` cannot be judged", error.text())),
        },
        "cat-file" => match options::parse(&CAT_FILE, rest, Order::Permute) {
            Ok(parsed)
                if parsed.has(&["-t", "-s", "-e", "--batch-check"])
                    && !parsed.has(&["-p", "--batch", "--batch-command"])
                    && parsed.operands.len() <= 1 =>
            {
                None
            }
            _ => why("prints objects (blobs are files) from git's store"),
        },
        "blame" | "annotate" => why("prints a file's lines as commits hold them"),
        "archive" | "format-patch" | "bundle" | "fast-export" | "range-diff" | "merge-tree"
        | "difftool" | "unpack-file" | "checkout-index" | "request-pull" | "send-email"
        | "pack-objects" | "upload-pack" | "upload-archive" | "instaweb" => {
            why("copies files out of git's store")
        }
        "config" if rest.iter().any(|w| w.text.starts_with("--blob")) => {
            why("with `--blob` reads a blob from git's store")
        }
        // ref-filter's `%(raw)` prints the object a ref points at, a blob included.
        "for-each-ref" | "branch" | "tag"
            if rest
                .iter()
                .any(|w| w.kind != WordKind::Static || w.text.contains("raw)")) =>
        {
            why("with `%(raw)` in its format prints the objects refs point at")
        }
        "notes" => match rest.first().map(|w| w.text.as_str()) {
            None | Some("list") => None,
            _ => why("prints notes, which may be any blob"),
        },
        _ if PATCH_PROMPTS.contains(&sub) => patch_prompt(sub, rest),
        _ if QUIET.contains(&sub) => None,
        _ => why("is not a subcommand troupe knows, and may be an alias that prints files"),
    }
}

/// What to say of a git command whose words are known only at run time.
fn unknowable(what: &str) -> String {
    format!("`{what}` with words known only when it runs may print what files hold")
}

/// Options read against the log/diff table; an option it does not list fails closed.
fn parse<'w>(sub: &str, rest: &'w [Word]) -> Result<Parsed<'w>, String> {
    options::parse(&LOG, rest, Order::Permute).map_err(|error| {
        format!(
            "`git {sub}` with `{}` cannot be judged, and may print what files hold",
            error.text()
        )
    })
}

/// The first option that prints contents, by name.
fn content_option(parsed: &Parsed<'_>) -> Option<String> {
    parsed
        .options
        .iter()
        .find(|o| CONTENT.contains(&o.name.as_str()))
        .map(|o| o.name.clone())
}

/// log, whatchanged, reflog, stash list: commits and names by default.
fn log_family(sub: &str, rest: &[Word]) -> Option<String> {
    let parsed = match parse(sub, rest) {
        Ok(parsed) => parsed,
        Err(why) => return Some(why),
    };
    content_option(&parsed).map(|option| format!("`git {sub} {option}` prints what files hold"))
}

/// `git show`, `git stash show`: a patch by default, and a blob whole whatever the format, so
/// only a names-only format of commits spelled as commits passes.
fn show(sub: &str, rest: &[Word], heads: &[&str]) -> Option<String> {
    let parsed = match parse(sub, rest) {
        Ok(parsed) => parsed,
        Err(why) => return Some(why),
    };
    if let Some(option) = content_option(&parsed) {
        return Some(format!("`git {sub} {option}` prints what files hold"));
    }
    if !parsed.has(NAMES_ONLY) {
        return Some(format!(
            "`git {sub}` prints the changes of files, their lines included"
        ));
    }
    let word = parsed.operands.iter().find(|w| !is_commit(w, heads))?;
    Some(format!(
        "`git {sub}` prints a blob (a file) whole, and `{}` may name one",
        word.text
    ))
}

/// Whether `word` can only name a commit (or range of commits): `HEAD`, `@`, `stash@{1}`, with
/// `~N`/`^N` after, or anything ending in `^{commit}`.
fn is_commit(word: &Word, heads: &[&str]) -> bool {
    if word.kind != WordKind::Static {
        return false;
    }
    let text = word.text.trim_start_matches('^');
    text.split("...")
        .flat_map(|side| side.split(".."))
        .all(|side| side.is_empty() || is_commit_spelling(side, heads))
}

fn is_commit_spelling(text: &str, heads: &[&str]) -> bool {
    if text.ends_with("^{commit}") && !text.contains(':') {
        return true;
    }
    let Some(head) = heads.iter().find(|h| text.starts_with(**h)) else {
        return text.chars().all(|c| c.is_ascii_digit()) && heads.contains(&"stash");
    };
    let mut rest = &text[head.len()..];
    if let Some(selector) = rest.strip_prefix("@{") {
        let Some((inside, after)) = selector.split_once('}') else {
            return false;
        };
        if inside.is_empty() || !inside.chars().all(|c| c.is_ascii_digit()) {
            return false;
        }
        rest = after;
    }
    rest.chars()
        .all(|c| c == '~' || c == '^' || c.is_ascii_digit())
}

/// `git add -p` and the like print each change to ask about it.
fn patch_prompt(sub: &str, rest: &[Word]) -> Option<String> {
    for word in rest {
        if word.kind == WordKind::Dynamic {
            return Some(unknowable(&format!("git {sub}")));
        }
        let text = word.text.as_str();
        if text == "--" {
            break;
        }
        let prompts = match text.strip_prefix("--") {
            Some(long) => long.starts_with("patch") || long.starts_with("interactive"),
            None => text.starts_with('-') && text[1..].contains(['p', 'i']),
        };
        if prompts && word.kind == WordKind::Static {
            return Some(format!(
                "`git {sub} {text}` prints the changes of files to choose from"
            ));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::super::analyze;
    use super::*;

    /// What the first git command of `line` is said to read.
    fn reads(line: &str) -> Option<String> {
        let analysis = analyze(line);
        assert!(analysis.is_understood(), "{line}");
        analysis.commands.iter().find_map(reads_objects)
    }

    #[test]
    fn contents_from_the_store_are_caught() {
        for line in [
            "git log -p",
            "git log --patch --oneline",
            "git log -U3",
            "git log -S secret",
            "git log -Gkey --oneline",
            "git log -L1,2:src/a",
            "git log --cc",
            "git whatchanged -p",
            "git reflog -p",
            "git reflog show --patch",
            "git show",
            "git show HEAD",
            "git show --stat -p HEAD",
            "git show --stat 1234abcd",
            "git show --name-only main",
            "git show --stat HEAD:src",
            "git grep foo HEAD",
            "git grep --cached foo",
            "git grep foo",
            "git cat-file -p HEAD:src/a",
            "git cat-file blob 1234abcd",
            "git cat-file --batch",
            "git diff HEAD~1 HEAD",
            "git diff --cached",
            "git diff",
            "git diff --stat -p",
            "git diff-tree -p HEAD",
            "git archive HEAD",
            "git format-patch -1",
            "git bundle create - HEAD",
            "git blame HEAD -- src/a",
            "git stash show",
            "git stash show -p",
            "git stash list -p",
            "git add -p",
            "git checkout --patch",
            "git commit -ap",
            "git -C elsewhere show HEAD",
            "git --no-pager log -p",
            "/usr/bin/git show HEAD",
            "git-show HEAD",
            "env GIT_DIR=x git show HEAD",
            "GIT_DIR=x git show HEAD",
            "echo HEAD | xargs git show --stat",
            "git lg",
            "git log $opts",
            "git log --textconv -p",
            "git for-each-ref '--format=%(raw)'",
            "git config --blob=1234abcd --list",
            "git notes show",
        ] {
            assert!(reads(line).is_some(), "{line}");
        }
    }

    #[test]
    fn names_and_counts_pass() {
        for line in [
            "git status",
            "git log",
            "git log --oneline -5",
            "git log --stat",
            "git log --name-only --format=%s",
            "git whatchanged",
            "git reflog",
            "git show --stat",
            "git show -s --format=%s HEAD~2",
            "git show --name-status HEAD^",
            "git show --stat main^{commit}",
            "git show --stat HEAD~3..HEAD",
            "git diff --stat",
            "git diff --name-only HEAD~1 HEAD",
            "git diff --quiet",
            "git diff-tree -r HEAD",
            "git grep --no-index foo",
            "git cat-file -t HEAD",
            "git cat-file -s HEAD:src/a",
            "git ls-files",
            "git ls-tree -r HEAD",
            "git branch -a",
            "git stash list",
            "git stash show --stat stash@{1}",
            "git stash",
            "git add src/a",
            "git commit -am message",
            "git checkout -b feature",
            "git rev-parse HEAD",
            "git --version",
            "ls -la",
        ] {
            assert_eq!(reads(line), None, "{line}");
        }
    }

    #[test]
    fn the_reason_names_what_prints() {
        assert_eq!(
            reads("git log -p").as_deref(),
            Some("`git log -p` prints what files hold")
        );
    }
}
