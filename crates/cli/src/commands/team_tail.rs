//! `troupe team tail NAME`: one teammate's transcript, followed live — what it was told, what
//! it answered, each tool call and the first line of its result, one timestamp a line. The
//! transcript is read through the team's store (from any machine, on NATS); the store's change
//! notifications say when it grew, and only what was added is shown.

use crate::render::sanitize::{errln, outln};
use anyhow::Result;
use troupe_agent::transcript::{Boundary, Line};
use troupe_durable::jsonl;
use troupe_protocol::{ContentBlock, Role};
use troupe_store::{Areas, SharedStore};

/// How long a follow waits before looking again without a change notification (a backend
/// whose notifications may miss a change).
const RECHECK: std::time::Duration = std::time::Duration::from_secs(2);

/// Runs `troupe team tail NAME -n LINES`; returns the exit code (1 for a name not on the team).
pub async fn run(store: &SharedStore, name: &str, lines: usize) -> Result<i32> {
    if let Err(why) = super::team_names::teammate(&**store, name).await {
        errln!("troupe: {why}");
        return Ok(1);
    }
    // Watching starts before the first read, so nothing written between the two is missed.
    let mut feed = store.watch_changes().await?;
    let mut offset = print_from(store, name, 0, Some(lines)).await?;
    loop {
        tokio::select! {
            changed = feed.changed() => {
                if !changed.intersects(Areas::TRANSCRIPTS) {
                    continue;
                }
            }
            () = tokio::time::sleep(RECHECK) => {}
        }
        offset = print_from(store, name, offset, None).await?;
    }
}

/// Prints the entries of `name`'s transcript from byte `from` on (only the last `last` of them,
/// if given); returns the offset to go on from.
async fn print_from(
    store: &SharedStore,
    name: &str,
    from: u64,
    last: Option<usize>,
) -> Result<u64> {
    let mut read = store.read_transcript_from(name, from).await?;
    if read.len < from {
        // The transcript was replaced (a fresh start): read it from the top.
        read = store.read_transcript_from(name, 0).await?;
    }
    let end = read.end();
    let chunk = jsonl::Chunk {
        start: read.start,
        file_len: read.len,
        bytes: read.bytes,
    };
    let (entries, _corrupt) = jsonl::parse_chunk::<Line>(&chunk);
    let rendered: Vec<String> = entries.iter().flat_map(|l| render(name, l)).collect();
    let skip = last.map_or(0, |n| rendered.len().saturating_sub(n));
    for line in &rendered[skip..] {
        outln!("{line}");
    }
    Ok(end)
}

/// One transcript entry as lines of text.
fn render(name: &str, line: &Line) -> Vec<String> {
    match line {
        Line::Meta { .. } => Vec::new(),
        Line::Boundary { kind, ts, .. } => vec![format!(
            "{} {name} ── {} ──",
            clock(*ts),
            match kind {
                Boundary::Clear => "conversation cleared",
                Boundary::Compact => "conversation compacted",
                Boundary::Rewind => "conversation rewound",
            }
        )],
        Line::Message { message, ts, .. } => {
            let at = clock(*ts);
            let mut out = Vec::new();
            for block in &message.content {
                match (message.role, block) {
                    (Role::User, ContentBlock::Text { text }) => {
                        out.push(format!("{at} {name} ← {}", first_line(text)));
                    }
                    (Role::Assistant, ContentBlock::Text { text }) if !text.trim().is_empty() => {
                        for l in text.trim().lines() {
                            out.push(format!("{at} {name}: {l}"));
                        }
                    }
                    (
                        _,
                        ContentBlock::ToolUse {
                            name: tool, input, ..
                        },
                    ) => out.push(format!(
                        "{at} {name} ⏺ {tool}({})",
                        troupe_tools::summarize_input(tool, input)
                    )),
                    (
                        _,
                        ContentBlock::ToolResult {
                            content, is_error, ..
                        },
                    ) => {
                        let more = content.lines().count().saturating_sub(1);
                        out.push(format!(
                            "{at} {name}   ⎿ {}{}{}",
                            if *is_error { "error: " } else { "" },
                            first_line(content),
                            if more > 0 {
                                format!(" (+{more} lines)")
                            } else {
                                String::new()
                            }
                        ));
                    }
                    _ => {}
                }
            }
            out
        }
    }
}

/// `HH:MM:SS` (UTC), as `troupe team log` shows times.
fn clock(ts: u64) -> String {
    let secs = ts / 1000;
    format!(
        "{:02}:{:02}:{:02}",
        (secs / 3600) % 24,
        (secs / 60) % 60,
        secs % 60
    )
}

/// The first non-blank line of `text`, cut to 160 characters.
fn first_line(text: &str) -> String {
    let line = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
    if line.chars().count() > 160 {
        format!("{}…", line.chars().take(159).collect::<String>())
    } else {
        line.to_string()
    }
}
