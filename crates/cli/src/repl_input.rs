//! Claude Code's prompt prefixes in the REPL: `!cmd` runs a shell command as the person (its
//! output is shown, and goes to the model with the next prompt in Claude Code's
//! `<bash-input>`/`<bash-stdout>`/`<bash-stderr>` form), and `@path` in a prompt attaches that
//! file (or a folder's listing) after the prompt. `/permissions` shows the rules in force.

use std::path::{Path, PathBuf};
use std::time::Duration;
use troupe_agent::permissions::Policy;
use troupe_protocol::session::Prompt;

/// What one attached file may add to a prompt; more is cut with a note.
const ATTACH_LIMIT: usize = 256 * 1024;

/// How long a `!` command may run before it is ended.
const SHELL_TIMEOUT: Duration = Duration::from_secs(600);

/// The folder troupe was started from when it is inside `workspace` (as Claude Code starts
/// there), else the workspace.
pub fn start_folder(workspace: &Path) -> PathBuf {
    let here = std::env::current_dir();
    if here.as_deref().is_ok_and(|h| h == workspace) {
        // Started at the root (the usual case): no path to resolve.
        return workspace.to_path_buf();
    }
    let here = here.and_then(|d| d.canonicalize());
    let root = workspace.canonicalize();
    match (here, root) {
        (Ok(here), Ok(root)) if here.starts_with(&root) => here,
        _ => workspace.to_path_buf(),
    }
}

/// The output of a `!` command: what to show the person and what the model gets.
pub struct ShellRun {
    /// The output as shown (stdout, then stderr, then the exit status when not 0).
    pub shown: String,
    /// Claude Code's form, put before the next prompt.
    pub for_model: String,
}

/// Runs `command` with `bash -c` in `dir`, as the person typed it (not the model's call: no
/// permission question, no sandbox), with its output captured.
pub async fn shell(command: &str, dir: &Path) -> ShellRun {
    let mut bash = tokio::process::Command::new("bash");
    // The person's own command: troupe's environment with what it adds (nothing withheld).
    troupe_tools::child_env::apply_overlay(bash.as_std_mut());
    let run = bash
        .arg("-c")
        .arg(command)
        .current_dir(dir)
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true)
        .output();
    let (stdout, stderr, status) = match tokio::time::timeout(SHELL_TIMEOUT, run).await {
        Ok(Ok(out)) => (
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
            match out.status.code() {
                Some(0) => None,
                Some(code) => Some(format!("exit code {code}")),
                None => Some("ended by a signal".to_string()),
            },
        ),
        Ok(Err(e)) => (String::new(), format!("could not run bash: {e}"), None),
        Err(_) => (
            String::new(),
            format!("ended after {} s", SHELL_TIMEOUT.as_secs()),
            None,
        ),
    };
    let mut shown = String::new();
    for part in [&stdout, &stderr] {
        if !part.trim().is_empty() {
            shown.push_str(part.trim_end());
            shown.push('\n');
        }
    }
    if let Some(status) = &status {
        shown.push_str(&format!("({status})\n"));
    }
    if shown.is_empty() {
        shown.push_str("(no output)\n");
    }
    let mut stderr_text = stderr.trim_end().to_string();
    if let Some(status) = status {
        if !stderr_text.is_empty() {
            stderr_text.push('\n');
        }
        stderr_text.push_str(&status);
    }
    let for_model = format!(
        "<bash-input>{command}</bash-input>\n<bash-stdout>{}</bash-stdout><bash-stderr>{stderr_text}</bash-stderr>",
        stdout.trim_end()
    );
    ShellRun { shown, for_model }
}

/// The prompt with each `@path` that names a file or folder (relative to `dir`, or absolute;
/// `@"with spaces"` and `@with\ spaces` too) attached after it, and each that names an image
/// file attached as an image beside it; other `@words` (a path that does not exist) stay text.
pub fn attach(prompt: &str, dir: &Path) -> Prompt {
    attach_from(prompt, prompt, dir)
}

/// `prompt` with the `@path`s of `typed` attached after it: the part the person typed, not
/// text piped in or attached with `--file`, whose `@`s are not mentions.
pub fn attach_from(prompt: &str, typed: &str, dir: &Path) -> Prompt {
    let mut attached: Vec<String> = Vec::new();
    let mut seen: Vec<String> = Vec::new();
    let mut images = crate::prompt_images::Collected::default();
    for mention in crate::term::mention::mentions(typed) {
        let name = mention.name();
        if name.is_empty() || seen.iter().any(|n| n == name) {
            continue;
        }
        seen.push(name.to_string());
        let path = crate::term::mention::resolve(name, dir);
        if let Some(media_type) = troupe_tools::image_file::sniff_file(&path) {
            images.add(name, &path, media_type);
        } else if let Some(block) = attachment(name, &path) {
            attached.push(block);
        }
    }
    let mut out = prompt.to_string();
    for block in attached {
        out.push_str("\n\n");
        out.push_str(&block);
    }
    report_images(&images);
    Prompt::new(out, images.images)
}

/// Tells the person what happened to the images a prompt attaches: those downscaled, and
/// those left out and why.
pub fn report_images(images: &crate::prompt_images::Collected) {
    for note in &images.notes {
        crate::render::sanitize::errln!("({note})");
    }
    for why in &images.problems {
        crate::render::sanitize::errln!("warning: an image was not attached: {why}");
    }
}

/// The attachment of one path shown as `name`: a file's text, or a folder's entries; `None`
/// when the path names nothing readable.
pub fn attachment(name: &str, path: &Path) -> Option<String> {
    let meta = std::fs::metadata(path).ok()?;
    if meta.is_dir() {
        let mut entries: Vec<String> = std::fs::read_dir(path)
            .ok()?
            .flatten()
            .map(|e| {
                let mut n = e.file_name().to_string_lossy().into_owned();
                if e.path().is_dir() {
                    n.push('/');
                }
                n
            })
            .collect();
        entries.sort();
        return Some(format!(
            "<folder path=\"{name}\">\n{}\n</folder>",
            entries.join("\n")
        ));
    }
    let bytes = std::fs::read(path).ok()?;
    if bytes.contains(&0) {
        return Some(format!(
            "<file path=\"{name}\">(binary, {} bytes: not attached)</file>",
            bytes.len()
        ));
    }
    let text = String::from_utf8_lossy(&bytes);
    let (text, note) = match text.char_indices().nth(ATTACH_LIMIT) {
        Some((cut, _)) => (
            &text[..cut],
            format!("\n(cut at {ATTACH_LIMIT} characters of {})", bytes.len()),
        ),
        None => (&text[..], String::new()),
    };
    Some(format!("<file path=\"{name}\">\n{text}{note}\n</file>"))
}

/// A prompt is estimated at a token per this many bytes.
const BYTES_PER_TOKEN: u64 = 4;

/// What an attached image counts as, in bytes of text: about 1,600 tokens.
const IMAGE_BYTES: usize = 1_600 * BYTES_PER_TOKEN as usize;

/// Whether `prompt` is refused before its request because it cannot fit the model's context
/// window (the reason, with what to do, printed); the REPL asks before each prompt's turn.
pub fn refuse_oversized(agent: &troupe_agent::Agent, prompt: &Prompt) -> bool {
    let report = agent.context();
    // An image counts as about as many tokens as the model is charged for one.
    let bytes = prompt.text.len() + prompt.images.len() * IMAGE_BYTES;
    match oversized(bytes, report.window, report.used, report.fixed) {
        Some(why) => {
            crate::render::sanitize::errln!("{why}");
            true
        }
        None => false,
    }
}

/// Why a prompt of `bytes` does not fit a window of `window` tokens of which the next request
/// already takes `used` (`fixed` of them the system prompt and tools); `None` when it fits, or
/// when the conversation alone is past the window (compaction's business, not the prompt's).
fn oversized(bytes: usize, window: u64, used: u64, fixed: u64) -> Option<String> {
    let tokens = (bytes as u64).div_ceil(BYTES_PER_TOKEN);
    if used >= window || used + tokens <= window {
        return None;
    }
    let what = format!(
        "error: this prompt is about {tokens} tokens and the model's context window holds {window}"
    );
    Some(match fixed + tokens > window {
        true => format!(
            "{what}, even with an empty conversation: attach less (fewer or smaller @files, a \
             shorter paste) or send it in parts. Nothing was sent."
        ),
        false => format!(
            "{what}, of which the conversation takes {used}: /compact (or /clear) to make \
             room, or attach less. Nothing was sent."
        ),
    })
}

/// `/permissions`: the mode, the rules in force and the ones this session added.
pub fn permissions(policy: &Policy, session: &[troupe_agent::permissions::Rule]) -> String {
    let mut out = format!(
        "permission mode: {} (Shift-Tab cycles default → acceptEdits → plan)\n",
        policy.mode
    );
    let list = |rules: &[troupe_agent::permissions::Rule]| {
        if rules.is_empty() {
            "(none)".to_string()
        } else {
            rules
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        }
    };
    out.push_str(&format!("allow: {}\n", list(&policy.rules.allow)));
    out.push_str(&format!("ask:   {}\n", list(&policy.rules.ask)));
    out.push_str(&format!("deny:  {}\n", list(&policy.rules.deny)));
    out.push_str(&format!("allowed this session: {}\n", list(session)));
    out.push_str(
        "Rules come from the settings files (`troupe config` lists them) and --allowedTools / \
         --disallowedTools; \"don't ask again\" (2, or a) at a question adds one for the \
         session, r writes it to .troupe/settings.local.json too.\n",
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn at_paths_attach_files_and_folders_and_leave_other_words() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(dir.path().join("notes.txt"), "line one\n").unwrap_or_default();
        std::fs::create_dir(dir.path().join("src")).unwrap_or_default();
        std::fs::write(dir.path().join("src/main.rs"), "fn main() {}\n").unwrap_or_default();
        let prompt = "summarise @notes.txt and @src, mail me@example.com";
        let out = attach(prompt, dir.path()).text;
        assert!(out.starts_with(prompt), "{out}");
        assert!(
            out.contains("<file path=\"notes.txt\">\nline one\n\n</file>"),
            "{out}"
        );
        assert!(
            out.contains("<folder path=\"src\">\nmain.rs\n</folder>"),
            "{out}"
        );
        assert!(!out.contains("example.com\">"), "{out}");
        assert_eq!(
            attach("no attachments", dir.path()),
            Prompt::from("no attachments")
        );
        std::fs::write(dir.path().join("with spaces.md"), "spaced\n").unwrap_or_default();
        for prompt in [r#"read @"with spaces.md""#, r"read @with\ spaces.md"] {
            let out = attach(prompt, dir.path()).text;
            assert!(
                out.contains("<file path=\"with spaces.md\">\nspaced\n"),
                "{out}"
            );
        }
    }

    #[test]
    fn an_image_mention_attaches_the_image_not_its_bytes_as_text() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let gif = b"GIF89a\x01\0\x01\0\0\0\0;";
        std::fs::write(dir.path().join("dot.gif"), gif).unwrap_or_default();
        let prompt = attach("what is @dot.gif and @dot.gif?", dir.path());
        assert_eq!(prompt.text, "what is @dot.gif and @dot.gif?");
        assert_eq!(
            prompt.images,
            vec![troupe_tools::image_file::encode("image/gif", gif)]
        );
    }

    #[test]
    fn a_prompt_past_the_window_is_refused_with_what_to_do() {
        assert_eq!(oversized(4000, 10_000, 2_000, 1_000), None);
        let room = oversized(32_000, 10_000, 3_000, 1_000).unwrap_or_default();
        assert!(room.contains("about 8000 tokens"), "{room}");
        assert!(room.contains("/compact"), "{room}");
        let never = oversized(40_000, 10_000, 1_500, 1_500).unwrap_or_default();
        assert!(never.contains("attach less"), "{never}");
        assert!(!never.contains("/compact"), "{never}");
        assert_eq!(oversized(100, 10_000, 12_000, 1_000), None);
    }

    #[tokio::test]
    async fn a_shell_command_is_shown_and_framed_for_the_model() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let run = shell("echo hi; echo oops >&2; exit 3", dir.path()).await;
        assert_eq!(run.shown, "hi\noops\n(exit code 3)\n");
        assert_eq!(
            run.for_model,
            "<bash-input>echo hi; echo oops >&2; exit 3</bash-input>\n<bash-stdout>hi</bash-stdout><bash-stderr>oops\nexit code 3</bash-stderr>"
        );
        assert_eq!(shell("true", dir.path()).await.shown, "(no output)\n");
    }
}
