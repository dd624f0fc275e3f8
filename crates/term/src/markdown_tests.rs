use super::*;

/// Renders `text` as the REPL would stream it, with escapes shown as `<b>`, `<0>`… for the
/// snapshots.
fn render(text: &str) -> String {
    let mut md = Markdown::new(true);
    let mut out: Vec<String> = text.lines().filter_map(|l| md.line(l)).collect();
    out.extend(md.finish());
    out.join("\n")
        .replace(&H1.to_string(), "<h1>")
        .replace(&BOLD.to_string(), "<b>")
        .replace(&DIM.to_string(), "<dim>")
        .replace(&ITALIC.to_string(), "<i>")
        .replace(&UNDERLINE.to_string(), "<u>")
        .replace(&STRIKE.to_string(), "<s>")
        .replace(&CYAN.to_string(), "<code>")
        .replace(&RESET.to_string(), "</>")
        .replace('\u{1b}', "<esc>")
}

#[test]
fn without_colour_lines_pass_as_written_but_sanitised() {
    let mut md = Markdown::new(false);
    assert_eq!(md.line("# Title").as_deref(), Some("# Title"));
    assert_eq!(md.line("**x**\u{1b}[2J").as_deref(), Some("**x**\\x1b[2J"));
    // Tables are not held without colour: they read fine as written.
    assert_eq!(md.line("| a | b |").as_deref(), Some("| a | b |"));
}

#[test]
fn headings_bold_lists_and_inline_code() {
    let mut md = Markdown::new(true);
    assert_eq!(
        md.line("## Plan").as_deref(),
        Some("\u{1b}[1mPlan\u{1b}[0m"),
        "bold is SGR 1, reset SGR 0"
    );
    assert_eq!(
        md.line("- run `cargo test` **now**").as_deref(),
        Some("• run \u{1b}[38;5;6mcargo test\u{1b}[0m \u{1b}[1mnow\u{1b}[0m"),
        "inline code is cyan (palette colour 6)"
    );
    assert_eq!(
        md.line("a * b and snake_case").as_deref(),
        Some("a * b and snake_case")
    );
}

#[test]
fn a_reply_renders_as_markdown() {
    insta::assert_snapshot!(render(
        "# Result\n\
         The fix is in **`src/lib.rs`**, see [the docs](https://docs.rs/x) and ~~the old way~~.\n\
         \n\
         1. Read the *code*\n\
         2) Run the tests\n\
         1986. A great year\n\
         - a bullet with __strong__ text\n\
         > a quote with `code`\n\
         ---\n\
         | file | lines | note |\n\
         |:-----|------:|------|\n\
         | `a.rs` | 12 | **new** |\n\
         | b.rs | 3400 | café |\n\
         after the table\n\
         ```rust\n\
         fn f<'a>(x: &'a str) {}\n\
         ```\n\
         # Heading after code"
    ));
}

#[test]
fn a_table_at_the_end_of_a_reply_is_shown_when_it_ends() {
    let mut md = Markdown::new(true);
    assert_eq!(md.line("| a | b |"), None);
    assert_eq!(md.line("|---|---|"), None);
    assert_eq!(md.line("| 1 | 22 |"), None);
    let table = md.reset().unwrap_or_default();
    assert_eq!(table.lines().count(), 3, "{table:?}");
    assert!(md.finish().is_none());
}
