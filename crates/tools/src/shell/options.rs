//! Command-line options the way getopt reads them, against a table of the options a program
//! knows: combined short flags are taken apart (`-uo FILE` is `-u` and `-o FILE`), values are
//! found attached or in the next word, and anything not in the table is an error.

use super::{Word, WordKind};

/// The options a program accepts (or, for the read-only table, the ones that keep it read-only).
#[derive(Debug, Clone, Copy)]
pub(super) struct Spec {
    /// getopt style: a letter alone takes no value, `x:` takes one (attached or the next word),
    /// `x::` takes an optional attached one; `#` accepts `-NUM` (as in `head -5`).
    pub short: &'static str,
    /// Without the dashes: `name` takes no value, `name=` takes one (`--name=v` or `--name v`),
    /// `name?` takes an optional attached one (`--name` or `--name=v`). No abbreviations: GNU
    /// tools accept unambiguous prefixes, so an abbreviation is an unknown option here.
    pub long: &'static [&'static str],
}

/// Whether options may follow operands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Order {
    /// GNU style: options anywhere until `--`.
    Permute,
    /// POSIX style, used by wrappers: the first operand ends the options (`timeout 5 rm -f`).
    StopAtOperand,
}

/// One option found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Opt {
    /// `-u` or `--user`.
    pub name: String,
    /// Its value, when it took one.
    pub value: Option<Word>,
}

/// What the words held.
#[derive(Debug, Default)]
pub(super) struct Parsed<'w> {
    /// The options, in order.
    pub options: Vec<Opt>,
    /// The operands; with [`Order::StopAtOperand`] everything from the first one on.
    pub operands: Vec<&'w Word>,
}

impl Parsed<'_> {
    /// Whether an option of one of these names was given.
    pub fn has(&self, names: &[&str]) -> bool {
        self.options
            .iter()
            .any(|o| names.contains(&o.name.as_str()))
    }

    /// The value of the last option of one of these names.
    pub fn value(&self, names: &[&str]) -> Option<&Word> {
        self.options
            .iter()
            .rev()
            .find(|o| names.contains(&o.name.as_str()))
            .and_then(|o| o.value.as_ref())
    }
}

/// Why the words do not fit the spec.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum OptionError {
    /// An option the spec does not list (or an abbreviation of one).
    Unknown(String),
    /// A value-taking option at the end of the words.
    MissingValue(String),
    /// A word that expands at run time where an option could be.
    Dynamic(String),
}

impl OptionError {
    /// The option or word concerned.
    pub fn text(&self) -> &str {
        match self {
            OptionError::Unknown(text)
            | OptionError::MissingValue(text)
            | OptionError::Dynamic(text) => text,
        }
    }
}

/// How a short option letter is declared.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ShortKind {
    Flag,
    Value,
    OptionalValue,
}

fn short_kind(spec: &str, letter: char) -> Option<ShortKind> {
    let mut chars = spec.chars().peekable();
    while let Some(c) = chars.next() {
        let mut colons = 0;
        while chars.peek() == Some(&':') {
            chars.next();
            colons += 1;
        }
        if c == letter && c != ':' && c != '#' {
            return Some(match colons {
                0 => ShortKind::Flag,
                1 => ShortKind::Value,
                _ => ShortKind::OptionalValue,
            });
        }
    }
    None
}

/// Reads `args` against `spec`.
pub(super) fn parse<'w>(
    spec: &Spec,
    args: &'w [Word],
    order: Order,
) -> Result<Parsed<'w>, OptionError> {
    let mut parsed = Parsed::default();
    let mut i = 0;
    while i < args.len() {
        let arg = &args[i];
        i += 1;
        if arg.kind == WordKind::Dynamic {
            return Err(OptionError::Dynamic(arg.text.clone()));
        }
        let text = arg.text.as_str();
        let is_option = arg.kind == WordKind::Static && text.starts_with('-') && text != "-";
        if !is_option {
            parsed.operands.push(arg);
            if order == Order::StopAtOperand {
                parsed.operands.extend(&args[i..]);
                return Ok(parsed);
            }
            continue;
        }
        if text == "--" {
            parsed.operands.extend(&args[i..]);
            return Ok(parsed);
        }
        if let Some(long) = text.strip_prefix("--") {
            i = long_option(spec, long, args, i, &mut parsed)?;
            continue;
        }
        let cluster = &text[1..];
        if spec.short.contains('#') && cluster.chars().all(|c| c.is_ascii_digit()) {
            parsed.options.push(Opt {
                name: "-NUM".into(),
                value: Some(Word::fixed(cluster)),
            });
            continue;
        }
        i = short_cluster(spec, cluster, args, i, &mut parsed)?;
    }
    Ok(parsed)
}

/// Reads `--name[=value]`; returns the index of the next unread word.
fn long_option(
    spec: &Spec,
    long: &str,
    args: &[Word],
    mut i: usize,
    parsed: &mut Parsed<'_>,
) -> Result<usize, OptionError> {
    let (name, attached) = match long.split_once('=') {
        Some((name, value)) => (name, Some(value)),
        None => (long, None),
    };
    let full = format!("--{name}");
    let declared = spec.long.iter().find_map(|entry| {
        let (entry_name, kind) = match entry.as_bytes().last() {
            Some(b'=') => (&entry[..entry.len() - 1], ShortKind::Value),
            Some(b'?') => (&entry[..entry.len() - 1], ShortKind::OptionalValue),
            _ => (*entry, ShortKind::Flag),
        };
        (entry_name == name).then_some(kind)
    });
    let value = match (declared, attached) {
        (None, _) | (Some(ShortKind::Flag), Some(_)) => {
            return Err(OptionError::Unknown(format!("--{long}")))
        }
        (Some(ShortKind::Flag | ShortKind::OptionalValue), None) => None,
        (Some(ShortKind::Value | ShortKind::OptionalValue), Some(value)) => {
            Some(Word::fixed(value))
        }
        (Some(ShortKind::Value), None) => {
            let next = args
                .get(i)
                .ok_or_else(|| OptionError::MissingValue(full.clone()))?;
            i += 1;
            Some(next.clone())
        }
    };
    parsed.options.push(Opt { name: full, value });
    Ok(i)
}

/// Reads `-abc`, `-ofile`, `-o file`; returns the index of the next unread word.
fn short_cluster(
    spec: &Spec,
    cluster: &str,
    args: &[Word],
    mut i: usize,
    parsed: &mut Parsed<'_>,
) -> Result<usize, OptionError> {
    for (at, letter) in cluster.char_indices() {
        let name = format!("-{letter}");
        let rest = &cluster[at + letter.len_utf8()..];
        match short_kind(spec.short, letter) {
            None => return Err(OptionError::Unknown(name)),
            Some(ShortKind::Flag) => parsed.options.push(Opt { name, value: None }),
            Some(ShortKind::OptionalValue) => {
                let value = (!rest.is_empty()).then(|| Word::fixed(rest));
                parsed.options.push(Opt { name, value });
                return Ok(i);
            }
            Some(ShortKind::Value) => {
                let value = if rest.is_empty() {
                    let next = args
                        .get(i)
                        .ok_or_else(|| OptionError::MissingValue(name.clone()))?;
                    i += 1;
                    next.clone()
                } else {
                    Word::fixed(rest)
                };
                parsed.options.push(Opt {
                    name,
                    value: Some(value),
                });
                return Ok(i);
            }
        }
    }
    Ok(i)
}
