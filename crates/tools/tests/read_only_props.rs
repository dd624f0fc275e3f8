//! Property: the shell analysis never calls a mutating command read-only, however it is
//! spelled (quoted or escaped names), wrapped (`env`, `sudo`, `nice`, `timeout`, `xargs`,
//! `sh -c`, …) or embedded (lists, pipes, subshells, groups, substitutions, loops,
//! conditionals), to any depth.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code may panic on a broken fixture

use proptest::prelude::*;
use troupe_tools::is_read_only_command;

/// Commands that change something: the program, then its arguments.
const MUTATING: &[(&str, &str)] = &[
    ("rm", "-rf target"),
    ("touch", "f"),
    ("mv", "a b"),
    ("cp", "a b"),
    ("chmod", "777 f"),
    ("mkdir", "-p d"),
    ("tee", "out.txt"),
    ("dd", "if=/dev/zero of=f"),
    ("sed", "-i s/a/b/ f"),
    ("git", "commit -m x"),
    ("git", "push"),
    ("git", "checkout -- ."),
    ("git", "branch -D main"),
    ("git", "-c core.pager=sh log"),
    ("truncate", "-s 0 f"),
    ("ln", "-s a b"),
    ("python3", "-c 'open(\"f\", \"w\")'"),
    ("sort", "-o out.txt in.txt"),
    ("find", ". -delete"),
    ("find", ". -exec rm {} +"),
    ("find", ". -fprint out.txt"),
    ("curl", "-o f http://example.com"),
    ("cargo", "build"),
    ("make", ""),
    ("kill", "1"),
    ("tree", "-o out.txt"),
    ("date", "-s 2020-01-01"),
    ("rg", "--pre sh x"),
    ("uniq", "in.txt out.txt"),
    ("awk", "'{print > \"f\"}' in"),
];

/// Read-only commands, to stand beside the mutating one.
const HARMLESS: &[&str] = &["ls", "true", "false", "cat a.txt", "echo hi", "pwd"];

/// A word quoted for the shell so that it stays one word with the same value.
fn single_quoted(text: &str) -> String {
    format!("'{}'", text.replace('\'', "'\\''"))
}

/// The program's name as written: plain, quoted, escaped or split into quoted pieces.
fn spelled(name: &'static str) -> impl Strategy<Value = String> {
    let (head, tail) = name.split_at(1);
    prop_oneof![
        Just(name.to_string()),
        Just(single_quoted(name)),
        Just(format!("\"{name}\"")),
        Just(format!("\\{name}")),
        Just(format!("{head}''{tail}")),
        Just(format!("{head}\"\"{tail}")),
        Just(format!("/usr/bin/{name}")),
    ]
}

/// One mutating command, its program spelled some way, sometimes with output redirected.
fn mutating() -> impl Strategy<Value = String> {
    (0..MUTATING.len(), any::<bool>()).prop_flat_map(|(i, redirect)| {
        let (name, args) = MUTATING[i];
        spelled(name).prop_map(move |program| {
            let command = format!("{program} {args}").trim_end().to_string();
            match redirect {
                true => format!("{command} 2>/dev/null"),
                false => command,
            }
        })
    })
}

/// Also mutating: a read-only program whose output goes to a file.
fn redirected() -> impl Strategy<Value = String> {
    (
        prop::sample::select(HARMLESS),
        prop::sample::select(&[">", ">>", "&>", "1>", ">|"][..]),
    )
        .prop_map(|(command, op)| format!("{command} {op} out.txt"))
}

/// `inner` (which mutates) wrapped or embedded one level deeper; still mutating.
fn around(inner: BoxedStrategy<String>) -> impl Strategy<Value = String> {
    (inner, prop::sample::select(HARMLESS), 0..24usize).prop_map(|(cmd, other, how)| match how {
        0 => format!("env {cmd}"),
        1 => format!("env -i X=1 {cmd}"),
        2 => format!("sudo {cmd}"),
        3 => format!("sudo -u root {cmd}"),
        4 => format!("nice -n 5 {cmd}"),
        5 => format!("timeout 5 {cmd}"),
        6 => format!("command {cmd}"),
        7 => format!("nohup {cmd}"),
        8 => format!("echo x | xargs {cmd}"),
        9 => format!("sh -c {}", single_quoted(&cmd)),
        10 => format!("bash -c {}", single_quoted(&cmd)),
        11 => format!("{other}; {cmd}"),
        12 => format!("{cmd} && {other}"),
        13 => format!("{other} || {cmd}"),
        14 => format!("{other} | {cmd}"),
        15 => format!("({cmd})"),
        16 => format!("{{ {cmd}; }}"),
        17 => format!("echo $({cmd})"),
        18 => format!("echo \"`{cmd}`\""),
        19 => format!("if {other}; then {cmd}; fi"),
        20 => format!("for i in 1 2; do {cmd}; done"),
        21 => format!("X=$({cmd}) {other}"),
        22 => format!("{other}\n{cmd}"),
        _ => format!("time {cmd}"),
    })
}

fn anything_mutating() -> impl Strategy<Value = String> {
    prop_oneof![mutating(), redirected()].prop_recursive(3, 24, 1, |inner| around(inner.boxed()))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn a_mutating_command_is_never_read_only(command in anything_mutating()) {
        prop_assert!(
            !is_read_only_command(&command),
            "called read-only: {command:?}"
        );
    }
}

#[test]
fn the_harmless_commands_alone_are_read_only() {
    // The property would prove nothing if the analysis refused everything.
    for command in HARMLESS {
        assert!(is_read_only_command(command), "{command}");
        assert!(is_read_only_command(&format!("env {command}")), "{command}");
        assert!(
            is_read_only_command(&format!("sh -c {}", single_quoted(command))),
            "{command}"
        );
    }
}
