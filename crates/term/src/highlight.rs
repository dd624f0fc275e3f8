//! Fenced code in the REPL, one line at a time: keywords of the block's language, strings,
//! numbers and comments coloured. Per-line on purpose — the text streams — so a string or
//! comment spanning lines is coloured on its first line only.
//!
//! A maintained highlighter was measured (branch `i27-highlight-syntect`,
//! bench `cli/benches/highlight.rs` there): syntect 5.3, bundled grammars, pure-Rust
//! `fancy-regex`, one stateful `HighlightLines` per block, grammars loaded lazily so start-up
//! and `-p` never pay. In the dev profile (dependencies at opt-level 1, two shared cores) the
//! grammars load in ~2-3 ms, but the first Rust block costs 64-86 ms of CPU, nearly all
//! `regex-automata` compiling the grammar's patterns on first use, over the 50 ms allowed;
//! a warm line 120-200 µs against ~5 µs here; the debug binary +3.5 MB (+2.6 %). So this
//! stays: what the REPL needs from a stream of lines is this much.

use crossterm::style::{Color, SetForegroundColor};

use super::markdown::{Sgr, DIM, RESET};

const GREEN: Sgr = &SetForegroundColor(Color::DarkGreen);
const BLUE: Sgr = &SetForegroundColor(Color::DarkBlue);
const MAGENTA: Sgr = &SetForegroundColor(Color::DarkMagenta);
const YELLOW: Sgr = &SetForegroundColor(Color::DarkYellow);

/// The words a language reserves, and how its comments start.
struct Language {
    keywords: &'static [&'static str],
    /// `#` starts a comment.
    hash_comments: bool,
    /// `//` starts a comment.
    slash_comments: bool,
    /// `'a` is a lifetime, not a string (Rust).
    lifetimes: bool,
}

const RUST: Language = Language {
    keywords: &[
        "as", "async", "await", "break", "const", "continue", "crate", "dyn", "else", "enum",
        "extern", "false", "fn", "for", "if", "impl", "in", "let", "loop", "match", "mod", "move",
        "mut", "pub", "ref", "return", "self", "Self", "static", "struct", "super", "trait",
        "true", "type", "unsafe", "use", "where", "while", "Some", "None", "Ok", "Err",
    ],
    hash_comments: false,
    slash_comments: true,
    lifetimes: true,
};

const PYTHON: Language = Language {
    keywords: &[
        "and", "as", "assert", "async", "await", "break", "class", "continue", "def", "del",
        "elif", "else", "except", "False", "finally", "for", "from", "global", "if", "import",
        "in", "is", "lambda", "None", "nonlocal", "not", "or", "pass", "raise", "return", "True",
        "try", "while", "with", "yield", "self",
    ],
    hash_comments: true,
    slash_comments: false,
    lifetimes: false,
};

const JAVASCRIPT: Language = Language {
    keywords: &[
        "async",
        "await",
        "break",
        "case",
        "catch",
        "class",
        "const",
        "continue",
        "default",
        "delete",
        "do",
        "else",
        "export",
        "extends",
        "false",
        "finally",
        "for",
        "from",
        "function",
        "if",
        "import",
        "in",
        "instanceof",
        "interface",
        "let",
        "new",
        "null",
        "of",
        "return",
        "static",
        "switch",
        "this",
        "throw",
        "true",
        "try",
        "type",
        "typeof",
        "undefined",
        "var",
        "void",
        "while",
        "yield",
    ],
    hash_comments: false,
    slash_comments: true,
    lifetimes: false,
};

const GO: Language = Language {
    keywords: &[
        "break",
        "case",
        "chan",
        "const",
        "continue",
        "default",
        "defer",
        "else",
        "fallthrough",
        "false",
        "for",
        "func",
        "go",
        "goto",
        "if",
        "import",
        "interface",
        "map",
        "nil",
        "package",
        "range",
        "return",
        "select",
        "struct",
        "switch",
        "true",
        "type",
        "var",
    ],
    hash_comments: false,
    slash_comments: true,
    lifetimes: false,
};

const SHELL: Language = Language {
    keywords: &[
        "case", "do", "done", "elif", "else", "esac", "export", "fi", "for", "function", "if",
        "in", "local", "return", "then", "until", "while",
    ],
    hash_comments: true,
    slash_comments: false,
    lifetimes: false,
};

const C_LIKE: Language = Language {
    keywords: &[
        "break",
        "case",
        "char",
        "class",
        "const",
        "continue",
        "default",
        "do",
        "double",
        "else",
        "enum",
        "extern",
        "false",
        "float",
        "for",
        "if",
        "int",
        "long",
        "namespace",
        "new",
        "nullptr",
        "private",
        "public",
        "return",
        "short",
        "static",
        "struct",
        "switch",
        "template",
        "this",
        "true",
        "typedef",
        "unsigned",
        "void",
        "while",
    ],
    hash_comments: false,
    slash_comments: true,
    lifetimes: false,
};

const DATA: Language = Language {
    keywords: &["true", "false", "null"],
    hash_comments: true,
    slash_comments: false,
    lifetimes: false,
};

/// Text with no known language: strings and numbers only.
const PLAIN: Language = Language {
    keywords: &[],
    hash_comments: false,
    slash_comments: false,
    lifetimes: false,
};

fn language(name: &str) -> &'static Language {
    match name {
        "rust" | "rs" => &RUST,
        "python" | "py" => &PYTHON,
        "js" | "javascript" | "ts" | "typescript" | "jsx" | "tsx" => &JAVASCRIPT,
        "go" | "golang" => &GO,
        "sh" | "bash" | "shell" | "zsh" | "console" => &SHELL,
        "c" | "h" | "cpp" | "c++" | "java" | "cs" | "csharp" | "kotlin" | "swift" => &C_LIKE,
        "toml" | "yaml" | "yml" | "ini" => &DATA,
        _ => &PLAIN,
    }
}

/// A line of code in language `lang` (a fence's info string), coloured.
pub fn highlight(text: &str, lang: &str) -> String {
    let lang = language(lang.split_whitespace().next().unwrap_or(""));
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len() + 32);
    let mut i = 0;
    let piece = |from: usize, to: usize| chars[from..to].iter().collect::<String>();
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if (lang.slash_comments && c == '/' && next == Some('/'))
            || (lang.hash_comments && c == '#')
        {
            out.push_str(&format!("{DIM}{}{RESET}", piece(i, chars.len())));
            break;
        }
        if lang.lifetimes && c == '\'' && is_lifetime(&chars[i..]) {
            let end = word_end(&chars, i + 1);
            out.push_str(&format!("{YELLOW}{}{RESET}", piece(i, end)));
            i = end;
            continue;
        }
        if c == '"' || c == '\'' || (c == '`' && std::ptr::eq(lang, &JAVASCRIPT)) {
            let end = string_end(&chars, i);
            out.push_str(&format!("{GREEN}{}{RESET}", piece(i, end)));
            i = end;
            continue;
        }
        if c.is_alphanumeric() || c == '_' {
            let end = word_end(&chars, i);
            let word = piece(i, end);
            if lang.keywords.contains(&word.as_str()) {
                out.push_str(&format!("{BLUE}{word}{RESET}"));
            } else if c.is_ascii_digit() {
                out.push_str(&format!("{MAGENTA}{word}{RESET}"));
            } else {
                out.push_str(&word);
            }
            i = end;
            continue;
        }
        out.push(c);
        i += 1;
    }
    out
}

/// `'a`, `'static` (a lifetime or loop label), not `'a'` (a char).
fn is_lifetime(from_quote: &[char]) -> bool {
    let Some(&first) = from_quote.get(1) else {
        return false;
    };
    (first.is_alphabetic() || first == '_') && from_quote.get(2) != Some(&'\'')
}

/// Where the word starting at `i` ends.
fn word_end(chars: &[char], i: usize) -> usize {
    chars[i..]
        .iter()
        .position(|&d| !(d.is_alphanumeric() || d == '_'))
        .map_or(chars.len(), |p| i + p)
}

/// Where the string opened at `i` ends (after its closing quote, escapes skipped), or the end
/// of the line.
fn string_end(chars: &[char], i: usize) -> usize {
    let quote = chars[i];
    let mut j = i + 1;
    while j < chars.len() {
        match chars[j] {
            '\\' => j += 2,
            c if c == quote => return j + 1,
            _ => j += 1,
        }
    }
    chars.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rust_lifetimes_are_not_strings_and_chars_are() {
        let line = highlight("fn f<'a>(x: &'a str) -> char { 'x' }", "rust");
        assert!(line.contains(&format!("{YELLOW}'a{RESET}>")), "{line:?}");
        assert!(line.contains(&format!("{GREEN}'x'{RESET}")), "{line:?}");
        assert!(line.starts_with(&format!("{BLUE}fn{RESET}")), "{line:?}");
    }

    #[test]
    fn keywords_belong_to_their_language() {
        // `def` is Python's, not Rust's; `fn` is Rust's, not Python's.
        assert!(highlight("def f():", "python").starts_with(&format!("{BLUE}def")));
        assert_eq!(highlight("def f", "rust"), "def f");
        assert_eq!(highlight("fn x", "python"), "fn x");
        // Unknown languages: strings and numbers only.
        assert_eq!(
            highlight("if x = \"a\"", "text"),
            format!("if x = {GREEN}\"a\"{RESET}")
        );
    }

    #[test]
    fn comments_follow_the_language_and_escaped_quotes_stay_in_strings() {
        assert_eq!(highlight("x # note", "sh"), format!("x {DIM}# note{RESET}"));
        assert_eq!(highlight("#[derive(Debug)]", "rust"), "#[derive(Debug)]");
        assert_eq!(
            highlight(r#"s = "a\"b" // c"#, "js"),
            format!("s = {GREEN}\"a\\\"b\"{RESET} {DIM}// c{RESET}")
        );
    }
}
