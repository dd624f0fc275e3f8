//! The wrappers the analysis sees through, with the options each one takes.

use super::options::Spec;

/// A wrapper's options and how its command follows them.
pub(super) struct Wrapper {
    pub name: &'static str,
    pub spec: Spec,
    /// Operands the wrapper takes before the command (`timeout DURATION`, `flock FILE`).
    pub leading: usize,
    /// Options that mean the wrapper runs no command (`command -v`, `ionice -p PID`).
    pub no_command: &'static [&'static str],
    /// Options that make the command text come from somewhere the analysis cannot see.
    pub opaque: &'static [&'static str],
    /// Whether `NAME=value` operands before the command are assignments (`env`, `sudo`).
    pub assignments: bool,
}

/// A wrapper with no leading operands, no special options and no assignments.
const fn wrapper(
    name: &'static str,
    short: &'static str,
    long: &'static [&'static str],
) -> Wrapper {
    Wrapper {
        name,
        spec: Spec { short, long },
        leading: 0,
        no_command: &[],
        opaque: &[],
        assignments: false,
    }
}

#[rustfmt::skip]
pub(super) const WRAPPERS: &[Wrapper] = &[
    Wrapper {
        assignments: true,
        opaque: &["-S", "--split-string"],
        ..wrapper(
            "env",
            "i0vu:C:S:",
            &[
                "ignore-environment", "null", "unset=", "chdir=", "split-string=", "block-signal?",
                "default-signal?", "ignore-signal?", "list-signal-handling", "debug",
            ],
        )
    },
    Wrapper {
        no_command: &["-v", "-V"],
        ..wrapper("command", "pvV", &[])
    },
    wrapper("builtin", "", &[]),
    wrapper("exec", "cla:", &[]),
    wrapper("nice", "n:#", &["adjustment="]),
    wrapper("nohup", "", &[]),
    Wrapper {
        leading: 1,
        ..wrapper(
            "timeout",
            "vs:k:",
            &[
                "preserve-status", "foreground", "kill-after=", "signal=", "verbose",
            ],
        )
    },
    wrapper("stdbuf", "i:o:e:", &["input=", "output=", "error="]),
    Wrapper {
        assignments: true,
        opaque: &["-e", "--edit"],
        no_command: &[
            "-l", "--list", "-v", "--validate", "-V", "--version", "-k", "-K",
        ],
        ..wrapper(
            "sudo",
            "AbEeHiKklnPSsVvu:g:h:p:C:D:r:t:U:T:R:",
            &[
                "askpass", "background", "bell", "preserve-env?", "edit", "set-home", "login",
                "remove-timestamp", "reset-timestamp", "list", "non-interactive",
                "preserve-groups", "stdin", "shell", "version", "validate", "user=", "group=",
                "host=", "prompt=", "close-from=", "chdir=", "role=", "type=", "other-user=",
                "command-timeout=", "chroot=",
            ],
        )
    },
    Wrapper {
        opaque: &["-C"],
        ..wrapper("doas", "nsLu:C:", &[])
    },
    wrapper(
        "time",
        "pvqaf:o:",
        &[
            "portability", "verbose", "quiet", "append", "format=", "output=",
        ],
    ),
    Wrapper {
        no_command: &["-p", "-P", "-u", "--pid", "--pgid", "--uid"],
        ..wrapper(
            "ionice",
            "tc:n:p:P:u:",
            &["ignore", "class=", "classdata=", "pid=", "pgid=", "uid="],
        )
    },
    wrapper("setsid", "cfw", &["ctty", "fork", "wait"]),
    Wrapper {
        leading: 1,
        no_command: &["-p", "--pid", "-m", "--max"],
        ..wrapper(
            "chrt",
            "abdefiomprRvT:P:D:",
            &[
                "all-tasks", "batch", "deadline", "fifo", "idle", "other", "rr", "reset-on-fork",
                "verbose", "max", "pid", "sched-runtime=", "sched-period=", "sched-deadline=",
            ],
        )
    },
    Wrapper {
        leading: 1,
        no_command: &["-p", "--pid"],
        ..wrapper("taskset", "acp", &["all-tasks", "cpu-list", "pid"])
    },
    Wrapper {
        leading: 1,
        ..wrapper(
            "flock",
            "sexnuoFvw:E:c:",
            &[
                "shared", "exclusive", "nonblock", "nb", "unlock", "close", "no-fork", "verbose",
                "timeout=", "wait=", "conflict-exit-code=", "command=",
            ],
        )
    },
    wrapper("busybox", "", &[]),
    wrapper("toybox", "", &[]),
];

/// `xargs` options (its command gets arguments appended from its input).
#[rustfmt::skip]
pub(super) const XARGS: Spec = Spec {
    short: "0a:d:E:e::I:i::L:l::n:P:prs:tx",
    long: &[
        "null", "arg-file=", "delimiter=", "eof?", "replace?", "max-lines?", "max-args=",
        "max-procs=", "interactive", "no-run-if-empty", "max-chars=", "verbose", "exit",
        "open-tty", "process-slot-var=", "show-limits",
    ],
};

/// `watch` options; without `-x` it runs its words joined as `sh -c` text.
#[rustfmt::skip]
pub(super) const WATCH: Spec = Spec {
    short: "bceghtpxn:d::q:",
    long: &[
        "beep", "color", "no-color", "errexit", "chgexit", "no-title", "precise", "exec",
        "no-linewrap", "interval=", "differences?", "equexit=",
    ],
};

/// `su` options; `-c` gives the command text.
#[rustfmt::skip]
pub(super) const SU: Spec = Spec {
    short: "lmpPfwc:s:g:G:",
    long: &[
        "login", "preserve-environment", "pty", "fast", "command=", "session-command=", "shell=",
        "group=", "supp-group=", "whitelist-environment=",
    ],
};

/// Shells whose `-c` argument is a command line.
pub(super) const SHELLS: &[&str] = &[
    "sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "yash", "posh",
];

/// Letters a shell accepts as flags (besides `-c`, `-o`, `-O`), across bash, dash, zsh and ksh.
pub(super) const SHELL_FLAGS: &str = "abefhikmnprstuvxBCEHPTlD";

/// Long options shells take that change nothing about what runs.
#[rustfmt::skip]
pub(super) const SHELL_LONG: &[&str] = &[
    "--norc", "--noprofile", "--posix", "--noediting", "--restricted", "--verbose", "--login",
];
