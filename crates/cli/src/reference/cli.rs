//! docs/reference/cli.md: every subcommand and flag, walked from clap's command tree
//! (`Cli::command()`), so the page is what `--help` knows, hidden Claude Code flags included.

use crate::args::Cli;
use clap::{Arg, Command, CommandFactory};
use std::fmt::Write;

/// The page.
pub fn markdown() -> String {
    let mut cmd = Cli::command();
    cmd.build();
    let mut page = format!(
        "# Command line\n\n\
         Generated from the `Cli` type (`crates/cli/src/args*.rs`) through clap; do not edit by\n\
         hand. Regenerate with `{}`.\n\n\
         Every subcommand and flag troupe accepts, by command. Flags marked *hidden* are not in\n\
         `--help`: Claude Code's flags troupe accepts for its scripts and the Agent SDKs (what each\n\
         does here is in its description; [../claude-code.md](../claude-code.md) and\n\
         [../claude-cli.md](../claude-cli.md) say more). A flag with an environment variable\n\
         takes its value from it when the flag is absent.\n",
        super::REGENERATE
    );
    page.push_str("\n## Commands\n\n");
    let mut all = Vec::new();
    collect(&cmd, "troupe", &[], &mut all);
    // One line per command of `troupe`, its subcommands linked beside it.
    for entry in all.iter().filter(|e| e.path.matches(' ').count() <= 1) {
        let subs: Vec<String> = all
            .iter()
            .filter(|e| e.path.starts_with(&format!("{} ", entry.path)))
            .filter(|e| entry.path != "troupe" && e.path.matches(' ').count() == 2)
            .map(|e| {
                let name = e.path.rsplit(' ').next().unwrap_or_default();
                format!("[{name}](#{})", anchor(&e.path))
            })
            .collect();
        let subs = match subs.is_empty() {
            true => String::new(),
            false => format!(": {}", subs.join(", ")),
        };
        let _ = writeln!(page, "- [`{}`](#{}){subs}", entry.path, anchor(&entry.path));
    }
    for entry in &all {
        section(&mut page, entry);
    }
    page
}

/// A command, its full name, and the global flags its parents already show.
struct Entry<'a> {
    path: String,
    cmd: &'a Command,
    inherited: Vec<String>,
}

/// `cmd` and its subcommands, depth first, each with its full name; `inherited` are the ids
/// of the global flags a parent defines (shown there, not again on every subcommand).
fn collect<'a>(cmd: &'a Command, path: &str, inherited: &[String], out: &mut Vec<Entry<'a>>) {
    out.push(Entry {
        path: path.to_string(),
        cmd,
        inherited: inherited.to_vec(),
    });
    let mut globals = inherited.to_vec();
    globals.extend(
        cmd.get_arguments()
            .filter(|a| a.is_global_set())
            .map(|a| a.get_id().to_string()),
    );
    for sub in cmd.get_subcommands() {
        if sub.get_name() == "help" {
            continue;
        }
        collect(sub, &format!("{path} {}", sub.get_name()), &globals, out);
    }
}

/// GitHub's anchor for a heading that is `path` in backticks.
fn anchor(path: &str) -> String {
    path.replace(' ', "-")
}

fn section(page: &mut String, entry: &Entry<'_>) {
    let (path, cmd) = (&entry.path, entry.cmd);
    let _ = writeln!(page, "\n## {path}\n");
    let about = cmd
        .get_long_about()
        .or(cmd.get_about())
        .map(|a| a.to_string())
        .unwrap_or_default();
    if !about.is_empty() {
        let _ = writeln!(page, "{}\n", one_line(about));
    }
    let aliases: Vec<&str> = cmd.get_visible_aliases().collect();
    if !aliases.is_empty() {
        let _ = writeln!(page, "Also spelled: `{}`.\n", aliases.join("`, `"));
    }
    let usage = cmd.clone().render_usage().to_string();
    let usage = usage.trim_start_matches("Usage: ");
    let usage: Vec<&str> = usage.lines().map(str::trim).collect();
    let usage = usage.join("\n");
    let _ = writeln!(page, "```text\n{usage}\n```\n");
    let args: Vec<&Arg> = cmd
        .get_arguments()
        .filter(|a| a.get_id() != "help" && !entry.inherited.contains(&a.get_id().to_string()))
        .collect();
    if !entry.inherited.is_empty() {
        let _ = writeln!(
            page,
            "Also takes the global flags of the commands above it (`--{}`).\n",
            entry.inherited.join("`, `--").replace('_', "-")
        );
    }
    if args.is_empty() {
        return;
    }
    page.push_str("| Argument | Value | Description |\n|---|---|---|\n");
    for arg in args {
        let mut value = value(arg);
        let default = default(arg);
        if !default.is_empty() {
            value = format!("{value} (default {default})");
        }
        let mut what = cell(&description(arg));
        if let Some(env) = arg.get_env() {
            what = format!("{what} (env `{}`)", env.to_string_lossy());
        }
        let _ = writeln!(page, "| {} | {} | {what} |", name(arg), value.trim());
    }
}

/// `-p`, `--print`, or `<PROMPT>` for a positional.
fn name(arg: &Arg) -> String {
    if arg.is_positional() {
        let names = arg
            .get_value_names()
            .map(|v| v.iter().map(|n| n.to_string()).collect::<Vec<_>>())
            .unwrap_or_else(|| vec![arg.get_id().to_string().to_uppercase()]);
        return format!("`<{}>`", names.join("> <"));
    }
    let mut parts = Vec::new();
    if let Some(short) = arg.get_short() {
        parts.push(format!("`-{short}`"));
    }
    if let Some(long) = arg.get_long() {
        parts.push(format!("`--{long}`"));
    }
    for alias in arg.get_visible_aliases().unwrap_or_default() {
        parts.push(format!("`--{alias}`"));
    }
    parts.join(", ")
}

/// What the flag takes: nothing for a switch, its value names, or its choices.
fn value(arg: &Arg) -> String {
    if arg.is_positional() || !arg.get_action().takes_values() {
        return String::new();
    }
    let choices: Vec<String> = arg
        .get_possible_values()
        .iter()
        .filter(|v| !v.is_hide_set())
        .map(|v| v.get_name().to_string())
        .collect();
    if !choices.is_empty() {
        return format!("`{}`", choices.join("` \\| `"));
    }
    let names = arg
        .get_value_names()
        .map(|v| v.iter().map(|n| n.to_string()).collect::<Vec<_>>())
        .unwrap_or_else(|| vec![arg.get_id().to_string().to_uppercase()]);
    let many = arg.get_num_args().is_some_and(|n| n.max_values() > 1);
    format!("`{}`{}", names.join(" "), if many { "…" } else { "" })
}

fn default(arg: &Arg) -> String {
    if !arg.get_action().takes_values() {
        return String::new();
    }
    let values: Vec<String> = arg
        .get_default_values()
        .iter()
        .map(|v| v.to_string_lossy().to_string())
        .collect();
    match values.is_empty() {
        true => String::new(),
        false => format!("`{}`", values.join(" ")),
    }
}

fn description(arg: &Arg) -> String {
    let help = one_line(arg.get_help().map(|h| h.to_string()).unwrap_or_default());
    let help = match arg.is_global_set() {
        true => format!("{help} (global: also after a subcommand)"),
        false => help,
    };
    match arg.is_hide_set() {
        true => format!("*hidden* {help}"),
        false => help,
    }
}

/// Help text on one line.
fn one_line(text: String) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Text safe in a table cell.
fn cell(text: &str) -> String {
    text.replace('|', "\\|")
}

#[test]
fn cli_page_is_up_to_date() {
    let page = markdown();
    assert!(page.contains("## troupe team status"), "{page}");
    assert!(page.contains("`--print`"), "{page}");
    super::check_page("docs/reference/cli.md", &page);
}
