//! What the analysis reports: the commands found, their words and what is unknown.

use super::*;
use proptest::prelude::*;

#[test]
fn finds_every_simple_command() {
    assert_eq!(
        lines("a && b || c; d | e\nf & g"),
        ["a", "b", "c", "d", "e", "f", "g"]
    );
    assert_eq!(
        lines("echo $(date) `whoami`"),
        ["date", "whoami", "echo $(date) `whoami`"]
    );
    assert_eq!(lines("(cd x && make) 2>/dev/null"), ["cd x", "make"]);
    assert_eq!(lines("for f in *.rs; do rustfmt $f; done"), ["rustfmt $f"]);
    assert_eq!(lines("echo 'a && b' \"c; d\""), ["echo 'a && b' 'c; d'"]);
    assert_eq!(lines("make 2>&1 | tee log"), ["make 2>&1", "tee log"]);
    assert_eq!(lines("ls # && rm x\npwd"), ["ls", "pwd"]);
    assert_eq!(lines("echo a\\;b"), ["echo 'a;b'"]);
    assert_eq!(
        lines("while read l; do echo $l; done < list"),
        ["read l", "echo $l"]
    );
    assert_eq!(
        lines("if true; then make; else exit 1; fi"),
        ["true", "make", "exit 1"]
    );
    assert_eq!(lines("! grep -q x f"), ["grep -q x f"]);
}

#[test]
fn quotes_are_removed_and_wrappers_are_seen_through() {
    let analysis = analyze("sudo -u bob FOO=1 \"r\"'m' -rf x");
    let lines: Vec<String> = analysis.commands.iter().map(Command::line).collect();
    assert_eq!(lines, ["sudo -u bob FOO=1 rm -rf x", "FOO=1 rm -rf x"]);
    assert_eq!(analysis.commands[0].layer, Layer::Wrapper);
    assert_eq!(analysis.commands[1].layer, Layer::Program);
    assert_eq!(analysis.commands[1].origin, Origin::Wrapper);
    assert_eq!(analysis.commands[1].assignments, [Word::fixed("FOO=1")]);
    assert_eq!(analysis.commands[1].program(), Some("rm"));
    assert!(analysis.is_understood());
}

#[test]
fn redirections_to_files_are_flagged() {
    let redirect = |command: &str| {
        analyze(command)
            .commands
            .iter()
            .map(|c| c.redirect)
            .collect::<Vec<_>>()
    };
    assert_eq!(
        redirect("sort x > y; ls 2>/dev/null"),
        [Redirect::File, Redirect::None]
    );
    assert_eq!(
        redirect("(cd x && make) > log; ls"),
        [Redirect::File, Redirect::File, Redirect::None]
    );
    assert_eq!(
        redirect("cat a >&2; cat b 2>&1 >/dev/null"),
        [Redirect::None, Redirect::None]
    );
    assert_eq!(redirect("cat a &>> log"), [Redirect::File]);
    assert_eq!(
        redirect("timeout 5 cat a > f"),
        [Redirect::File, Redirect::File]
    );
}

#[test]
fn unknowns_say_why() {
    let reasons = |command: &str| {
        analyze(command)
            .unknown
            .into_iter()
            .map(|u| u.reason)
            .collect::<Vec<_>>()
    };
    assert_eq!(reasons("$a x"), [UnknownReason::DynamicCommandName]);
    assert_eq!(reasons("eval ls"), [UnknownReason::RunsText("eval".into())]);
    assert_eq!(reasons("f() { ls; }"), [UnknownReason::FunctionDefinition]);
    assert_eq!(reasons("exec 3>x"), [UnknownReason::ExecRedirection]);
    assert_eq!(
        reasons("timeout --bogus 5 ls"),
        [UnknownReason::WrapperOption {
            wrapper: "timeout".into(),
            option: "--bogus".into()
        }]
    );
    assert_eq!(
        reasons("BASH_ENV=x bash -c ls"),
        [UnknownReason::SensitiveVariable("BASH_ENV".into())]
    );
    assert!(matches!(
        reasons("echo 'open")[..],
        [UnknownReason::Syntax(_)]
    ));
    assert!(matches!(
        reasons("git -c core.pager=x log")[..],
        [UnknownReason::GitConfig(_)]
    ));
    assert!(reasons("git -c user.name=x commit").is_empty());
    let message = analyze("a=rm; $a x").unknown_reasons();
    assert!(
        message.contains("`$a x`") && message.contains("not a plain word"),
        "{message}"
    );
}

#[test]
fn deep_nesting_is_unknown_and_never_overflows_the_stack() {
    for depth in [10, 39, 41, 500, 5000] {
        for (open, close) in [
            ("(", ")"),
            ("{ ", "; }"),
            ("$(", ")"),
            ("if true; then ", "; fi"),
        ] {
            let command = format!("{}ls{}", open.repeat(depth), close.repeat(depth));
            let analysis = analyze(&command);
            if depth > 40 {
                assert!(!analysis.is_understood(), "{depth} {open}");
            }
        }
    }
    let nested = format!("echo {}a{}", "${x:-".repeat(45), "}".repeat(45));
    assert!(!analyze(&nested).is_understood());
}

#[test]
fn numbers_that_overflow_the_parser_are_survived() {
    for command in [
        "echo {1..99999999999999999999999}",
        "ls ~+99999999999999999999999999",
    ] {
        let _ = analyze(command);
    }
}

proptest! {
    #[test]
    fn any_text_is_analysed_without_panicking(text in "\\PC{0,80}") {
        let _ = analyze(&text);
    }

    #[test]
    fn shell_like_text_is_analysed_without_panicking(
        text in "[a-z $'\"`\\\\(){};&|<>#=*?\\[\\]!~\n-]{0,60}"
    ) {
        let analysis = analyze(&text);
        // Whatever it is, it is never read-only while something is unknown.
        prop_assert!(analysis.is_understood() || !analysis.is_read_only());
    }
}
