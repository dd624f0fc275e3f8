//! Markdown in the REPL, one completed line at a time (so streamed text renders as it comes):
//! headings and bold in bold, inline code in cyan, list bullets as `•`, quotes with a bar,
//! fenced code blocks with their keywords, strings, numbers and comments highlighted. Without
//! colour the text is shown as written. Every line is sanitised before any style is added.

use crate::render::sanitize::terminal;

const BOLD: &str = "\u{1b}[1m";
const DIM: &str = "\u{1b}[2m";
const ITALIC: &str = "\u{1b}[3m";
const CYAN: &str = "\u{1b}[36m";
const GREEN: &str = "\u{1b}[32m";
const BLUE: &str = "\u{1b}[34m";
const MAGENTA: &str = "\u{1b}[35m";
const RESET: &str = "\u{1b}[0m";

/// Renders Markdown line by line, remembering whether a code block is open.
#[derive(Debug, Default)]
pub struct Markdown {
    colour: bool,
    /// Inside a fenced block: its fence (`` ``` `` or `~~~`) and language.
    code: Option<(String, String)>,
}

impl Markdown {
    /// A renderer; without `colour` lines pass through (sanitised) as written.
    pub fn new(colour: bool) -> Markdown {
        Markdown { colour, code: None }
    }

    /// Forgets an open code block (a new message starts).
    pub fn reset(&mut self) {
        self.code = None;
    }

    /// One complete line, rendered.
    pub fn line(&mut self, raw: &str) -> String {
        let text = terminal(raw).into_owned();
        let trimmed = text.trim_start();
        let fence = ["```", "~~~"].into_iter().find(|f| trimmed.starts_with(f));
        match (&self.code, fence) {
            (Some((open, _)), Some(f)) if open == f => {
                self.code = None;
                return self.paint(DIM, &text);
            }
            (None, Some(f)) => {
                let lang = trimmed[f.len()..].trim().to_ascii_lowercase();
                self.code = Some((f.to_string(), lang));
                return self.paint(DIM, &text);
            }
            _ => {}
        }
        if !self.colour {
            return text;
        }
        if let Some((_, lang)) = &self.code {
            return highlight(&text, lang);
        }
        block(&text)
    }

    fn paint(&self, style: &str, text: &str) -> String {
        match self.colour {
            true => format!("{style}{text}{RESET}"),
            false => text.to_string(),
        }
    }
}

/// A line outside code blocks: heading, quote, list item, rule, or a paragraph line.
fn block(text: &str) -> String {
    let trimmed = text.trim_start();
    let indent = &text[..text.len() - trimmed.len()];
    let hashes = trimmed.chars().take_while(|&c| c == '#').count();
    if (1..=6).contains(&hashes) && trimmed[hashes..].starts_with(' ') {
        let title = trimmed[hashes..].trim();
        let style = if hashes == 1 { "\u{1b}[1;4m" } else { BOLD };
        return format!("{style}{}{RESET}", inline(title, style));
    }
    if trimmed.len() >= 3
        && trimmed.chars().all(|c| c == '-' || c == '*' || c == '_')
        && trimmed
            .chars()
            .collect::<std::collections::HashSet<_>>()
            .len()
            == 1
    {
        return format!("{DIM}{}{RESET}", "─".repeat(40));
    }
    if let Some(quote) = trimmed
        .strip_prefix("> ")
        .or(trimmed.strip_prefix('>').filter(|q| q.is_empty()))
    {
        return format!(
            "{indent}{DIM}│{RESET} {ITALIC}{}{RESET}",
            inline(quote, ITALIC)
        );
    }
    for bullet in ["- ", "* ", "+ "] {
        if let Some(item) = trimmed.strip_prefix(bullet) {
            return format!("{indent}• {}", inline(item, ""));
        }
    }
    format!("{indent}{}", inline(trimmed, ""))
}

/// Inline spans: `code`, **bold**, *italic*. `outer` is the style to return to after a span.
fn inline(text: &str, outer: &str) -> String {
    let mut out = String::with_capacity(text.len() + 16);
    let mut rest = text;
    while !rest.is_empty() {
        let (marker, style) = if rest.starts_with('`') {
            ("`", CYAN)
        } else if rest.starts_with("**") {
            ("**", BOLD)
        } else if rest.starts_with("__") {
            ("__", BOLD)
        } else if rest.starts_with('*') && !rest.starts_with("* ") {
            ("*", ITALIC)
        } else {
            let c = rest.chars().next().unwrap_or(' ');
            out.push(c);
            rest = &rest[c.len_utf8()..];
            continue;
        };
        let body = &rest[marker.len()..];
        match body.find(marker).filter(|&end| end > 0) {
            Some(end) => {
                out.push_str(style);
                out.push_str(&body[..end]);
                out.push_str(RESET);
                out.push_str(outer);
                rest = &body[end + marker.len()..];
            }
            None => {
                out.push_str(marker);
                rest = body;
            }
        }
    }
    out
}

const KEYWORDS: &[&str] = &[
    "fn", "let", "mut", "pub", "use", "mod", "struct", "enum", "impl", "trait", "match", "if",
    "else", "for", "while", "loop", "return", "async", "await", "const", "static", "type", "where",
    "self", "Self", "true", "false", "None", "Some", "Ok", "Err", "def", "class", "import", "from",
    "in", "is", "not", "and", "or", "function", "var", "export", "package", "func", "go", "then",
    "fi", "do", "done", "echo", "with", "as", "try", "catch", "new",
];

/// A line of code with keywords, strings, numbers and comments coloured.
fn highlight(text: &str, lang: &str) -> String {
    let hash_comments = matches!(
        lang,
        "sh" | "bash" | "shell" | "zsh" | "python" | "py" | "toml" | "yaml" | "yml" | "ruby" | "rb"
    );
    let mut out = String::with_capacity(text.len() + 32);
    let chars: Vec<char> = text.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let rest: String = chars[i..].iter().collect();
        if rest.starts_with("//") || (hash_comments && c == '#') {
            out.push_str(&format!("{DIM}{rest}{RESET}"));
            break;
        }
        if c == '"' || c == '\'' {
            let end = chars[i + 1..]
                .iter()
                .position(|&d| d == c)
                .map_or(chars.len(), |p| i + 2 + p);
            let s: String = chars[i..end].iter().collect();
            out.push_str(&format!("{GREEN}{s}{RESET}"));
            i = end;
            continue;
        }
        if c.is_alphanumeric() || c == '_' {
            let end = chars[i..]
                .iter()
                .position(|&d| !(d.is_alphanumeric() || d == '_'))
                .map_or(chars.len(), |p| i + p);
            let word: String = chars[i..end].iter().collect();
            if KEYWORDS.contains(&word.as_str()) {
                out.push_str(&format!("{BLUE}{word}{RESET}"));
            } else if word.chars().next().is_some_and(|d| d.is_ascii_digit()) {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_colour_lines_pass_as_written_but_sanitised() {
        let mut md = Markdown::new(false);
        assert_eq!(md.line("# Title"), "# Title");
        assert_eq!(md.line("**x**\u{1b}[2J"), "**x**\\x1b[2J");
    }

    #[test]
    fn headings_bold_lists_and_inline_code() {
        let mut md = Markdown::new(true);
        assert_eq!(md.line("## Plan"), "\u{1b}[1mPlan\u{1b}[0m");
        assert_eq!(
            md.line("- run `cargo test` **now**"),
            "• run \u{1b}[36mcargo test\u{1b}[0m \u{1b}[1mnow\u{1b}[0m"
        );
        assert_eq!(md.line("a * b and snake_case"), "a * b and snake_case");
    }

    #[test]
    fn code_blocks_are_highlighted_until_their_fence_closes() {
        let mut md = Markdown::new(true);
        assert_eq!(md.line("```rust"), "\u{1b}[2m```rust\u{1b}[0m");
        let code = md.line("let x = \"hi\"; // note");
        assert!(
            code.starts_with("\u{1b}[34mlet\u{1b}[0m x = \u{1b}[32m\"hi\"\u{1b}[0m;"),
            "{code:?}"
        );
        assert!(code.ends_with("\u{1b}[2m// note\u{1b}[0m"), "{code:?}");
        assert_eq!(md.line("#[derive(Debug)]"), "#[derive(Debug)]");
        md.line("```");
        assert_eq!(md.line("# Heading"), "\u{1b}[1;4mHeading\u{1b}[0m");
    }
}
