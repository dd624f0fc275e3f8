//! What a front end submits to a session (an [`Op`]) and why a turn started (a [`Cause`]).
//! The session driver consumes the one and reports the other; the REPL, `-p`, the SDK's
//! stream-json session and teammates are front ends that speak only these.

use crate::{ChatMessage, ImageData};

/// What the person sends: text, and the images attached to it (an `@shot.png` mention, a
/// pasted image path, an SDK client's image blocks), already fitted to the providers' limits.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Prompt {
    /// The prompt's text, attachments of text files included.
    pub text: String,
    /// The images, in the order they were attached.
    pub images: Vec<ImageData>,
}

impl Prompt {
    /// A prompt of `text` and `images`.
    pub fn new(text: impl Into<String>, images: Vec<ImageData>) -> Prompt {
        Prompt {
            text: text.into(),
            images,
        }
    }

    /// The user message that carries it: the text, then one image block per image.
    pub fn into_message(self) -> ChatMessage {
        ChatMessage::user_with_images(self.text, self.images)
    }
}

impl From<String> for Prompt {
    fn from(text: String) -> Prompt {
        Prompt::new(text, Vec::new())
    }
}

impl From<&str> for Prompt {
    fn from(text: &str) -> Prompt {
        Prompt::new(text, Vec::new())
    }
}

/// An operation a front end submits to the session it drives.
#[derive(Debug, Clone, PartialEq)]
pub enum Op {
    /// New input from the person (or the script): run a turn with it.
    Prompt(Prompt),
    /// A line the front end interprets itself between turns, with the agent at hand (a slash
    /// command, a `!command`, a prompt that may name a custom command).
    Command(String),
    /// Stop the turn that runs now; the session stays.
    Interrupt,
    /// Switch the permission mode (Claude Code's names: `default`, `acceptEdits`, `plan`, …).
    SetMode(String),
    /// Switch the model, from the next request on.
    SetModel(String),
    /// Set the thinking budget: tokens, 0 for none, `None` for the session's default.
    SetThinking(Option<u32>),
    /// A control request of the SDK's protocol that needs the session between turns.
    Control {
        /// The request id to answer.
        id: String,
        /// The request as received.
        request: serde_json::Value,
    },
    /// End the session: a running turn stops at its next round boundary.
    Shutdown,
}

/// Why a turn started.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cause {
    /// Input from the person or the script.
    Prompt,
    /// Mail (a teammate's message, a scheduled prompt, a protocol's answer) waited.
    Mail,
    /// A background command finished and its notification waited.
    Background,
    /// A prompt the session gave itself (a task claimed from the board, a hook's feedback,
    /// a retry).
    Follow,
}

impl Cause {
    /// Whether the turn has input of its own (otherwise it answers what waited).
    pub fn has_input(self) -> bool {
        matches!(self, Cause::Prompt | Cause::Follow)
    }
}
