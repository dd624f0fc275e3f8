//! The read-only table: programs, and the options that keep each one read-only.
//!
//! A command is read-only only if its program is listed and every option it is given is one the
//! entry lists (combined short flags taken apart, no abbreviations of long options). Programs
//! listed as [`Check::Any`] have no option that writes, runs another program or changes the
//! system. Everything else — `tee`, `sed`, `awk`, interpreters, anything unlisted — is not.

use super::options::{self, Order, Spec};
use super::WordKind;
use super::{analyze, find, git, wrappers, Analysis, Command, Layer, Origin, Redirect, Word};

/// True when every command `cmd` runs is read-only and nothing in it is unknown: no redirection
/// to a file, no assignment, no expansion that can run code, and a known program with options
/// the table lists. Plan mode and the permission modes let such commands through.
pub fn is_read_only_command(cmd: &str) -> bool {
    analyze(cmd).is_read_only()
}

pub(super) fn analysis_is_read_only(analysis: &Analysis) -> bool {
    analysis.is_understood()
        && !analysis.commands.is_empty()
        && analysis.commands.iter().all(command_is_read_only)
}

/// How a program's arguments are checked.
#[derive(Clone, Copy)]
enum Check {
    /// No option of the program writes or runs anything.
    Any,
    /// Only these options.
    Options(Spec),
    /// Options and operands both need a closer look.
    Custom(fn(&[Word]) -> bool),
}

/// The read-only programs.
const TABLE: &[(&str, Check)] = &[
    ("[", Check::Any),
    ("[[", Check::Any),
    ("arch", Check::Any),
    ("b2sum", Check::Any),
    ("basename", Check::Any),
    ("cargo", Check::Custom(cargo)),
    ("cat", Check::Any),
    ("cd", Check::Any),
    ("cksum", Check::Any),
    ("cmp", Check::Any),
    ("column", Check::Any),
    // Only reached with -v/-V (`command -v ls`): with a command it is a wrapper.
    (
        "command",
        Check::Options(Spec {
            short: "pvV",
            long: &[],
        }),
    ),
    ("comm", Check::Any),
    ("cut", Check::Any),
    ("date", Check::Custom(date)),
    ("df", Check::Any),
    ("diff", Check::Any),
    ("dirname", Check::Any),
    ("du", Check::Any),
    ("echo", Check::Any),
    ("egrep", Check::Any),
    ("env", Check::Any),
    ("expand", Check::Any),
    ("false", Check::Any),
    ("fgrep", Check::Any),
    ("file", Check::Options(FILE)),
    ("find", Check::Custom(find::is_read_only)),
    ("fold", Check::Any),
    ("free", Check::Any),
    ("git", Check::Custom(git::is_read_only)),
    ("grep", Check::Any),
    ("groups", Check::Any),
    ("head", Check::Any),
    ("id", Check::Any),
    ("jq", Check::Any),
    ("join", Check::Any),
    ("ls", Check::Any),
    ("md5sum", Check::Any),
    ("nl", Check::Any),
    ("nproc", Check::Any),
    ("od", Check::Any),
    ("paste", Check::Any),
    ("printenv", Check::Any),
    ("printf", Check::Custom(printf)),
    ("pwd", Check::Any),
    ("readlink", Check::Any),
    ("realpath", Check::Any),
    ("rev", Check::Any),
    ("rg", Check::Custom(rg)),
    ("seq", Check::Any),
    ("sha1sum", Check::Any),
    ("sha224sum", Check::Any),
    ("sha256sum", Check::Any),
    ("sha384sum", Check::Any),
    ("sha512sum", Check::Any),
    ("sleep", Check::Any),
    ("sort", Check::Options(SORT)),
    ("stat", Check::Any),
    ("strings", Check::Any),
    ("tac", Check::Any),
    ("tail", Check::Any),
    ("test", Check::Any),
    ("tr", Check::Any),
    ("tree", Check::Options(TREE)),
    ("true", Check::Any),
    ("tty", Check::Any),
    ("type", Check::Any),
    ("uname", Check::Any),
    ("unexpand", Check::Any),
    ("uniq", Check::Custom(uniq)),
    ("uptime", Check::Any),
    ("wc", Check::Any),
    ("which", Check::Any),
    ("whoami", Check::Any),
];

fn command_is_read_only(command: &Command) -> bool {
    if command.redirect == Redirect::File || !command.assignments.is_empty() {
        return false;
    }
    let Some(program) = command.program() else {
        return false;
    };
    let mut args = command.words[1..].to_vec();
    if command.origin == Origin::Xargs {
        // xargs appends words from its input, which may be options.
        args.push(Word {
            text: "(input)".into(),
            kind: WordKind::Dynamic,
        });
    }
    match command.layer {
        Layer::Wrapper => wrappers::is_read_only(program, &args),
        Layer::Program => match TABLE.iter().find(|(name, _)| *name == program) {
            Some((_, Check::Any)) => true,
            Some((_, Check::Options(spec))) => options::parse(spec, &args, Order::Permute).is_ok(),
            Some((_, Check::Custom(check))) => check(&args),
            None => false,
        },
    }
}

/// GNU sort without `-o`/`--output` (writes a file), `-T` (temporary files), or
/// `--compress-program` (runs a program).
#[rustfmt::skip]
const SORT: Spec = Spec {
    short: "bdfghiMnRrVcCmsuzk:t:S:",
    long: &[
        "ignore-leading-blanks", "dictionary-order", "ignore-case", "general-numeric-sort",
        "ignore-nonprinting", "month-sort", "human-numeric-sort", "numeric-sort", "random-sort",
        "reverse", "version-sort", "check?", "merge", "stable", "unique", "zero-terminated",
        "debug", "key=", "field-separator=", "buffer-size=", "parallel=", "batch-size=",
        "files0-from=", "random-source=", "sort=",
    ],
};

/// tree without `-o` (writes its listing to a file) or `-R`.
#[rustfmt::skip]
const TREE: Spec = Spec {
    short: "adlfxpsugDFqNQrtvUCnhiAJXSL:P:I:",
    long: &[
        "noreport", "prune", "dirsfirst", "filesfirst", "filelimit=", "charset=", "gitignore",
        "du", "si", "matchdirs", "ignore-case", "inodes", "device", "sort=", "timefmt=",
        "fromfile", "info", "metafirst", "noindent",
    ],
};

/// file without `-C` (compiles a magic file) or `-p` (resets access times).
#[rustfmt::skip]
const FILE: Spec = Spec {
    short: "bchiklLNnrsvzZ0Se:f:F:m:P:",
    long: &[
        "brief", "mime", "mime-type", "mime-encoding", "dereference", "no-dereference",
        "uncompress", "uncompress-noreport", "keep-going", "special-files", "no-pad", "no-buffer",
        "raw", "print0", "extension", "apple", "exclude=", "exclude-quiet=", "files-from=",
        "separator=", "magic-file=", "parameter=",
    ],
};

/// date without `-s`/`--set`, and with no operand but `+FORMAT` (`date MMDDhhmm` sets the clock).
fn date(args: &[Word]) -> bool {
    #[rustfmt::skip]
    const DATE: Spec = Spec {
        short: "uRI::d:f:r:",
        long: &[
            "utc", "universal", "rfc-email", "rfc-2822", "iso-8601?", "rfc-3339=", "date=",
            "file=", "reference=", "debug", "resolution",
        ],
    };
    options::parse(&DATE, args, Order::Permute).is_ok_and(|p| {
        p.operands
            .iter()
            .all(|w| w.kind == WordKind::Static && w.text.starts_with('+'))
    })
}

/// `uniq IN OUT` writes OUT, so at most one operand.
fn uniq(args: &[Word]) -> bool {
    #[rustfmt::skip]
    const UNIQ: Spec = Spec {
        short: "cdDiuzf:s:w:",
        long: &[
            "count", "repeated", "all-repeated?", "ignore-case", "unique", "zero-terminated",
            "skip-fields=", "skip-chars=", "check-chars=", "group?",
        ],
    };
    options::parse(&UNIQ, args, Order::Permute).is_ok_and(|p| p.operands.len() <= 1)
}

/// printf without `-v VAR` (assigns a variable, and `-v 'a[$(cmd)]'` runs `cmd`). Only the first
/// word can be an option.
fn printf(args: &[Word]) -> bool {
    match args.first() {
        None => true,
        Some(first) => match first.kind {
            WordKind::Dynamic => false,
            WordKind::Static | WordKind::DynamicOperand => !first.text.starts_with("-v"),
        },
    }
}

/// ripgrep without `--pre` (runs a program on every file) or `--hostname-bin` (runs a program).
/// ripgrep takes no abbreviations and no other option of it writes or runs anything, so a
/// short deny list is exact here.
fn rg(args: &[Word]) -> bool {
    const RUNS: [&str; 3] = ["--pre", "--pre-glob", "--hostname-bin"];
    args.iter().all(|word| {
        let name = word
            .text
            .split_once('=')
            .map_or(word.text.as_str(), |(n, _)| n);
        word.kind != WordKind::Dynamic && !RUNS.contains(&name)
    })
}

/// `cargo metadata`, `cargo tree`, `cargo locate-project`, `cargo --version`.
fn cargo(args: &[Word]) -> bool {
    #[rustfmt::skip]
    const GLOBAL: [&str; 8] = [
        "--locked", "--offline", "--frozen", "-q", "--quiet", "-v", "-vv", "--verbose",
    ];
    let mut rest = args;
    while let Some((first, tail)) = rest.split_first() {
        if first.kind != WordKind::Static {
            return false;
        }
        match first.text.as_str() {
            "--version" | "-V" | "version" => return tail.is_empty(),
            flag if GLOBAL.contains(&flag) || flag.starts_with("--color=") => rest = tail,
            _ => break,
        }
    }
    let Some((sub, rest)) = rest.split_first() else {
        return false;
    };
    let spec = match sub.text.as_str() {
        "metadata" => CARGO_METADATA,
        "tree" => CARGO_TREE,
        "locate-project" => CARGO_LOCATE,
        _ => return false,
    };
    options::parse(&spec, rest, Order::Permute).is_ok_and(|p| p.operands.is_empty())
}

/// Options every cargo subcommand here shares (no `--config`, `-Z` or `+toolchain`).
macro_rules! cargo_common {
    ($($extra:literal),* $(,)?) => {
        &[
            "locked", "offline", "frozen", "quiet", "verbose", "color=", "manifest-path=",
            $($extra),*
        ]
    };
}

#[rustfmt::skip]
const CARGO_METADATA: Spec = Spec {
    short: "qvF:",
    long: cargo_common!(
        "format-version=", "no-deps", "features=", "all-features", "no-default-features",
        "filter-platform=",
    ),
};

#[rustfmt::skip]
const CARGO_TREE: Spec = Spec {
    short: "qvp:e:i:df:F:",
    long: cargo_common!(
        "package=", "workspace", "exclude=", "features=", "all-features", "no-default-features",
        "target=", "edges=", "invert=", "prune=", "depth=", "prefix=", "no-dedupe", "duplicates",
        "charset=", "format=",
    ),
};

const CARGO_LOCATE: Spec = Spec {
    short: "qv",
    long: cargo_common!("workspace", "message-format="),
};

#[cfg(test)]
mod table_tests {
    use super::super::SYSTEM_DIRS;
    use super::*;

    #[test]
    fn each_program_is_listed_once() {
        for (at, (name, _)) in TABLE.iter().enumerate() {
            assert!(
                TABLE[at + 1..].iter().all(|(other, _)| other != name),
                "{name}"
            );
        }
    }

    #[test]
    fn system_dirs_hold_no_trailing_slash() {
        assert!(SYSTEM_DIRS.iter().all(|d| !d.ends_with('/')));
    }
}
