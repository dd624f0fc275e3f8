//! Ctrl-V pastes an image from the system clipboard, as Claude Code's does: a terminal pastes
//! text only, so the image is read with the desktop's clipboard tool (`wl-paste` under
//! Wayland, `xclip` under X11), kept in memory for the session, and stands in the line as
//! `[Image #N]` like a pasted image path.

use super::image_paste::Pasted;
use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// How long a clipboard tool may take before it is given up on.
const TOOL_LIMIT: Duration = Duration::from_secs(3);

/// The most bytes taken from the clipboard.
const MAX_BYTES: u64 = troupe_tools::image_fit::MAX_SOURCE_BYTES as u64;

/// The clipboard's image, or why there is none (what to do instead).
pub fn image() -> Result<Pasted, String> {
    let mut tried = Vec::new();
    for (var, tool, args) in TOOLS {
        if std::env::var_os(var).is_none_or(|v| v.is_empty()) {
            continue;
        }
        tried.push(*tool);
        if let Some(bytes) = run(tool, args) {
            if let Some(media_type) = troupe_tools::image_file::sniff(&bytes) {
                return Ok(Pasted::Copied {
                    media_type,
                    bytes: bytes.into(),
                });
            }
        }
    }
    Err(match tried.is_empty() {
        true => "no image pasted: no desktop clipboard here (neither WAYLAND_DISPLAY nor \
                 DISPLAY is set); paste or @-mention the image file's path instead"
            .to_string(),
        false => format!(
            "no image on the clipboard ({} found none; is it installed?); copy an image, or \
             paste its file's path",
            tried.join(", ")
        ),
    })
}

/// Each desktop's clipboard tool: the variable that says the desktop is there, the tool and
/// its arguments to print the clipboard's image.
const TOOLS: &[(&str, &str, &[&str])] = &[
    (
        "WAYLAND_DISPLAY",
        "wl-paste",
        &["--no-newline", "--type", "image/png"],
    ),
    (
        "DISPLAY",
        "xclip",
        &["-selection", "clipboard", "-t", "image/png", "-o"],
    ),
];

/// What `tool` prints, when it runs, ends in time and succeeds.
fn run(tool: &str, args: &[&str]) -> Option<Vec<u8>> {
    let mut child = Command::new(tool)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    let mut stdout = child.stdout.take()?;
    let reader = std::thread::spawn(move || {
        let mut bytes = Vec::new();
        let _ = (&mut stdout).take(MAX_BYTES).read_to_end(&mut bytes);
        bytes
    });
    let deadline = Instant::now() + TOOL_LIMIT;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(20)),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return None;
            }
        }
    };
    let bytes = reader.join().ok()?;
    (status.success() && !bytes.is_empty()).then_some(bytes)
}
