//! Commands that run other commands (`sudo`, `env`, `timeout`, `xargs`, `bash -c`, `find -exec`…):
//! what they run, read with the options each one has, so the inner command is judged too.
//! An option a wrapper table does not list makes the command unknown, because it might change
//! where the command starts.

use super::options::{self, Order, Spec};
use super::wrapper_table::{Wrapper, SHELLS, SHELL_FLAGS, SHELL_LONG, SU, WATCH, WRAPPERS, XARGS};
use super::{find, git, Origin, UnknownReason, Word, WordKind};

/// A command a wrapper runs.
#[derive(Debug, Clone)]
pub(super) struct Inner {
    /// `NAME=value` words given to the wrapper for the command (`env FOO=1 cmd`).
    pub assignments: Vec<Word>,
    /// The command's words, program first.
    pub words: Vec<Word>,
    /// Who runs it.
    pub origin: Origin,
}

/// What a command runs besides its own program.
#[derive(Debug)]
pub(super) enum Peel {
    /// Not a wrapper: it runs the program it names.
    NotWrapper,
    /// A wrapper given no command this time (`env`, `command -v ls`, `sudo -l`).
    NoCommand,
    /// It runs these commands.
    Runs(Vec<Inner>),
    /// It runs this text as a shell script (`bash -c '…'`, `su -c`, `watch`).
    Script(String),
    /// What it runs cannot be told.
    Unknown(UnknownReason),
}

/// What `name` (a program's basename) run with `args` runs besides itself.
pub(super) fn peel(name: &str, args: &[Word]) -> Peel {
    if SHELLS.contains(&name) {
        return shell(name, args);
    }
    match name {
        "xargs" => xargs(args),
        "find" => find::exec_commands(args),
        "git" => git::runs(args),
        "watch" => watch(args),
        "su" | "runuser" => su(name, args),
        _ => match WRAPPERS.iter().find(|w| w.name == name) {
            Some(wrapper) => generic(wrapper, args),
            None => Peel::NotWrapper,
        },
    }
}

fn option_unknown(wrapper: &str, option: &str) -> Peel {
    Peel::Unknown(UnknownReason::WrapperOption {
        wrapper: wrapper.to_string(),
        option: option.to_string(),
    })
}

fn generic(wrapper: &Wrapper, args: &[Word]) -> Peel {
    let parsed = match options::parse(&wrapper.spec, args, Order::StopAtOperand) {
        Ok(parsed) => parsed,
        Err(error) => return option_unknown(wrapper.name, error.text()),
    };
    if let Some(opt) = parsed
        .options
        .iter()
        .find(|o| wrapper.opaque.contains(&o.name.as_str()))
    {
        return option_unknown(wrapper.name, &opt.name);
    }
    if parsed.has(wrapper.no_command) {
        return Peel::NoCommand;
    }
    let mut rest: Vec<Word> = parsed.operands.into_iter().cloned().collect();
    // `env -` is `env -i`.
    if wrapper.name == "env"
        && rest
            .first()
            .is_some_and(|w| w.text == "-" && w.kind == WordKind::Static)
    {
        rest.remove(0);
    }
    if rest.len() < wrapper.leading {
        return Peel::NoCommand;
    }
    if rest[..wrapper.leading]
        .iter()
        .any(|w| w.kind == WordKind::Dynamic)
    {
        return Peel::Unknown(UnknownReason::WrapperInput(format!(
            "an argument of `{}` comes from an expansion, so where its command starts is unknown",
            wrapper.name
        )));
    }
    let mut rest = rest.split_off(wrapper.leading);
    if wrapper.name == "flock" {
        // `flock FILE -c CMD`: the option comes after the file.
        let command = match rest.first().map(|w| w.text.as_str()) {
            Some("-c" | "--command") => rest.get(1).cloned(),
            Some(text) => text.strip_prefix("--command=").map(Word::fixed),
            None => None,
        };
        if let Some(command) = command {
            return script(wrapper.name, &command);
        }
    }
    let mut assignments = Vec::new();
    if wrapper.assignments {
        while rest.first().is_some_and(is_assignment) {
            assignments.push(rest.remove(0));
        }
    }
    if wrapper.name == "flock" {
        if let Some(command) = parsed_value(&wrapper.spec, args, &["-c", "--command"]) {
            return script(wrapper.name, &command);
        }
    }
    if rest.is_empty() {
        return Peel::NoCommand;
    }
    Peel::Runs(vec![Inner {
        assignments,
        words: rest,
        origin: Origin::Wrapper,
    }])
}

/// The value of an option, parsing `args` again (only for the rare wrappers that need it).
fn parsed_value(spec: &Spec, args: &[Word], names: &[&str]) -> Option<Word> {
    let parsed = options::parse(spec, args, Order::StopAtOperand).ok()?;
    parsed.value(names).cloned()
}

/// Whether a static word is a `NAME=value` assignment.
pub(super) fn is_assignment(word: &Word) -> bool {
    let Some((name, _)) = word.text.split_once('=') else {
        return false;
    };
    word.kind != WordKind::Dynamic
        && !name.is_empty()
        && !name.starts_with(|c: char| c.is_ascii_digit())
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Command text to be analysed as a script; a dynamic one is unknown.
fn script(wrapper: &str, text: &Word) -> Peel {
    match text.kind {
        WordKind::Static => Peel::Script(text.text.clone()),
        WordKind::Dynamic | WordKind::DynamicOperand => Peel::Unknown(UnknownReason::WrapperInput(
            format!("the command text given to `{wrapper}` comes from an expansion"),
        )),
    }
}

fn xargs(args: &[Word]) -> Peel {
    let parsed = match options::parse(&XARGS, args, Order::StopAtOperand) {
        Ok(parsed) => parsed,
        Err(error) => return option_unknown("xargs", error.text()),
    };
    let words: Vec<Word> = match parsed.operands.is_empty() {
        // With no command, xargs runs `echo`.
        true => vec![Word::fixed("echo")],
        false => parsed.operands.into_iter().cloned().collect(),
    };
    Peel::Runs(vec![Inner {
        assignments: Vec::new(),
        words,
        origin: Origin::Xargs,
    }])
}

fn watch(args: &[Word]) -> Peel {
    let parsed = match options::parse(&WATCH, args, Order::StopAtOperand) {
        Ok(parsed) => parsed,
        Err(error) => return option_unknown("watch", error.text()),
    };
    if parsed.operands.is_empty() {
        return Peel::NoCommand;
    }
    let words: Vec<Word> = parsed.operands.into_iter().cloned().collect();
    if parsed
        .options
        .iter()
        .any(|o| o.name == "-x" || o.name == "--exec")
    {
        return Peel::Runs(vec![Inner {
            assignments: Vec::new(),
            words,
            origin: Origin::Wrapper,
        }]);
    }
    // watch joins its words with spaces and hands them to `sh -c`.
    if words.iter().any(|w| w.kind != WordKind::Static) {
        return Peel::Unknown(UnknownReason::WrapperInput(
            "the command text given to `watch` comes from an expansion".into(),
        ));
    }
    let text: Vec<&str> = words.iter().map(|w| w.text.as_str()).collect();
    Peel::Script(text.join(" "))
}

fn su(name: &str, args: &[Word]) -> Peel {
    let parsed = match options::parse(&SU, args, Order::Permute) {
        Ok(parsed) => parsed,
        Err(error) => return option_unknown(name, error.text()),
    };
    match parsed.value(&["-c", "--command", "--session-command"]) {
        Some(command) => script(name, command),
        None => Peel::Unknown(UnknownReason::WrapperInput(format!(
            "`{name}` without -c starts a shell that reads commands from its input"
        ))),
    }
}

/// `bash -c 'text'` runs the text; a shell given a script file or its input runs what the
/// analysis cannot see.
fn shell(name: &str, args: &[Word]) -> Peel {
    let mut command_flag = false;
    let mut i = 0;
    while i < args.len() {
        let word = &args[i];
        if word.kind == WordKind::Dynamic {
            if command_flag {
                // The command text itself (`sh -c "$CMD"`): judged below.
                break;
            }
            return option_unknown(name, &word.text);
        }
        let text = word.text.as_str();
        if word.kind != WordKind::Static || !(text.starts_with('-') || text.starts_with('+')) {
            break;
        }
        i += 1;
        if text == "--" || text == "-" {
            break;
        }
        if text.starts_with("--") {
            if !SHELL_LONG.contains(&text) {
                return option_unknown(name, text);
            }
            continue;
        }
        let letters = &text[1..];
        if letters.is_empty() {
            break;
        }
        for letter in letters.chars() {
            match letter {
                'c' => command_flag = true,
                // `-o option` and `-O shopt` take the next word.
                'o' | 'O' => i += 1,
                's' => {
                    return Peel::Unknown(UnknownReason::WrapperInput(format!(
                        "`{name} -s` runs commands from its input"
                    )))
                }
                letter if SHELL_FLAGS.contains(letter) => {}
                _ => return option_unknown(name, text),
            }
        }
    }
    match (command_flag, args.get(i)) {
        (true, Some(text)) => script(name, text),
        (true, None) => option_unknown(name, "-c"),
        (false, Some(_)) => Peel::Unknown(UnknownReason::WrapperInput(format!(
            "`{name}` runs a script file the analysis cannot see"
        ))),
        (false, None) => Peel::Unknown(UnknownReason::WrapperInput(format!(
            "`{name}` without -c runs commands from its input"
        ))),
    }
}

/// Whether a wrapper layer itself only reads (its inner commands are judged on their own).
pub(super) fn is_read_only(name: &str, args: &[Word]) -> bool {
    if SHELLS.contains(&name) {
        return shell_is_read_only(args);
    }
    let (spec, allowed): (&Spec, &[&str]) = match name {
        "xargs" => (
            &XARGS,
            &[
                "-0",
                "--null",
                "-d",
                "--delimiter",
                "-n",
                "--max-args",
                "-L",
                "--max-lines",
                "-I",
                "-i",
                "--replace",
                "-r",
                "--no-run-if-empty",
                "-t",
                "--verbose",
                "-x",
                "--exit",
                "-s",
                "--max-chars",
                "-E",
                "-e",
                "--eof",
            ],
        ),
        "env" | "command" | "builtin" | "exec" | "nice" | "timeout" | "stdbuf" | "setsid"
        | "time" => {
            match WRAPPERS.iter().find(|w| w.name == name) {
                // `time -o FILE` writes its report to a file.
                Some(wrapper) => (
                    &wrapper.spec,
                    if name == "time" {
                        &[
                            "-p",
                            "--portability",
                            "-v",
                            "--verbose",
                            "-q",
                            "--quiet",
                            "-f",
                            "--format",
                        ]
                    } else {
                        ANY_OPTION
                    },
                ),
                None => return false,
            }
        }
        _ => return false,
    };
    match options::parse(spec, args, Order::StopAtOperand) {
        Ok(parsed) => {
            allowed == ANY_OPTION
                || parsed
                    .options
                    .iter()
                    .all(|o| allowed.contains(&o.name.as_str()))
        }
        Err(_) => false,
    }
}

/// Marks "every option the wrapper table lists is fine".
const ANY_OPTION: &[&str] = &["*"];

/// `bash -c '…'` reads only if its options change nothing but error handling and tracing.
fn shell_is_read_only(args: &[Word]) -> bool {
    let mut i = 0;
    while let Some(word) = args.get(i) {
        if word.kind != WordKind::Static || !word.text.starts_with(['-', '+']) {
            return true;
        }
        let letters = &word.text[1..];
        if letters == "o" {
            let safe = [
                "pipefail", "errexit", "nounset", "xtrace", "noglob", "posix",
            ];
            if !args
                .get(i + 1)
                .is_some_and(|v| safe.contains(&v.text.as_str()))
            {
                return false;
            }
            i += 2;
            continue;
        }
        if letters.is_empty() || !letters.chars().all(|c| "ceuxfv".contains(c)) {
            return false;
        }
        if letters.contains('c') {
            return true;
        }
        i += 1;
    }
    true
}
