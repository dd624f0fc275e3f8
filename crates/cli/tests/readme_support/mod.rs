//! README.md read as the check sees it: its fenced blocks, each with the `readme-check`
//! directive written just above it (an HTML comment, invisible on GitHub), and the `sh`
//! blocks split into the commands a shell would run one after the other.
//!
//! Directives (`<!-- readme-check: … -->` on the line right before the fence):
//! - `not run: REASON` — the block is not run (CI's own commands, a REPL transcript);
//! - `skip "PREFIX" "PREFIX": REASON` — the block runs, except the commands starting with a
//!   PREFIX (each must match one, so the list stays true);
//! - `file PATH` — the block is a file's content, written to PATH in the workspace;
//! - ``output of `COMMAND` `` — the block is what COMMAND (run earlier, exactly as written there)
//!   printed: every line shown must be one of its output lines, in order, `…` standing for
//!   any text;
//! - `illustration: REASON` — a captured session that needs a scripted model; REASON names
//!   the test that checks that rendering.
//!
//! A block without a directive: `sh` runs, `json` must parse (whole, or each line), `python`
//! runs. Any other block must carry a directive.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

/// What the directive above a block says.
#[derive(Debug, Clone, PartialEq)]
pub enum Directive {
    /// No directive: the language's default.
    Default,
    NotRun(String),
    Skip(Vec<String>),
    File(String),
    OutputOf(String),
    Illustration(String),
}

/// One fenced block.
#[derive(Debug, Clone)]
pub struct Block {
    /// The fence's line number (1-based).
    pub line: usize,
    pub lang: String,
    pub body: String,
    pub directive: Directive,
}

/// The fenced blocks of `text`, in order.
pub fn blocks(text: &str) -> Vec<Block> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let trimmed = lines[i].trim_start();
        let Some(info) = trimmed.strip_prefix("```") else {
            i += 1;
            continue;
        };
        let indent = lines[i].len() - trimmed.len();
        let start = i;
        let mut body = String::new();
        i += 1;
        while i < lines.len() && lines[i].trim() != "```" {
            let line = lines[i];
            // A list item's block is indented with its fence; its multi-line strings are not.
            let unindented = match line.get(..indent) {
                Some(pad) if pad.trim().is_empty() => &line[indent..],
                _ => line,
            };
            body.push_str(unindented);
            body.push('\n');
            i += 1;
        }
        let directive = start
            .checked_sub(1)
            .map(|above| parse_directive(lines[above].trim(), start + 1))
            .unwrap_or(Directive::Default);
        out.push(Block {
            line: start + 1,
            lang: info.trim().to_string(),
            body,
            directive,
        });
        i += 1;
    }
    out
}

fn parse_directive(line: &str, fence: usize) -> Directive {
    let Some(inner) = line
        .strip_prefix("<!-- readme-check:")
        .and_then(|l| l.strip_suffix("-->"))
    else {
        return Directive::Default;
    };
    let inner = inner.trim();
    let reason = |rest: &str| {
        let r = rest.trim().trim_start_matches(':').trim().to_string();
        assert!(
            !r.is_empty(),
            "README line {fence}: the directive `{inner}` needs a reason"
        );
        r
    };
    if let Some(rest) = inner.strip_prefix("not run") {
        Directive::NotRun(reason(rest))
    } else if let Some(rest) = inner.strip_prefix("illustration") {
        Directive::Illustration(reason(rest))
    } else if let Some(rest) = inner.strip_prefix("file ") {
        Directive::File(rest.trim().to_string())
    } else if let Some(rest) = inner.strip_prefix("output of ") {
        let rest = rest.trim();
        let command = rest
            .strip_prefix('`')
            .and_then(|r| r.strip_suffix('`'))
            .unwrap_or(rest);
        Directive::OutputOf(command.to_string())
    } else if let Some(rest) = inner.strip_prefix("skip ") {
        let (quoted, why) = rest.rsplit_once(':').unwrap_or((rest, ""));
        reason(why);
        let prefixes: Vec<String> = quoted
            .split('"')
            .skip(1)
            .step_by(2)
            .map(str::to_string)
            .collect();
        assert!(
            !prefixes.is_empty(),
            "README line {fence}: `skip` names no \"command\""
        );
        Directive::Skip(prefixes)
    } else {
        panic!("README line {fence}: unknown readme-check directive `{inner}`")
    }
}

/// The commands of a shell block, each as a shell would read it: comment-only lines dropped,
/// `\` continuations and quoted strings spanning lines kept whole.
pub fn commands(body: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    for line in body.lines() {
        if current.is_empty() && (line.trim().is_empty() || line.trim_start().starts_with('#')) {
            continue;
        }
        current.push_str(line);
        current.push('\n');
        if line.trim_end().ends_with('\\') || !quotes_closed(&current) {
            continue;
        }
        out.push(current.trim_end().to_string());
        current.clear();
    }
    assert!(current.is_empty(), "a README command never ends: {current}");
    out
}

/// Whether every quote opened in `text` is closed (shell rules: `\` escapes outside single
/// quotes, `#` at a word's start comments out the rest of the line).
fn quotes_closed(text: &str) -> bool {
    let mut single = false;
    let mut double = false;
    let mut chars = text.chars().peekable();
    let mut prev = ' ';
    while let Some(c) = chars.next() {
        match c {
            '\\' if !single => {
                chars.next();
            }
            '\'' if !double => single = !single,
            '"' if !single => double = !double,
            '#' if !single && !double && prev.is_whitespace() => {
                for c in chars.by_ref() {
                    if c == '\n' {
                        break;
                    }
                }
            }
            _ => {}
        }
        prev = c;
    }
    !single && !double
}

/// A command as written, without its trailing comment (what `output of` names).
pub fn bare(command: &str) -> String {
    let mut single = false;
    let mut double = false;
    let mut prev = ' ';
    for (i, c) in command.char_indices() {
        match c {
            '\'' if !double => single = !single,
            '"' if !single => double = !double,
            '#' if !single && !double && prev.is_whitespace() => {
                return command[..i].trim_end().to_string()
            }
            _ => {}
        }
        prev = c;
    }
    command.trim_end().to_string()
}

/// Whether `shown` (a README output line, `…` for any text) matches `actual`.
pub fn line_matches(shown: &str, actual: &str) -> bool {
    let shown = shown.trim_end();
    let actual = actual.trim_end();
    let parts: Vec<&str> = shown.split('…').collect();
    if parts.len() == 1 {
        return shown == actual;
    }
    let mut rest = actual;
    for (i, part) in parts.iter().enumerate() {
        if i == 0 {
            let Some(r) = rest.strip_prefix(part) else {
                return false;
            };
            rest = r;
        } else if i == parts.len() - 1 {
            return rest.ends_with(part);
        } else {
            let Some(at) = rest.find(part) else {
                return false;
            };
            rest = &rest[at + part.len()..];
        }
    }
    true
}

/// The first shown line that has no match in `actual` after the previous one's, if any.
pub fn unmatched<'a>(shown: &'a str, actual: &str) -> Option<&'a str> {
    let mut lines = actual.lines();
    'shown: for s in shown.lines() {
        for a in lines.by_ref() {
            if line_matches(s, a) {
                continue 'shown;
            }
        }
        return Some(s);
    }
    None
}

#[test]
fn commands_split_as_a_shell_reads_them() {
    let body = "# a comment\nmkdir -p x && printf -- 'a\nb # not a comment\n' > x/y\n\ntroupe a \\\n  --b   # it's fine\ntroupe c\n";
    let cmds = commands(body);
    assert_eq!(
        cmds,
        [
            "mkdir -p x && printf -- 'a\nb # not a comment\n' > x/y",
            "troupe a \\\n  --b   # it's fine",
            "troupe c"
        ]
    );
    assert_eq!(bare("troupe task list     # ID STATUS"), "troupe task list");
    assert!(line_matches(
        "1  pending  …  write …",
        "1  pending  -  write the parser"
    ));
    assert!(!line_matches("2  done", "2  pending"));
    assert_eq!(unmatched("a\nc", "a\nb\nc\n"), None);
    assert_eq!(unmatched("c\na", "a\nb\nc\n"), Some("a"));
}
