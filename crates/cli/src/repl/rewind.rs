//! `/rewind` (and Esc Esc on an empty prompt line): the session's prompts, newest first, to go
//! back to before one — its files as the checkpoints saved them, the conversation cut before
//! it (the prompt put back on the input line), or both. Teammates' worktrees are theirs:
//! nothing here touches them.

use super::{Io, Session};
use crate::checkpoint::store::{PromptMark, Store};
use crate::render::sanitize::{errln, outln};
use crate::term::menu::{Choice, Menu};
use crate::term::Input;
use std::path::Path;
use troupe_agent::Agent;
use troupe_protocol::{ChatMessage, ContentBlock, Role};

/// Prompts offered at most (the newest).
const LISTED: usize = 20;

/// What to put back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Restore {
    Both,
    Conversation,
    Code,
}

/// Runs `/rewind`.
pub(super) async fn rewind(agent: &mut Agent, session: &Session<'_>, io: &mut Io) {
    let Some(path) = agent.transcript_path().map(Path::to_path_buf) else {
        return outln!("(nothing to rewind: this session keeps no transcript)");
    };
    let store = Store::of_transcript(&path);
    let prompts: Vec<PromptMark> = store.prompts().into_iter().take(LISTED).collect();
    if prompts.is_empty() {
        return outln!("(nothing to rewind yet: no prompt has run in this session)");
    }
    let mut choices: Vec<(String, String)> = prompts
        .iter()
        .enumerate()
        .map(|(i, p)| ((i + 1).to_string(), label(p)))
        .collect();
    choices.push(("q".into(), "Cancel".into()));
    let answer = ask(
        io,
        "Rewind to before which prompt? (newest first)",
        &choices,
    )
    .await;
    let Some(chosen) = answer
        .trim()
        .parse::<usize>()
        .ok()
        .and_then(|n| prompts.get(n.wrapping_sub(1)))
    else {
        return outln!("(rewind cancelled)");
    };
    let choices = [
        ("1", "Restore code and conversation"),
        ("2", "Restore conversation"),
        ("3", "Restore code"),
        ("q", "Cancel"),
    ]
    .map(|(a, l)| (a.to_string(), l.to_string()));
    let restore = match ask(io, "Restore what?", &choices).await.trim() {
        "1" => Restore::Both,
        "2" => Restore::Conversation,
        "3" => Restore::Code,
        _ => return outln!("(rewind cancelled)"),
    };
    if restore != Restore::Conversation {
        restore_code(&store, chosen, session).await;
    }
    if restore != Restore::Code {
        restore_conversation(agent, &store, &prompts, chosen, io);
    }
}

/// Asks `question` with `choices` (answer, label): a menu on a terminal, a numbered list
/// otherwise. Ctrl-C or the end of input cancel.
async fn ask(io: &mut Io, question: &str, choices: &[(String, String)]) -> String {
    let escape = choices.len() - 1;
    if io.printer.is_live() {
        let menu = Menu {
            choices: choices
                .iter()
                .map(|(answer, label)| Choice {
                    label: label.clone(),
                    answer: answer.clone(),
                    tell: false,
                })
                .collect(),
            escape,
            tell_label: String::new(),
        };
        io.printer.offer(question, menu);
    } else {
        for (answer, label) in choices {
            io.printer.line(&format!("  {answer}. {label}"));
        }
    }
    io.printer.styled(question);
    match io.reader.answer().await {
        Input::Line(line) => line,
        Input::Interrupted | Input::Eof => "q".to_string(),
    }
}

/// How a prompt is listed: its first line, and the files changed since.
fn label(p: &PromptMark) -> String {
    let shown = p.typed.as_deref().unwrap_or(&p.text);
    let first = shown.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
    let mut text: String = first.chars().take(60).collect();
    if first.chars().count() > 60 || shown.lines().count() > 1 {
        text.push('…');
    }
    let age =
        troupe_tools::background::describe_age(troupe_protocol::now_ms().saturating_sub(p.ts));
    match p.changed_since {
        0 => format!("{text} · {age} ago"),
        1 => format!("{text} · {age} ago · 1 file changed since"),
        n => format!("{text} · {age} ago · {n} files changed since"),
    }
}

async fn restore_code(store: &Store, chosen: &PromptMark, session: &Session<'_>) {
    let workspace = &session.team.shared().config.workspace;
    let (done, failed) = store.restore(chosen.seq);
    let shown = |p: &Path| p.strip_prefix(workspace).unwrap_or(p).display().to_string();
    match done.len() {
        0 if failed.is_empty() => outln!("(code: no file to put back since that prompt)"),
        n => outln!(
            "(code: put back {n} file{} as before that prompt: {})",
            if n == 1 { "" } else { "s" },
            done.iter().map(|p| shown(p)).collect::<Vec<_>>().join(", ")
        ),
    }
    for (path, why) in failed {
        errln!("error: could not put back {}: {why}", shown(&path));
    }
    let teammates = teammates_with_changes(session).await;
    if !teammates.is_empty() {
        outln!(
            "(teammates' changes in their own worktrees are theirs and stay as they are: {})",
            teammates.join(", ")
        );
    }
}

fn restore_conversation(
    agent: &mut Agent,
    store: &Store,
    prompts: &[PromptMark],
    chosen: &PromptMark,
    io: &Io,
) {
    let Some(index) = message_index(agent.messages(), prompts, chosen) else {
        return outln!(
            "(conversation: that prompt is no longer in it (compacted or cleared); left as it is)"
        );
    };
    if let Err(e) = agent.rewind_to(index) {
        return errln!("error: could not rewind the conversation: {e}");
    }
    if let Err(e) = store.drop_from(chosen.seq) {
        errln!("error: could not record the rewind among the checkpoints: {e}");
    }
    outln!(
        "(conversation: rewound to before that prompt · {} messages kept)",
        index
    );
    if io.printer.is_live() {
        io.printer
            .prefill(chosen.typed.as_deref().unwrap_or(&chosen.text));
    }
}

/// Where `chosen` starts in `messages`: the user message holding its text, counted from the
/// end among the prompts of the same text.
fn message_index(
    messages: &[ChatMessage],
    prompts: &[PromptMark],
    chosen: &PromptMark,
) -> Option<usize> {
    let nth = prompts
        .iter()
        .take_while(|p| p.seq != chosen.seq)
        .filter(|p| p.text == chosen.text)
        .count();
    messages
        .iter()
        .enumerate()
        .rev()
        .filter(|(_, m)| m.role == Role::User && is_text(m, &chosen.text))
        .nth(nth)
        .map(|(i, _)| i)
}

fn is_text(message: &ChatMessage, text: &str) -> bool {
    matches!(message.content.as_slice(), [ContentBlock::Text { text: t }] if t == text)
}

/// Teammates whose worktrees hold changes of their own (uncommitted, or commits the
/// workspace lacks).
async fn teammates_with_changes(session: &Session<'_>) -> Vec<String> {
    let Ok(roster) = session.team.roster().await else {
        return Vec::new();
    };
    let workspace = &session.team.shared().config.workspace;
    let head = |dir: &Path| git_out(dir, &["rev-parse", "HEAD"]);
    let ours = head(workspace);
    roster
        .members
        .iter()
        .filter(|m| {
            m.worktree.as_deref().is_some_and(|wt| {
                let wt = Path::new(wt);
                git_out(wt, &["status", "--porcelain"]).is_some_and(|s| !s.trim().is_empty())
                    || head(wt) != ours
            })
        })
        .map(|m| m.name.clone())
        .collect()
}

fn git_out(dir: &Path, args: &[&str]) -> Option<String> {
    let out = std::process::Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}
