//! Fail-closed analysis of shell commands: the one place troupe reads bash text.
//!
//! [`analyze`] parses a command line with a real shell parser (`brush-parser`) and lists every
//! simple command that would run — in lists and pipelines, in the bodies of compound commands, in
//! `$(…)`, backticks and `<(…)`, and behind wrappers such as `sudo`, `env`, `timeout`, `xargs`,
//! `find -exec` or `bash -c '…'` — as quote-removed words. Whatever it cannot pin down (a
//! command name that comes from an expansion, `eval`, `trap`, a function definition, a wrapper
//! option it does not know, a syntax error) is recorded as [`Unknown`]. Permission rules and the
//! read-only classifier both decide on this one [`Analysis`]:
//!
//! - a Bash deny (or ask) rule matches a command whose words it matches, in any spelling of the
//!   program (`rm`, `"rm"`, `\rm`, `/bin/rm`, `env rm`), and matches every analysis with an unknown;
//! - an allow rule must match every command, and never grants an analysis with an unknown;
//! - a command line is read-only only when every command is in the read-only table with options
//!   the table knows, nothing writes a file through a redirection, and nothing is unknown.
//!
//! Program names: for deny rules a path's basename is the program (`/bin/rm` is `rm`, and so is
//! `./rm`, which errs towards refusing). For allow rules and the read-only table a path counts as
//! the program only in a standard system directory (`/bin`, `/usr/bin`, …); `./ls` is just that
//! path, so only a rule that names it grants it.

mod builtins;
mod depth;
mod find;
mod git;
mod git_objects;
mod options;
mod pattern;
mod read_only;
mod redirect;
mod render;
mod walk;
mod words;
mod wrapper_table;
mod wrappers;

#[cfg(test)]
mod tests;

pub use git_objects::reads_objects as git_reads_objects;
pub use pattern::{Pattern, PatternKind, Purpose};
pub use read_only::is_read_only_command;

use std::fmt;

/// Parses `command` and lists the simple commands it would run and what could not be analysed.
pub fn analyze(command: &str) -> Analysis {
    walk::analyze(command)
}

/// What a command line runs, as far as the analysis can tell.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Analysis {
    /// Every simple command that would run, outer wrappers before the commands they run.
    pub commands: Vec<Command>,
    /// Everything the analysis could not pin down; any entry makes the whole line unknown.
    pub unknown: Vec<Unknown>,
}

impl Analysis {
    /// Whether every command was pinned down (nothing unknown).
    pub fn is_understood(&self) -> bool {
        self.unknown.is_empty()
    }

    /// Whether the whole line only reads: see [`is_read_only_command`].
    pub fn is_read_only(&self) -> bool {
        read_only::analysis_is_read_only(self)
    }

    /// The reasons the line is unknown, joined for a message (empty when it is understood).
    pub fn unknown_reasons(&self) -> String {
        self.unknown
            .iter()
            .map(Unknown::to_string)
            .collect::<Vec<_>>()
            .join("; ")
    }
}

/// One simple command that would run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Command {
    /// Leading `NAME=value` assignments (also those given to `env` or `sudo`).
    pub assignments: Vec<Word>,
    /// The words after quote removal, program first; empty for a bare assignment or redirection.
    pub words: Vec<Word>,
    /// Redirections as tokens (`>`, `b.txt`, `2>&1`), so exact rules can name them.
    pub redirections: Vec<Word>,
    /// Whether the command writes a file through a redirection.
    pub redirect: Redirect,
    /// Whether the command runs its own program or wraps the next command in the list.
    pub layer: Layer,
    /// What started the command.
    pub origin: Origin,
    /// The command as written (for a wrapped command, the part of the wrapper's words it is).
    pub text: String,
}

impl Command {
    /// The program as allow rules and the read-only table see it: a bare name as written, or the
    /// basename of a path in a standard system directory (`/usr/bin/git` is `git`). `None` for
    /// any other path (`./ls`), a dynamic word, or a command without words.
    pub fn program(&self) -> Option<&str> {
        let first = self.words.first()?;
        if first.kind != WordKind::Static {
            return None;
        }
        match first.text.rsplit_once('/') {
            None => Some(&first.text),
            Some((dir, name)) if SYSTEM_DIRS.contains(&dir) && !name.is_empty() => Some(name),
            Some(_) => None,
        }
    }

    /// The program as deny rules see it: the basename of whatever path names it.
    pub fn program_name(&self) -> Option<&str> {
        let first = self.words.first()?;
        match first.text.rsplit_once('/') {
            None => Some(&first.text),
            Some((_, name)) => Some(name),
        }
    }

    /// The command as one line, words quoted where needed: what an exact rule would say.
    pub fn line(&self) -> String {
        render::line(
            self.assignments.iter().chain(&self.words),
            &self.redirections,
        )
    }

    /// Assignments, words and redirection tokens in order.
    pub fn tokens(&self) -> impl Iterator<Item = &Word> {
        self.assignments
            .iter()
            .chain(&self.words)
            .chain(&self.redirections)
    }
}

/// Directories whose programs are the standard ones their names say.
pub const SYSTEM_DIRS: [&str; 6] = [
    "/bin",
    "/usr/bin",
    "/sbin",
    "/usr/sbin",
    "/usr/local/bin",
    "/usr/local/sbin",
];

/// One word of a command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Word {
    /// The text after quote removal for a static word; the word as written otherwise.
    pub text: String,
    /// Whether the shell will expand it into something the analysis cannot know.
    pub kind: WordKind,
}

impl Word {
    /// A static word.
    pub fn fixed(text: impl Into<String>) -> Word {
        Word {
            text: text.into(),
            kind: WordKind::Static,
        }
    }
}

/// Whether a word is known before the shell runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WordKind {
    /// Quote removal is all that happens: the text is what the program gets.
    Static,
    /// Expands at run time, but to words that start with fixed text other than `-`
    /// (`src/*.rs`, `"$dir"` after `out/`), so never to an option.
    DynamicOperand,
    /// Expands at run time to anything, options and several words included (`$x`, `*`, `-$n`).
    Dynamic,
}

/// Whether a command writes a file through a redirection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Redirect {
    /// No output redirection, or only to `/dev/null`, the standard streams or another descriptor.
    None,
    /// Output (or read-write) redirected to a file.
    File,
}

/// Whether a command runs the program it names or hands another command to it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layer {
    /// Runs its program with its arguments.
    Program,
    /// A wrapper (`sudo`, `timeout`, `bash -c`): the commands it runs follow it in the list.
    Wrapper,
}

/// What started a command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// The shell, from the command line (directly, in a compound command or a substitution).
    Shell,
    /// The wrapper before it in the list.
    Wrapper,
    /// `xargs`, which appends arguments it reads from its input.
    Xargs,
}

/// Something the analysis could not pin down.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unknown {
    /// The command or word concerned, as written.
    pub text: String,
    /// Why it is unknown.
    pub reason: UnknownReason,
}

impl fmt::Display for Unknown {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "`{}`: {}", shorten(&self.text), self.reason)
    }
}

/// Why part of a command line could not be analysed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UnknownReason {
    /// The parser rejected the line (or it is unterminated).
    Syntax(String),
    /// Nesting or recursion deeper than the analysis follows.
    TooDeep,
    /// The command name is not a static word (an expansion, substitution, glob or brace).
    DynamicCommandName,
    /// A builtin that runs text as code or changes what names run (`eval`, `trap`, `alias`…).
    RunsText(String),
    /// A shell function definition, which makes any later name run its body.
    FunctionDefinition,
    /// `exec` without a command, which only rearranges file descriptors.
    ExecRedirection,
    /// A wrapper option the analysis does not know, so it cannot tell what the wrapper runs.
    WrapperOption {
        /// The wrapper.
        wrapper: String,
        /// The option as written.
        option: String,
    },
    /// A wrapper whose command comes from an expansion, a file or its input.
    WrapperInput(String),
    /// An expansion that can run commands by itself (arithmetic on variables, `${!x}`, `${x@P}`).
    Expansion(String),
    /// An assignment to a variable that names code other programs run (`BASH_ENV`, `GIT_PAGER`…).
    SensitiveVariable(String),
    /// A git option that makes git run a program named in its value.
    GitConfig(String),
}

impl fmt::Display for UnknownReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            UnknownReason::Syntax(error) => {
                write!(f, "the shell syntax could not be parsed ({error})")
            }
            UnknownReason::TooDeep => f.write_str("nested deeper than the analysis follows"),
            UnknownReason::DynamicCommandName => f.write_str(
                "the command name is not a plain word, so what runs is only known at run time",
            ),
            UnknownReason::RunsText(builtin) => {
                write!(f, "`{builtin}` runs code the analysis cannot see")
            }
            UnknownReason::FunctionDefinition => {
                f.write_str("a function definition makes a later name run its body")
            }
            UnknownReason::ExecRedirection => {
                f.write_str("`exec` without a command rearranges file descriptors")
            }
            UnknownReason::WrapperOption { wrapper, option } => {
                write!(
                    f,
                    "`{wrapper}` option `{option}` is not one the analysis understands"
                )
            }
            UnknownReason::WrapperInput(what) => f.write_str(what),
            UnknownReason::Expansion(what) => write!(f, "{what} can run commands"),
            UnknownReason::SensitiveVariable(name) => {
                write!(
                    f,
                    "setting {name} makes programs run code the analysis cannot see"
                )
            }
            UnknownReason::GitConfig(option) => {
                write!(f, "git `{option}` can make git run another program")
            }
        }
    }
}

/// Cuts long text (heredocs, scripts) for messages.
fn shorten(text: &str) -> String {
    const LIMIT: usize = 80;
    match text.char_indices().nth(LIMIT) {
        Some((end, _)) => format!("{}…", &text[..end]),
        None => text.to_string(),
    }
}
