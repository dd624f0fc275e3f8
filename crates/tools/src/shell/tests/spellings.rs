//! A `Bash(rm:*)` deny rule against every way of spelling `rm`.

use super::*;

#[test]
fn every_spelling_of_rm_is_caught_by_a_deny_rule() {
    for command in [
        "rm x",
        "\"rm\" x",
        "r''m x",
        "\\rm x",
        "/bin/rm x",
        "/usr/bin/rm x",
        "./rm x",
        "/usr/bin/env rm x",
        "env -i rm x",
        "env -i PATH=/bin FOO=1 rm x",
        "env - rm x",
        "${X:-rm} x",
        "a=rm; $a x",
        "stdbuf -o0 rm x",
        "trap 'rm x' EXIT",
        "f(){ rm x; }; f",
        "function f { rm x; }; f",
        "eval rm x",
        "command rm x",
        "command -p rm x",
        "builtin rm x",
        "exec rm x",
        "nice -n 5 rm x",
        "nice -5 rm x",
        "nohup rm x &",
        "timeout 5 rm x",
        "timeout -s KILL 5s rm x",
        "xargs rm",
        "find . -name '*.o' | xargs -0 -n1 rm -f",
        "sudo rm x",
        "sudo -u root -- rm x",
        "doas rm x",
        "bash -c 'rm x'",
        "sh -ec \"rm x\"",
        "bash -o pipefail -c 'ls | rm x'",
        "$(echo rm) x",
        "`echo rm` x",
        "$'\\x72m' x",
        "$'\\162m' x",
        "FOO=1 rm x",
        "time rm x",
        "! rm x",
        "ls; rm x",
        "ls && rm x",
        "ls || rm x",
        "ls | rm x",
        "ls & rm x",
        "ls # it's\nrm x",
        "(rm x)",
        "{ rm x; }",
        "if true; then rm x; fi",
        "while false; do :; done; until true; do rm x; done",
        "for f in a b; do rm $f; done",
        "case a in a) rm x;; esac",
        "echo $(rm x)",
        "echo \"$(rm x)\"",
        "echo `rm x`",
        "echo ${y:-$(rm x)}",
        "cat <(rm x)",
        "ls > >(rm x)",
        "cat <<EOF\n$(rm x)\nEOF",
        "cat <<< \"$(rm x)\"",
        "echo \"`rm x`\"",
        "cat <<EOF\n`rm x`\nEOF",
        "echo ${x:-`rm x`}",
        "ls | sudo -n -- rm -f x",
        "coproc rm x",
        "find . -exec rm {} \\;",
        "find . -execdir rm {} +",
        "git bisect run rm x",
        "git rebase -x 'rm x' main",
        "git -c alias.x='!rm x' x",
        "watch rm x",
        "flock /tmp/l rm x",
        "flock /tmp/l -c 'rm x'",
        "su -c 'rm x'",
        "busybox rm x",
        "setsid rm x",
        "ionice -c3 rm x",
        "chrt -b 0 rm x",
        "taskset 0x1 rm x",
        "echo rm x | bash",
        "bash script.sh",
        "source ./x.sh",
        ". ./x.sh",
        "alias ls=rm; ls x",
        "echo $(( $(rm x) + 1 ))",
        "x='a[$(rm y)]'; echo $((x))",
        "r\\\nm x",
        "{rm,x}",
        "/bin/r? x",
        "r[m] x",
        "~/bin/rm x",
        "echo 'unterminated",
        "rm$IFS-rf x",
        "sudo -e file",
        "env -S 'rm x'",
        "exec 3>/tmp/x",
    ] {
        assert!(caught_by_rm_rule(command), "not caught: {command:?}");
    }
}

#[test]
fn commands_that_only_mention_rm_are_not_caught() {
    for command in [
        "ls -la",
        "echo 'rm -rf x'",
        "echo rm",
        "rmdir x",
        "ls # rm -rf",
        "grep -r 'rm x' .",
        "git log --grep=rm",
        "cat rm.txt",
        "command -v rm",
        "find . -name rm",
        "echo \"$HOME\"",
        "sudo ls",
        "timeout 5 ls",
    ] {
        assert!(!caught_by_rm_rule(command), "caught: {command:?}");
    }
}

#[test]
fn a_multi_word_deny_rule_catches_a_dynamic_word_where_its_words_are() {
    let push = Pattern::new(PatternKind::WordPrefix, "git push");
    let caught = |command: &str| {
        analyze(command)
            .commands
            .iter()
            .any(|c| push.matches(c, Purpose::Restrict))
    };
    assert!(caught("git push origin main"));
    assert!(caught("git \"push\" origin"));
    assert!(caught("git $SUB origin"));
    assert!(caught("/usr/bin/git push"));
    assert!(!caught("git pull"));
    assert!(!caught("git log $REV"));
}

#[test]
fn allow_patterns_grant_only_what_they_spell() {
    let grants = |pattern: &Pattern, command: &str| {
        let analysis = analyze(command);
        analysis.is_understood()
            && analysis
                .commands
                .iter()
                .all(|c| pattern.matches(c, Purpose::Grant))
    };
    let test = Pattern::new(PatternKind::WordPrefix, "npm run test");
    assert!(grants(&test, "npm run test -- --watch"));
    assert!(grants(&test, "\"npm\" run test"));
    assert!(!grants(&test, "npm run testing"));
    assert!(!grants(&test, "npm $X test"));
    let git = Pattern::new(PatternKind::WordPrefix, "git");
    assert!(grants(&git, "/usr/bin/git status"));
    assert!(!grants(&git, "./git status"));
    assert!(!grants(&git, "git status > out"));
    let exact = Pattern::new(PatternKind::Exact, "cat a >b.txt");
    assert!(grants(&exact, "cat a > b.txt"));
    assert!(!grants(&exact, "cat a > c.txt"));
    assert!(!grants(&exact, "cat a '> b.txt'"));
    let quoted = Pattern::new(PatternKind::Exact, "git commit -m \"wip it\"");
    assert!(grants(&quoted, "git commit -m 'wip it'"));
}
