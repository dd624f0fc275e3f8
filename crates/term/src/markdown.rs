//! Markdown in the REPL, as it streams: each completed line is shown at once, except the rows
//! of a table, which are held until the table ends so that its columns can line up.
//!
//! Blocks (headings, quotes, bullet and numbered lists, rules, fences, tables) are recognised
//! per line; the inline spans of each line — `code`, emphasis, strong, ~~strike~~, links — are
//! parsed by `pulldown-cmark`. Fenced code is highlighted by [`super::highlight`]. Without
//! colour the text is shown as written. Every line is sanitised before any style is added.

use std::fmt::{Display, Write};

use crate::sanitize::terminal;
use crossterm::style::{Attribute, Color, SetAttribute, SetForegroundColor};
use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};
use unicode_width::UnicodeWidthStr;

use super::highlight::highlight;

/// A style switch written before text: a crossterm command, shown as its escape sequence.
pub(super) type Sgr = &'static dyn Display;

pub(super) const BOLD: Sgr = &SetAttribute(Attribute::Bold);
pub(super) const DIM: Sgr = &SetAttribute(Attribute::Dim);
const ITALIC: Sgr = &SetAttribute(Attribute::Italic);
const UNDERLINE: Sgr = &SetAttribute(Attribute::Underlined);
const STRIKE: Sgr = &SetAttribute(Attribute::CrossedOut);
const CYAN: Sgr = &SetForegroundColor(Color::DarkCyan);
pub(super) const RESET: Sgr = &SetAttribute(Attribute::Reset);
/// No style: the text around a span at the top level.
const PLAIN: Sgr = &"";

/// Renders Markdown line by line, remembering an open code block and a table being read.
#[derive(Debug, Default)]
pub struct Markdown {
    colour: bool,
    /// Inside a fenced block: its fence (`` ``` `` or `~~~`) and language.
    code: Option<(String, String)>,
    /// The rows of a table read so far (sanitised), shown when the table ends.
    table: Vec<String>,
}

impl Markdown {
    /// A renderer; without `colour` lines pass through (sanitised) as written.
    pub fn new(colour: bool) -> Markdown {
        Markdown {
            colour,
            code: None,
            table: Vec::new(),
        }
    }

    /// Forgets an open code block (a new message starts); a table still held is returned.
    pub fn reset(&mut self) -> Option<String> {
        self.code = None;
        self.finish()
    }

    /// What is still held (a table at the end of the text), rendered.
    pub fn finish(&mut self) -> Option<String> {
        if self.table.is_empty() {
            return None;
        }
        let rows = std::mem::take(&mut self.table);
        Some(self.render_table(&rows))
    }

    /// One complete line: what is ready to show (several lines when a held table ends, none
    /// while a table is being read).
    pub fn line(&mut self, raw: &str) -> Option<String> {
        let text = terminal(raw).into_owned();
        let trimmed = text.trim_start();
        if self.code.is_none() && self.colour && is_table_row(trimmed) {
            self.table.push(trimmed.to_string());
            return None;
        }
        let held = self.finish();
        let shown = self.one(text);
        Some(match held {
            Some(table) => format!("{table}\n{shown}"),
            None => shown,
        })
    }

    fn one(&mut self, text: String) -> String {
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

    fn paint(&self, style: Sgr, text: &str) -> String {
        match self.colour {
            true => format!("{style}{text}{RESET}"),
            false => text.to_string(),
        }
    }

    /// A table: cells padded to their column's width, the header bold, a rule under it.
    fn render_table(&self, rows: &[String]) -> String {
        let mut cells: Vec<Vec<String>> = Vec::new();
        let mut header_rule = false;
        for (i, row) in rows.iter().enumerate() {
            let split = split_row(row);
            if i == 1 && split.iter().all(|c| is_rule_cell(c)) {
                header_rule = true;
                continue;
            }
            cells.push(split);
        }
        let columns = cells.iter().map(Vec::len).max().unwrap_or(0);
        let shown: Vec<Vec<(String, usize)>> = cells
            .iter()
            .map(|row| {
                (0..columns)
                    .map(|c| {
                        let cell = row.get(c).map_or("", String::as_str);
                        let shown = inline(cell, PLAIN);
                        let width = visible_width(&shown);
                        (shown, width)
                    })
                    .collect()
            })
            .collect();
        let widths: Vec<usize> = (0..columns)
            .map(|c| shown.iter().map(|row| row[c].1).max().unwrap_or(0))
            .collect();
        let mut out = Vec::new();
        for (i, row) in shown.iter().enumerate() {
            let header = i == 0 && header_rule;
            let line: Vec<String> = row
                .iter()
                .zip(&widths)
                .map(|((text, width), column)| {
                    let pad = " ".repeat(column.saturating_sub(*width));
                    match header {
                        true => format!("{BOLD}{text}{RESET}{pad}"),
                        false => format!("{text}{pad}"),
                    }
                })
                .collect();
            out.push(line.join(&format!(" {DIM}│{RESET} ")));
            if header {
                let rule: Vec<String> = widths.iter().map(|w| "─".repeat(*w)).collect();
                out.push(format!("{DIM}{}{RESET}", rule.join("─┼─")));
            }
        }
        out.join("\n")
    }
}

/// A line of a pipe table: starts and ends with `|`.
fn is_table_row(trimmed: &str) -> bool {
    let t = trimmed.trim_end();
    t.len() >= 2 && t.starts_with('|') && t.ends_with('|')
}

/// The cells of a table row, trimmed (`\|` is a literal bar).
fn split_row(row: &str) -> Vec<String> {
    let inner = row.trim().trim_start_matches('|');
    let inner = inner.strip_suffix('|').unwrap_or(inner);
    let mut cells = vec![String::new()];
    let mut chars = inner.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.peek() == Some(&'|') => {
                chars.next();
                if let Some(cell) = cells.last_mut() {
                    cell.push('|');
                }
            }
            '|' => cells.push(String::new()),
            _ => {
                if let Some(cell) = cells.last_mut() {
                    cell.push(c);
                }
            }
        }
    }
    cells.into_iter().map(|c| c.trim().to_string()).collect()
}

/// A cell of the rule under a table's header (`---`, `:--:`).
fn is_rule_cell(cell: &str) -> bool {
    let c = cell.trim_matches(':');
    !c.is_empty() && c.chars().all(|ch| ch == '-')
}

/// A line outside code blocks: heading, quote, list item, rule, or a paragraph line.
fn block(text: &str) -> String {
    let trimmed = text.trim_start();
    let indent = &text[..text.len() - trimmed.len()];
    let hashes = trimmed.chars().take_while(|&c| c == '#').count();
    if (1..=6).contains(&hashes) && trimmed[hashes..].starts_with(' ') {
        let title = trimmed[hashes..].trim();
        if hashes == 1 {
            return format!("{H1}{}{RESET}", inline(title, &H1));
        }
        return format!("{BOLD}{}{RESET}", inline(title, BOLD));
    }
    let mut marks = trimmed.chars().filter(|c| !c.is_whitespace());
    if let Some(first @ ('-' | '*' | '_')) = marks.next() {
        if trimmed.chars().filter(|c| !c.is_whitespace()).count() >= 3 && marks.all(|c| c == first)
        {
            return format!("{DIM}{}{RESET}", "─".repeat(40));
        }
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
            return format!("{indent}• {}", inline(item, PLAIN));
        }
    }
    if let Some((number, item)) = numbered(trimmed) {
        return format!("{indent}{number}. {}", inline(item, PLAIN));
    }
    format!("{indent}{}", inline(trimmed, PLAIN))
}

/// `12. text` or `12) text`: the number and the text.
fn numbered(trimmed: &str) -> Option<(&str, &str)> {
    let digits = trimmed.chars().take_while(char::is_ascii_digit).count();
    if digits == 0 || digits > 9 {
        return None;
    }
    let rest = &trimmed[digits..];
    let item = rest
        .strip_prefix(". ")
        .or_else(|| rest.strip_prefix(") "))?;
    Some((&trimmed[..digits], item))
}

/// The inline spans of one line, styled; `outer` is the style to return to after a span.
fn inline(text: &str, outer: &dyn Display) -> String {
    let mut out = String::with_capacity(text.len() + 16);
    let mut styles: Vec<Sgr> = Vec::new();
    let mut links: Vec<String> = Vec::new();
    let restore = |out: &mut String, styles: &[Sgr]| {
        let _ = write!(out, "{RESET}{outer}");
        for s in styles {
            let _ = write!(out, "{s}");
        }
    };
    // The line is read as a paragraph: block syntax was handled by the caller, and text that
    // would open a block (`1986. A great year`, an indent) stays text.
    let body = text.trim_start();
    for event in Parser::new_ext(body, Options::ENABLE_STRIKETHROUGH) {
        match event {
            Event::Text(t) | Event::Html(t) | Event::InlineHtml(t) => out.push_str(&t),
            Event::Code(c) => {
                let _ = write!(out, "{CYAN}{c}");
                restore(&mut out, &styles);
            }
            Event::SoftBreak | Event::HardBreak => out.push(' '),
            Event::Start(tag) => {
                let style = match tag {
                    Tag::Emphasis => ITALIC,
                    Tag::Strong => BOLD,
                    Tag::Strikethrough => STRIKE,
                    Tag::Link { dest_url, .. } => {
                        links.push(dest_url.to_string());
                        UNDERLINE
                    }
                    Tag::Item => {
                        // A list marker the caller did not take (`- - x`): keep it visible.
                        out.push_str("• ");
                        continue;
                    }
                    _ => continue,
                };
                styles.push(style);
                let _ = write!(out, "{style}");
            }
            Event::End(tag) => {
                if !matches!(
                    tag,
                    TagEnd::Emphasis | TagEnd::Strong | TagEnd::Strikethrough | TagEnd::Link
                ) {
                    continue;
                }
                styles.pop();
                restore(&mut out, &styles);
                if tag == TagEnd::Link {
                    if let Some(url) = links.pop() {
                        let _ = write!(out, " {DIM}({url}){RESET}{outer}");
                        for s in &styles {
                            let _ = write!(out, "{s}");
                        }
                    }
                }
            }
            _ => {}
        }
    }
    if out.is_empty() && !body.is_empty() {
        // Nothing inline came out (a line pulldown reads as pure markup): show it as written.
        return body.to_string();
    }
    out
}

/// The style of a top-level heading: bold and underlined.
struct H1;

impl Display for H1 {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{BOLD}{UNDERLINE}")
    }
}

/// The columns a styled text takes: its width without the escape sequences (the styles above
/// are all SGR sequences, `ESC [ … m`).
fn visible_width(styled: &str) -> usize {
    let mut plain = String::with_capacity(styled.len());
    let mut rest = styled;
    while let Some(start) = rest.find('\u{1b}') {
        plain.push_str(&rest[..start]);
        let after = &rest[start..];
        rest = after.find('m').map_or("", |end| &after[end + 1..]);
    }
    plain.push_str(rest);
    UnicodeWidthStr::width(plain.as_str())
}

#[cfg(test)]
#[path = "markdown_tests.rs"]
mod tests;
