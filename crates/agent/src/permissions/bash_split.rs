//! Splits a shell command line into the simple commands it runs, so rules can judge each one.
//!
//! This is not a shell parser: it knows quoting, the list and pipe operators, command
//! substitution, subshells, comments and commands that run commands (`sudo`, `xargs`,
//! `bash -c`, `VAR=1 cmd`) — enough that `ls && rm -rf x`, `echo $(rm -rf x)`, `(cd a; rm b)` and
//! `sudo rm b` each yield an `rm` part. Whatever it cannot make sense of stays inside some part,
//! where no narrow allow rule will match it, so a misparse costs a question, never a free pass.

/// One simple command found in a command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Part {
    /// The command text, trimmed, with leading grouping keywords (`if`, `then`, `{`, …) removed.
    pub text: String,
    /// Whether the command sends its output to a file.
    pub redirect: Redirect,
}

/// Whether a simple command writes its output to a file through a redirection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Redirect {
    /// No output redirection, or only to `/dev/null` or another file descriptor.
    None,
    /// `>` or `>>` to a file: the command writes even if the program itself only reads.
    File,
}

/// Whether the whole command line was well formed as far as the splitter can tell.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Syntax {
    /// Every quote, substitution and subshell was closed.
    Complete,
    /// Something was left open, so the parts may not be what the shell would run.
    Unterminated,
}

/// The simple commands of one command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Split {
    /// Every simple command, including those inside `$(…)`, backticks and subshells.
    pub parts: Vec<Part>,
    /// Whether the line was well formed.
    pub syntax: Syntax,
}

/// Splits `command` into its simple commands.
pub fn split_command(command: &str) -> Split {
    let chars: Vec<char> = command.chars().collect();
    let mut out = Split {
        parts: Vec::new(),
        syntax: Syntax::Complete,
    };
    scan(&chars, Emit::Commands, &mut out);
    out
}

/// Whether a scanned stretch of text is itself commands or only a place substitutions hide in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Emit {
    /// A command list: its simple commands become parts.
    Commands,
    /// Arithmetic `$((…))`: not commands, but `$(…)` inside it still runs.
    SubstitutionsOnly,
}

/// Words that open or continue a compound command; stripped so `then rm x` is judged as `rm x`.
const LEADING_KEYWORDS: [&str; 10] = [
    "if", "then", "else", "elif", "do", "while", "until", "!", "{", "time",
];

/// Words that close a compound command and run nothing by themselves.
const CLOSING_KEYWORDS: [&str; 4] = ["fi", "done", "}", "esac"];

/// The part being collected.
struct Current {
    text: String,
    redirect: Redirect,
    /// The index of the first part of a subshell this command holds, so that a redirection
    /// after its closing `)` applies to the commands inside.
    group_start: Option<usize>,
}

impl Current {
    fn new() -> Self {
        Current {
            text: String::new(),
            redirect: Redirect::None,
            group_start: None,
        }
    }

    /// Whether nothing but grouping keywords has been seen, so `(` opens a subshell.
    fn at_command_start(&self) -> bool {
        strip_keywords(self.text.trim()).is_empty()
    }

    fn finish(&mut self, emit: Emit, out: &mut Split) {
        let text = strip_keywords(self.text.trim()).trim().to_string();
        let redirect = self.redirect;
        let group_start = self.group_start;
        *self = Current::new();
        if let Some(start) = group_start {
            // `(a; b) > log`: the redirection is the subshell's, so it writes for a and b.
            mark_redirect(out, start, redirect);
            if is_redirection_only(&text) {
                return;
            }
        }
        if emit == Emit::SubstitutionsOnly || text.is_empty() || closes_compound(&text, redirect) {
            return;
        }
        // `sudo rm x`, `FOO=1 rm x`, `bash -c "rm x"`: the wrapped command is a part of its own,
        // so a deny rule for `rm` sees it and an allow rule for the wrapper alone grants nothing.
        if let Some(inner) = wrapped_command(&text) {
            let start = out.parts.len();
            let chars: Vec<char> = inner.chars().collect();
            scan(&chars, Emit::Commands, out);
            mark_redirect(out, start, redirect);
        }
        out.parts.push(Part { text, redirect });
    }
}

fn mark_redirect(out: &mut Split, start: usize, redirect: Redirect) {
    if redirect == Redirect::File {
        for part in out.parts.iter_mut().skip(start) {
            part.redirect = Redirect::File;
        }
    }
}

/// Whether `text` is only redirections, such as `> log` or `2>/dev/null` after a `)`.
fn is_redirection_only(text: &str) -> bool {
    text.trim_start_matches(|c: char| c.is_ascii_digit() || c == '&')
        .starts_with(['>', '<'])
}

/// Whether `text` is a closing keyword, alone or with input redirections (`done < list`).
fn closes_compound(text: &str, redirect: Redirect) -> bool {
    CLOSING_KEYWORDS.iter().any(|keyword| {
        text.strip_prefix(keyword).is_some_and(|rest| {
            rest.is_empty()
                || (rest.starts_with(char::is_whitespace)
                    && redirect == Redirect::None
                    && is_redirection_only(rest.trim_start()))
        })
    })
}

/// Commands that run the command given in their arguments, with their options that take a value.
const WRAPPERS: [(&str, &[&str]); 10] = [
    (
        "sudo",
        &["-u", "-g", "-h", "-p", "-C", "-D", "-r", "-t", "-U"],
    ),
    ("doas", &["-u", "-C"]),
    ("nohup", &[]),
    ("exec", &["-a"]),
    ("command", &[]),
    ("builtin", &[]),
    ("env", &["-u", "-C", "-S"]),
    ("xargs", &["-I", "-L", "-n", "-P", "-d", "-E", "-s", "-a"]),
    ("timeout", &["-s", "-k", "--signal", "--kill-after"]),
    ("nice", &["-n"]),
];

/// Shells whose `-c` argument is a command line.
const SHELLS: [&str; 5] = ["sh", "bash", "zsh", "dash", "ksh"];

/// The command line another command runs: `rm x` for `sudo -u bob rm x`, `nohup rm x`,
/// `FOO=1 rm x`, `timeout 5 rm x`, `bash -c 'rm x'` or `eval "rm x"`.
fn wrapped_command(text: &str) -> Option<String> {
    let is_assignment = |word: &str| word.contains('=') && !word.starts_with(['=', '-']);
    let (first, rest) = next_word(text);
    let inner = if is_assignment(first) {
        let mut rest = rest;
        while is_assignment(next_word(rest).0) {
            rest = next_word(rest).1;
        }
        rest
    } else if first == "eval" {
        unquote(rest)
    } else if SHELLS.contains(&first) {
        let mut rest = rest;
        loop {
            let (word, after) = next_word(rest);
            match word {
                "-c" => break unquote(after),
                flag if flag.starts_with('-') => rest = after,
                _ => return None,
            }
        }
    } else {
        let (_, value_flags) = WRAPPERS.iter().find(|(name, _)| *name == first)?;
        let mut rest = rest;
        loop {
            let (word, after) = next_word(rest);
            let is_option = word.starts_with('-')
                || word.contains('=')
                // `timeout 5 …`, `nice 10 …`: a leading number is the wrapper's own.
                || (!word.is_empty() && word.trim_end_matches(['s', 'm', 'h', 'd']).parse::<f64>().is_ok());
            match (is_option, value_flags.contains(&word)) {
                (true, true) => rest = next_word(after).1,
                (true, false) => rest = after,
                (false, _) => break rest,
            }
        }
    };
    let inner = inner.trim();
    (!inner.is_empty()).then(|| inner.to_string())
}

/// The first whitespace-separated word of `text` and what follows it.
fn next_word(text: &str) -> (&str, &str) {
    let text = text.trim_start();
    let end = text.find(char::is_whitespace).unwrap_or(text.len());
    (&text[..end], &text[end..])
}

/// Removes one layer of matching quotes around a whole argument.
fn unquote(text: &str) -> &str {
    let text = text.trim();
    for quote in ['"', '\''] {
        if let Some(inner) = text.strip_prefix(quote).and_then(|t| t.strip_suffix(quote)) {
            return inner;
        }
    }
    text
}

fn strip_keywords(mut text: &str) -> &str {
    'outer: loop {
        for keyword in LEADING_KEYWORDS {
            if text == keyword {
                return "";
            }
            if let Some(rest) = text.strip_prefix(keyword) {
                if rest.starts_with(char::is_whitespace) {
                    text = rest.trim_start();
                    continue 'outer;
                }
            }
        }
        return text;
    }
}

fn scan(chars: &[char], emit: Emit, out: &mut Split) {
    let mut cur = Current::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        match c {
            '\\' => {
                cur.text.extend(&chars[i..(i + 2).min(chars.len())]);
                i += 2;
            }
            '\'' => {
                let end = match chars[i + 1..].iter().position(|&c| c == '\'') {
                    Some(offset) => i + 1 + offset,
                    None => unterminated(out, chars.len() - 1),
                };
                cur.text.extend(&chars[i..=end]);
                i = end + 1;
            }
            '"' => {
                let end = double_quote_end(chars, i, out);
                cur.text.extend(&chars[i..=end]);
                i = end + 1;
            }
            '`' => {
                let end = backtick_end(chars, i, out);
                scan(&chars[i + 1..end.max(i + 1)], Emit::Commands, out);
                cur.text.extend(&chars[i..=end]);
                i = end + 1;
            }
            '$' | '<' | '>' if next == Some('(') => {
                // `$(…)` runs commands; `$((…))` is arithmetic that may hold `$(…)`;
                // `<(…)` and `>(…)` are process substitutions.
                let end = paren_end(chars, i + 1, out);
                let arithmetic = c == '$' && chars.get(i + 2) == Some(&'(');
                let (inner, nested_emit) = if arithmetic {
                    (&chars[(i + 3).min(end)..end], Emit::SubstitutionsOnly)
                } else {
                    (&chars[i + 2..end.max(i + 2)], Emit::Commands)
                };
                scan(inner, nested_emit, out);
                cur.text.extend(&chars[i..=end.min(chars.len() - 1)]);
                i = end + 1;
            }
            '(' if cur.at_command_start() => {
                // A subshell: its commands are parts of their own.
                let end = paren_end(chars, i, out);
                cur.group_start.get_or_insert(out.parts.len());
                scan(&chars[i + 1..end.max(i + 1)], emit, out);
                i = end + 1;
            }
            '#' if cur.text.is_empty() || cur.text.ends_with(char::is_whitespace) => {
                // A comment runs nothing; skip to the end of the line.
                while i < chars.len() && chars[i] != '\n' {
                    i += 1;
                }
            }
            ';' | '\n' => {
                cur.finish(emit, out);
                i += 1;
            }
            '|' => {
                cur.finish(emit, out);
                i += if matches!(next, Some('|') | Some('&')) {
                    2
                } else {
                    1
                };
            }
            '&' if next == Some('&') => {
                cur.finish(emit, out);
                i += 2;
            }
            '&' if next == Some('>') || i > 0 && matches!(chars[i - 1], '>' | '<') => {
                // `&>file`, `2>&1`, `<&3`: a redirection, not a separator.
                cur.text.push(c);
                i += 1;
            }
            '&' => {
                // A background job: what follows is another command.
                cur.finish(emit, out);
                i += 1;
            }
            '>' => {
                if redirects_to_file(chars, i) {
                    cur.redirect = Redirect::File;
                }
                cur.text.push(c);
                i += 1;
            }
            _ => {
                cur.text.push(c);
                i += 1;
            }
        }
    }
    cur.finish(emit, out);
}

/// Records that the line was malformed and returns the index to stop at.
fn unterminated(out: &mut Split, last: usize) -> usize {
    out.syntax = Syntax::Unterminated;
    last
}

/// The index of the `"` closing the one at `start`, scanning substitutions inside it.
fn double_quote_end(chars: &[char], start: usize, out: &mut Split) -> usize {
    let mut i = start + 1;
    while i < chars.len() {
        match chars[i] {
            '\\' => i += 2,
            '"' => return i,
            '$' if chars.get(i + 1) == Some(&'(') => {
                let end = paren_end(chars, i + 1, out);
                let arithmetic = chars.get(i + 2) == Some(&'(');
                if !arithmetic {
                    scan(&chars[i + 2..end.max(i + 2)], Emit::Commands, out);
                }
                i = end + 1;
            }
            '`' => {
                let end = backtick_end(chars, i, out);
                scan(&chars[i + 1..end.max(i + 1)], Emit::Commands, out);
                i = end + 1;
            }
            _ => i += 1,
        }
    }
    unterminated(out, chars.len() - 1)
}

/// The index of the backtick closing the one at `start`.
fn backtick_end(chars: &[char], start: usize, out: &mut Split) -> usize {
    let mut i = start + 1;
    while i < chars.len() {
        match chars[i] {
            '\\' => i += 2,
            '`' => return i,
            _ => i += 1,
        }
    }
    unterminated(out, chars.len() - 1)
}

/// The index of the `)` matching the `(` at `open`, skipping quoted text.
fn paren_end(chars: &[char], open: usize, out: &mut Split) -> usize {
    let mut depth = 0usize;
    let mut i = open;
    // Substitutions inside quotes are scanned when the enclosing text is scanned; here they
    // only have to be stepped over, so findings go to a throwaway record.
    let mut scratch = Split {
        parts: Vec::new(),
        syntax: Syntax::Complete,
    };
    while i < chars.len() {
        match chars[i] {
            '\\' => i += 1,
            '\'' => match chars[i + 1..].iter().position(|&c| c == '\'') {
                Some(offset) => i += 1 + offset,
                None => break,
            },
            '"' => i = double_quote_end(chars, i, &mut scratch),
            '`' => i = backtick_end(chars, i, &mut scratch),
            '(' => depth += 1,
            ')' => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    if scratch.syntax == Syntax::Unterminated {
                        out.syntax = Syntax::Unterminated;
                    }
                    return i;
                }
            }
            _ => {}
        }
        i += 1;
    }
    unterminated(out, chars.len())
}

/// Whether the `>` at `at` sends output to a file rather than to `/dev/null` or a descriptor.
fn redirects_to_file(chars: &[char], at: usize) -> bool {
    let mut i = at + 1;
    if matches!(chars.get(i), Some('>') | Some('|')) {
        i += 1;
    }
    let duplicates_fd = chars.get(i) == Some(&'&');
    if duplicates_fd {
        i += 1;
    }
    while chars.get(i).is_some_and(|c| c.is_whitespace()) {
        i += 1;
    }
    let target: String = chars[i.min(chars.len())..]
        .iter()
        .take_while(|c| !c.is_whitespace() && !";|&<>()".contains(**c))
        .collect();
    let is_fd = !target.is_empty() && target.chars().all(|c| c.is_ascii_digit() || c == '-');
    match (duplicates_fd, is_fd) {
        (true, true) => false,
        _ => target != "/dev/null",
    }
}
