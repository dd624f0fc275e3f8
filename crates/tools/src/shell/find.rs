//! `find`'s expression: the commands its `-exec` actions run, and whether the rest only reads.

use super::wrappers::{Inner, Peel};
use super::{Origin, UnknownReason, Word, WordKind};

/// Actions that run a command given as the following words, up to `;` or `+`.
const EXEC_ACTIONS: [&str; 4] = ["-exec", "-execdir", "-ok", "-okdir"];

/// Leading options: `-H`, `-L`, `-P` alone; `-D` and `-O` take a value.
const LEADING_FLAGS: [&str; 3] = ["-H", "-L", "-P"];

/// Tests, options and actions that take no argument and change nothing.
#[rustfmt::skip]
const NULLARY: &[&str] = &[
    "-print", "-print0", "-ls", "-prune", "-quit", "-true", "-false", "-empty", "-readable",
    "-writable", "-executable", "-nouser", "-nogroup", "-depth", "-d", "-follow", "-xdev",
    "-mount", "-noleaf", "-ignore_readdir_race", "-noignore_readdir_race", "-daystart", "-warn",
    "-nowarn", "-not", "-a", "-and", "-o", "-or", "!", "(", ")", ",",
];

/// Tests and options that take one argument and change nothing.
#[rustfmt::skip]
const UNARY: &[&str] = &[
    "-name", "-iname", "-path", "-ipath", "-wholename", "-iwholename", "-regex", "-iregex",
    "-lname", "-ilname", "-type", "-xtype", "-size", "-perm", "-user", "-group", "-uid", "-gid",
    "-links", "-inum", "-samefile", "-newer", "-anewer", "-cnewer", "-mtime", "-mmin", "-atime",
    "-amin", "-ctime", "-cmin", "-used", "-maxdepth", "-mindepth", "-fstype", "-regextype",
    "-printf", "-context", "-files0-from",
];

/// The commands `find … -exec CMD … ;` runs; `NotWrapper` when it has no exec action.
pub(super) fn exec_commands(args: &[Word]) -> Peel {
    let mut inners = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let word = &args[i];
        i += 1;
        if !(word.kind == WordKind::Static && EXEC_ACTIONS.contains(&word.text.as_str())) {
            continue;
        }
        let start = i;
        let end = args[start..]
            .iter()
            .position(|w| w.kind == WordKind::Static && (w.text == ";" || w.text == "+"));
        let Some(end) = end.map(|offset| start + offset) else {
            return Peel::Unknown(UnknownReason::WrapperInput(format!(
                "`find {}` has no terminating `;` or `+`",
                word.text
            )));
        };
        if end == start {
            return Peel::Unknown(UnknownReason::WrapperInput(format!(
                "`find {}` names no command",
                word.text
            )));
        }
        inners.push(Inner {
            assignments: Vec::new(),
            words: args[start..end].to_vec(),
            origin: Origin::Wrapper,
        });
        i = end + 1;
    }
    match inners.is_empty() {
        true => Peel::NotWrapper,
        false => Peel::Runs(inners),
    }
}

/// Whether `find ARGS` only reads: every word of its expression is a known test or a harmless
/// action (no `-exec`, `-delete`, `-fprint`, `-fls`…), and nothing dynamic could become one.
pub(super) fn is_read_only(args: &[Word]) -> bool {
    let mut i = 0;
    // Leading options.
    while let Some(word) = args.get(i) {
        match word.text.as_str() {
            _ if word.kind != WordKind::Static => break,
            flag if LEADING_FLAGS.contains(&flag) => i += 1,
            "-D" | "-O" => i += 2,
            flag if flag.starts_with("-O") && flag.len() > 2 => i += 1,
            _ => break,
        }
    }
    // Starting points: everything before the expression begins.
    while let Some(word) = args.get(i) {
        let starts_expression = word.kind != WordKind::DynamicOperand
            && (word.kind == WordKind::Dynamic
                || word.text.starts_with('-')
                || word.text == "("
                || word.text == "!");
        if starts_expression {
            break;
        }
        i += 1;
    }
    while let Some(word) = args.get(i) {
        if word.kind != WordKind::Static {
            return false;
        }
        let text = word.text.as_str();
        let takes_argument =
            UNARY.contains(&text) || (text.starts_with("-newer") && text.len() == "-newerXY".len());
        if takes_argument {
            if args.get(i + 1).is_none() {
                return false;
            }
            i += 2;
        } else if NULLARY.contains(&text) {
            i += 1;
        } else {
            return false;
        }
    }
    true
}
