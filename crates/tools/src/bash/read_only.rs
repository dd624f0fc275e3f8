//! Classifies shell commands as read-only, so plan mode and permissions can let harmless
//! inspection through. It errs on the side of "not read-only": anything it does not understand
//! (subshells, command substitution, unknown programs, redirection to files) is `Execute`.

/// Programs that only read, whatever their arguments (argument checks for the rest are below).
const READ_ONLY_PROGRAMS: &[&str] = &[
    "basename",
    "cat",
    "cd",
    "cmp",
    "column",
    "comm",
    "cut",
    "df",
    "diff",
    "dirname",
    "du",
    "echo",
    "egrep",
    "false",
    "fgrep",
    "file",
    "grep",
    "head",
    "id",
    "ls",
    "md5sum",
    "nl",
    "pwd",
    "readlink",
    "realpath",
    "rev",
    "sha1sum",
    "sha256sum",
    "sha512sum",
    "stat",
    "tac",
    "tail",
    "tr",
    "true",
    "type",
    "uname",
    "wc",
    "which",
    "whoami",
];

/// `git` subcommands that only read (`branch` is checked separately: it may create or delete).
const READ_ONLY_GIT: &[&str] = &["diff", "log", "rev-parse", "show", "status"];

/// `git branch` flags that only list.
const GIT_BRANCH_LIST_FLAGS: &[&str] = &[
    "-a",
    "--all",
    "-r",
    "--remotes",
    "-v",
    "-vv",
    "--verbose",
    "--list",
    "--show-current",
    "--no-color",
];

/// `find` actions that run programs, delete or write files.
const FIND_UNSAFE: &[&str] = &[
    "-exec", "-execdir", "-ok", "-okdir", "-delete", "-fprint", "-fprint0", "-fprintf", "-fls",
];

/// True when every part of `cmd` (split on `&&`, `||`, `;`, `|`, `&` and newlines) runs a known
/// read-only program with harmless arguments, and nothing is redirected to a file or substituted.
pub fn is_read_only_command(cmd: &str) -> bool {
    // Command and process substitution run arbitrary commands, even inside double quotes.
    if cmd.contains("$(") || cmd.contains('`') || cmd.contains("<(") || cmd.contains(">(") {
        return false;
    }
    match split_commands(cmd) {
        Some(commands) if !commands.is_empty() => {
            commands.iter().all(|words| is_read_only_simple(words))
        }
        _ => false,
    }
}

/// Whether one simple command (its words, quotes removed) is read-only.
fn is_read_only_simple(words: &[String]) -> bool {
    let Some((program, args)) = words.split_first() else {
        return true;
    };
    // A path (`./ls`) may be anything, and `VAR=x cmd` can change what a program does.
    if program.contains('/') || program.contains('=') {
        return false;
    }
    match program.as_str() {
        "git" => is_read_only_git(args),
        "find" => !args.iter().any(|a| FIND_UNSAFE.contains(&a.as_str())),
        "rg" => !args.iter().any(|a| a.starts_with("--pre")),
        "sort" => !args
            .iter()
            .any(|a| a.starts_with("-o") || a.starts_with("--output")),
        "tree" => !args.iter().any(|a| a == "-o"),
        // `uniq IN OUT` writes OUT.
        "uniq" => args.iter().filter(|a| !a.starts_with('-')).count() <= 1,
        // `date -s` sets the clock.
        "date" => !args
            .iter()
            .any(|a| a.starts_with("-s") || a.starts_with("--set")),
        other => READ_ONLY_PROGRAMS.contains(&other),
    }
}

/// Whether a `git` invocation only reads.
fn is_read_only_git(args: &[String]) -> bool {
    let args: Vec<&str> = args
        .iter()
        .map(String::as_str)
        .skip_while(|a| *a == "--no-pager")
        .collect();
    let Some((sub, rest)) = args.split_first() else {
        return false;
    };
    // `--output=FILE` writes a file for diff, log and show.
    if rest.iter().any(|a| a.starts_with("--output")) {
        return false;
    }
    match *sub {
        "branch" => rest.iter().all(|a| GIT_BRANCH_LIST_FLAGS.contains(a)),
        other => READ_ONLY_GIT.contains(&other),
    }
}

/// Quote state of the shell-word scanner.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Quote {
    None,
    Single,
    Double,
}

/// Splits a command line into simple commands, each a list of words with quotes removed.
/// Returns `None` for anything that is not plainly read-only at the syntax level: unbalanced
/// quotes, subshells and groups, or output redirected anywhere but `/dev/null` or another fd.
fn split_commands(cmd: &str) -> Option<Vec<Vec<String>>> {
    let chars: Vec<char> = cmd.chars().collect();
    let mut commands = Vec::new();
    let mut words: Vec<String> = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut quote = Quote::None;
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        match quote {
            Quote::Single => {
                if c == '\'' {
                    quote = Quote::None;
                } else {
                    word.push(c);
                }
            }
            Quote::Double => match c {
                '"' => quote = Quote::None,
                '\\' if matches!(chars.get(i + 1), Some('"' | '\\' | '$')) => {
                    word.push(chars[i + 1]);
                    i += 1;
                }
                _ => word.push(c),
            },
            Quote::None => match c {
                '\'' => {
                    quote = Quote::Single;
                    in_word = true;
                }
                '"' => {
                    quote = Quote::Double;
                    in_word = true;
                }
                '\\' => {
                    if let Some(next) = chars.get(i + 1) {
                        if *next != '\n' {
                            word.push(*next);
                            in_word = true;
                        }
                        i += 1;
                    }
                }
                ';' | '\n' | '&' | '|' => {
                    if c == '&' && chars.get(i + 1) == Some(&'>') {
                        // `&>file`: stdout and stderr redirected.
                        i = skip_redirect(&chars, i + 1)?;
                        continue;
                    }
                    end_word(&mut words, &mut word, &mut in_word);
                    commands.push(std::mem::take(&mut words));
                    // `&&`, `||` and `|&` are one operator.
                    if matches!(chars.get(i + 1), Some('&' | '|')) && c != ';' && c != '\n' {
                        i += 1;
                    }
                }
                '>' => {
                    // A pure fd number right before `>` (`2>`) is part of the redirection.
                    if in_word && !word.is_empty() && word.chars().all(|d| d.is_ascii_digit()) {
                        word.clear();
                        in_word = false;
                    }
                    end_word(&mut words, &mut word, &mut in_word);
                    i = skip_redirect(&chars, i)?;
                    continue;
                }
                '(' | ')' | '{' | '}' => return None,
                c if c.is_whitespace() => end_word(&mut words, &mut word, &mut in_word),
                '<' => end_word(&mut words, &mut word, &mut in_word),
                _ => {
                    word.push(c);
                    in_word = true;
                }
            },
        }
        i += 1;
    }
    if quote != Quote::None {
        return None;
    }
    end_word(&mut words, &mut word, &mut in_word);
    commands.push(words);
    commands.retain(|words| !words.is_empty());
    Some(commands)
}

/// Finishes the current word, if any.
fn end_word(words: &mut Vec<String>, word: &mut String, in_word: &mut bool) {
    if *in_word || !word.is_empty() {
        words.push(std::mem::take(word));
    }
    *in_word = false;
}

/// Checks an output redirection starting at the `>` at `start`; returns the index after it when
/// it only targets `/dev/null` or duplicates a file descriptor (`2>&1`), `None` otherwise.
fn skip_redirect(chars: &[char], start: usize) -> Option<usize> {
    let mut i = start + 1;
    if chars.get(i) == Some(&'>') {
        i += 1;
    }
    if chars.get(i) == Some(&'&') {
        i += 1;
        let digits = chars[i..].iter().take_while(|c| c.is_ascii_digit()).count();
        let closes = chars.get(i) == Some(&'-');
        return (digits > 0 || closes).then_some(i + digits + usize::from(closes));
    }
    while chars.get(i).is_some_and(|c| *c == ' ' || *c == '\t') {
        i += 1;
    }
    let target: String = chars[i..]
        .iter()
        .take_while(|c| !c.is_whitespace() && !matches!(c, ';' | '&' | '|'))
        .collect();
    (target == "/dev/null").then_some(i + target.chars().count())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_words_and_commands() {
        let parsed = split_commands(r#"ls -la "my dir" && grep 'a b' x | wc -l; echo a\ b"#);
        assert_eq!(
            parsed,
            Some(vec![
                vec!["ls".to_owned(), "-la".to_owned(), "my dir".to_owned()],
                vec!["grep".to_owned(), "a b".to_owned(), "x".to_owned()],
                vec!["wc".to_owned(), "-l".to_owned()],
                vec!["echo".to_owned(), "a b".to_owned()],
            ])
        );
    }

    #[test]
    fn unbalanced_quotes_are_not_understood() {
        assert_eq!(split_commands("echo 'oops"), None);
    }
}
