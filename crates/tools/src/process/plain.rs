//! A plain command run without the shell, exactly as `bash -c COMMAND` would run it.
//!
//! When the command line is one simple command of plain words (`ls`, `cargo test -p x`,
//! `git status --short`), bash parses it, finds the program on `PATH` and, since it is the last
//! command, executes it in place of itself: the program ends up in the same process, with the
//! same arguments, stdio, group and sandbox. All bash adds is its own start-up (~1.7 ms, most
//! of a short call) and four changes to the environment: `PWD` names the directory, `SHLVL` is
//! the inherited level (bash raises it on start and lowers it on that exec), `_` is the
//! program's path, and an `OLDPWD` that names no directory is dropped. This module decides when
//! a command is that plain and makes those four changes; anything else — a quote, an expansion,
//! a glob, a redirection, an operator, a builtin or keyword, an assignment, a program named by a
//! relative path, an environment bash would act on (`BASH_ENV`, `SHELLOPTS`, exported
//! functions, …) — runs through bash as before. So does a program that cannot be executed
//! (not found, not permitted, a script without `#!`): bash then runs it, or says why not, in its
//! own words and with its own exit status.
//!
//! Nothing here grants anything: the permission analysis and the sandbox see and confine the
//! call exactly as they do when bash runs it.

use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

/// Bash's builtins and reserved words (bash 5.2 `compgen -b` and `compgen -k`): a command
/// starting with one of these is bash's own, never a program on `PATH`.
#[rustfmt::skip]
const BASH_OWN: &[&str] = &[
    ".", ":", "[", "alias", "bg", "bind", "break", "builtin", "caller", "cd", "command",
    "compgen", "complete", "compopt", "continue", "declare", "dirs", "disown", "echo", "enable",
    "eval", "exec", "exit", "export", "false", "fc", "fg", "getopts", "hash", "help", "history",
    "jobs", "kill", "let", "local", "logout", "mapfile", "popd", "printf", "pushd", "pwd", "read",
    "readarray", "readonly", "return", "set", "shift", "shopt", "source", "suspend", "test",
    "times", "trap", "true", "type", "typeset", "ulimit", "umask", "unalias", "unset", "wait",
    "if", "then", "else", "elif", "fi", "case", "esac", "for", "select", "while", "until", "do",
    "done", "in", "function", "time", "{", "}", "!", "[[", "]]", "coproc",
];

/// Variables in the environment that make bash do something at start-up or change how it
/// runs a command: with any of them the command goes to bash.
const BASH_ACTS_ON: &[&str] = &[
    "BASH_ENV",
    "ENV",
    "SHELLOPTS",
    "BASHOPTS",
    "POSIXLY_CORRECT",
    "IFS",
];

/// Above this inherited `SHLVL` bash warns and resets the level: left to bash.
const SHLVL_BASH_RESETS: i64 = 999;

/// The words of `command` when it is one simple command of plain words that names a program
/// (not a builtin, keyword or assignment); `None` sends it to bash.
pub fn plain_words(command: &str) -> Option<Vec<&str>> {
    let plain = |c: char| c.is_ascii_alphanumeric() || "_-./,:=+@%".contains(c);
    if !command.chars().all(|c| c == ' ' || c == '\t' || plain(c)) {
        return None;
    }
    let words: Vec<&str> = command
        .split([' ', '\t'])
        .filter(|w| !w.is_empty())
        .collect();
    let program = *words.first()?;
    let named_by_path = program.contains('/');
    if BASH_OWN.contains(&program)
        || program.contains('=')
        || (named_by_path && !program.starts_with('/'))
    {
        return None;
    }
    Some(words)
}

/// Changes `env` (the child's environment, as troupe would hand it to bash) into what bash
/// hands `program` (found on `PATH`, or named by an absolute path) when it executes it in
/// `cwd`. `Err` says why only bash can run it that way.
pub(super) fn as_bash_execs(
    env: &mut BTreeMap<OsString, OsString>,
    program: &Path,
    cwd: Option<&Path>,
) -> Result<(), &'static str> {
    if env.keys().any(|k| {
        BASH_ACTS_ON.contains(&&*k.to_string_lossy()) || k.as_bytes().starts_with(b"BASH_FUNC_")
    }) {
        return Err("the environment sets something bash acts on");
    }
    if let Some(path) = env.get(OsStr::new("PATH")) {
        if std::env::split_paths(path).any(|d| !d.is_absolute()) {
            return Err("PATH holds a relative directory");
        }
    }
    if !program.is_absolute() {
        return Err("the program is not named by an absolute path");
    }
    let level = match env.get(OsStr::new("SHLVL")) {
        None => 0,
        Some(v) => match v.to_str().and_then(|s| s.trim().parse::<i64>().ok()) {
            Some(n) if n >= SHLVL_BASH_RESETS => return Err("SHLVL is at bash's limit"),
            Some(n) => n.max(0),
            None => 0,
        },
    };
    env.insert("SHLVL".into(), level.to_string().into());
    let here = match cwd {
        Some(dir) => dir.to_path_buf(),
        None => std::env::current_dir().map_err(|_| "the directory cannot be read")?,
    };
    let here_id = same_file_id(&here).ok_or("the directory cannot be read")?;
    let pwd_names_it = env
        .get(OsStr::new("PWD"))
        .map(Path::new)
        .is_some_and(|p| p.is_absolute() && same_file_id(p) == Some(here_id));
    if !pwd_names_it {
        let physical = here
            .canonicalize()
            .map_err(|_| "the directory cannot be read")?;
        env.insert("PWD".into(), physical.into_os_string());
    }
    if env
        .get(OsStr::new("OLDPWD"))
        .is_some_and(|p| !Path::new(p).is_dir())
    {
        env.remove(OsStr::new("OLDPWD"));
    }
    env.insert("_".into(), program.as_os_str().to_os_string());
    Ok(())
}

/// Device and inode of what `path` names.
fn same_file_id(path: &Path) -> Option<(u64, u64)> {
    std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_one_simple_command_of_plain_words_is_plain() {
        assert_eq!(plain_words("ls"), Some(vec!["ls"]));
        assert_eq!(
            plain_words("  cargo test -p troupe-cli\t--lib "),
            Some(vec!["cargo", "test", "-p", "troupe-cli", "--lib"])
        );
        assert_eq!(plain_words("/usr/bin/env"), Some(vec!["/usr/bin/env"]));
        assert_eq!(
            plain_words("git log --format=%H -n 1"),
            Some(vec!["git", "log", "--format=%H", "-n", "1"])
        );
        for bash_only in [
            "",
            "   ",
            "echo hi",
            "cd src",
            "true",
            "[ -d x ]",
            "if",
            "FOO=1 ls",
            "ls *.rs",
            "ls ~",
            "ls $HOME",
            "ls 'a b'",
            "ls \"a\"",
            "ls a\\ b",
            "ls > out",
            "ls | wc",
            "ls; pwd",
            "ls && pwd",
            "ls &",
            "ls {a,b}",
            "ls # c",
            "ls\nrm x",
            "(ls)",
            "!ls",
            "./gradlew build",
            "bin/tool",
            "ls `pwd`",
            "ls ?",
            "ls [ab]",
            "ls é",
        ] {
            assert_eq!(
                plain_words(bash_only),
                None,
                "{bash_only:?} is bash's to run"
            );
        }
    }

    fn var<'a>(env: &'a BTreeMap<OsString, OsString>, key: &str) -> &'a str {
        env[OsStr::new(key)].to_str().unwrap()
    }

    fn env_of(pairs: &[(&str, &str)]) -> BTreeMap<OsString, OsString> {
        pairs.iter().map(|(k, v)| (k.into(), v.into())).collect()
    }

    #[test]
    fn the_environment_is_what_bash_hands_the_program() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().canonicalize().unwrap();
        let ls = Path::new("/usr/bin/ls");
        let mut env = env_of(&[
            ("PATH", "/usr/bin:/bin"),
            ("PWD", "/"),
            ("OLDPWD", "/no/such/dir"),
            ("_", "x"),
        ]);
        as_bash_execs(&mut env, ls, Some(dir.path())).unwrap();
        assert_eq!(var(&env, "PWD"), real.as_os_str());
        assert_eq!(var(&env, "SHLVL"), "0");
        assert_eq!(var(&env, "_"), "/usr/bin/ls");
        assert!(!env.contains_key(OsStr::new("OLDPWD")));

        // A PWD that names the directory is kept as spelled; a good OLDPWD stays.
        let spelled = format!("{}/.", real.display());
        let mut env = env_of(&[("PWD", &spelled), ("OLDPWD", "/"), ("SHLVL", " 7")]);
        as_bash_execs(&mut env, ls, Some(dir.path())).unwrap();
        assert_eq!(var(&env, "PWD"), spelled.as_str());
        assert_eq!(var(&env, "OLDPWD"), "/");
        assert_eq!(var(&env, "SHLVL"), "7");
        for (shlvl, seen) in [("-5", "0"), ("x", "0"), ("0042", "42")] {
            let mut env = env_of(&[("SHLVL", shlvl)]);
            as_bash_execs(&mut env, ls, Some(dir.path())).unwrap();
            assert_eq!(var(&env, "SHLVL"), seen, "SHLVL={shlvl}");
        }
    }

    #[test]
    fn what_bash_would_act_on_is_left_to_bash() {
        let ls = Path::new("/usr/bin/ls");
        for env in [
            env_of(&[("BASH_ENV", "/tmp/rc")]),
            env_of(&[("SHELLOPTS", "xtrace")]),
            env_of(&[("BASH_FUNC_ls%%", "() { echo hi; }")]),
            env_of(&[("IFS", ":")]),
            env_of(&[("SHLVL", "999")]),
            env_of(&[("PATH", "bin:/usr/bin")]),
            env_of(&[("PATH", "/usr/bin::/bin")]),
        ] {
            let mut changed = env.clone();
            assert!(as_bash_execs(&mut changed, ls, None).is_err(), "{env:?}");
        }
        assert!(as_bash_execs(&mut env_of(&[]), Path::new("ls"), None).is_err());
    }
}
