//! The REPL's line editor: one thread owns the terminal's bottom rows — a status line (the
//! spinner) and the prompt with the text being typed — and everything else the REPL prints
//! goes through it, above those rows. Keys, lines to print, prompt requests and status
//! changes all arrive on one channel and are handled in order, so nothing printed can leave
//! the prompt half-drawn or a key unhandled (the failure of the editor this replaced: a line
//! pasted with its Enter sat unsubmitted until the next key).
//!
//! Keys typed while no prompt is showing (the agent is busy) go into the line unseen; a line
//! entered then is queued and submitted, echoed, at the next prompt. Ctrl-C then interrupts.
//!
//! Besides a shell prompt's edits: a question offered with a menu is answered from it
//! ([`super::menu`]), Ctrl-R searches the history ([`super::search`]), a large paste stands in
//! the line as a placeholder ([`super::paste`]), an image file's pasted path or the
//! clipboard's image (Ctrl-V, [`super::clipboard`]) as `[Image #N]` ([`super::image_paste`]),
//! `\` + Enter or Shift-Enter adds a line, and an `@` mention that names nothing gets a note
//! when the prompt is sent.

use super::line::{window, History, Line};
use super::menu::{Asking, Menu, Step};
use super::search::{self, Search};
use super::Input;
use crossterm::cursor::{MoveRight, MoveUp};
use crossterm::event::{Event, KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use crossterm::style::Stylize;
use crossterm::terminal::{Clear, ClearType};
use std::collections::VecDeque;
use std::fmt::Write as _;
use std::io::Write;
use std::path::PathBuf;
use std::sync::mpsc;
use unicode_width::UnicodeWidthStr;

/// What the REPL wants from the person.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Want {
    /// A prompt or a command (type-ahead entered earlier answers it at once).
    Prompt,
    /// An answer to the question just printed (only fresh input answers it; what was being
    /// typed is put aside meanwhile).
    Answer,
}

impl Want {
    fn prompt(self) -> &'static str {
        match self {
            Want::Prompt => "> ",
            Want::Answer => "? ",
        }
    }
}

/// What the editor thread is told.
pub enum Msg {
    /// A key, a paste or a resize from the terminal.
    Event(Event),
    /// The terminal can no longer be read.
    InputEnded,
    /// Text to print above the bottom rows (already safe to print; a newline is added).
    Print(String),
    /// Show the prompt (or answer it from the queue).
    Request(Want),
    /// Show (or remove) the status line.
    Status(Option<String>),
    /// Tidy the screen, save the history and stop; the sender hears when that is done.
    Finish(mpsc::Sender<()>),
    /// Choices to offer in place of the `?` prompt once this question text is printed.
    Menu(String, Menu),
    /// Text to put on the prompt line, in place of what is typed (a rewound prompt).
    Prefill(String),
    /// Lines to show under the prompt (the settings' `statusLine`), or none.
    Footer(Option<String>),
}

/// Where the editor sends what the person did.
pub struct Outlets {
    /// Lines, Ctrl-C at an empty prompt, Ctrl-D: what a prompt request gets.
    pub lines: tokio::sync::mpsc::UnboundedSender<Input>,
    /// What a question gets.
    pub answers: tokio::sync::mpsc::UnboundedSender<Input>,
    /// Ctrl-C while no prompt shows: interrupt the running turn.
    pub interrupts: tokio::sync::mpsc::UnboundedSender<()>,
    /// The permission mode Shift-Tab cycles.
    pub mode: super::mode::ModeCell,
    /// The image files pasted as paths, by the number their placeholders show.
    pub images: super::image_paste::PastedImages,
}

/// The editor's state; lives on its thread.
pub struct Editor {
    line: Line,
    history: History,
    history_path: PathBuf,
    want: Option<Want>,
    /// The draft put aside while a question is answered.
    stash: Option<Line>,
    /// The request a question interrupted, shown again once it is answered.
    resume: Option<Want>,
    queued: VecDeque<Input>,
    status: Option<String>,
    /// The lines under the prompt.
    footer: Option<String>,
    /// Bottom rows drawn, and the row (from the first of them) the cursor is on.
    drawn: (usize, usize),
    out: Outlets,
    /// The last key was Esc (a second one clears the line).
    escaped: bool,
    /// Colour for the status line.
    colour: bool,
    /// Menus offered for questions not printed yet: the question's text and its menu.
    menus: Vec<(String, Menu)>,
    /// The menu of the question just printed, for the answer asked for next.
    armed: Option<Menu>,
    /// The menu being answered.
    asking: Option<Asking>,
    /// The Ctrl-R search in progress.
    search: Option<Search>,
    /// The large pastes the line's placeholders stand for.
    pastes: super::paste::Pastes,
    /// Vim keys' mode, when they are on.
    vim: super::vim::Vim,
}

/// Menus kept for questions not printed yet (one whose question never comes is dropped).
const MENUS_KEPT: usize = 16;

impl Editor {
    /// An editor with the history at `history_path`.
    pub fn new(history_path: PathBuf, out: Outlets, colour: bool) -> Editor {
        let history = History::new(super::history_file::load(&history_path));
        let pastes = super::paste::Pastes::new(history.entries(), out.images.clone());
        Editor {
            line: Line::default(),
            history,
            history_path,
            want: None,
            stash: None,
            resume: None,
            queued: VecDeque::new(),
            status: None,
            footer: None,
            drawn: (0, 0),
            out,
            escaped: false,
            colour,
            menus: Vec::new(),
            armed: None,
            asking: None,
            search: None,
            pastes,
            vim: super::vim::Vim::default(),
        }
    }

    /// Handles messages until told to finish (or every sender is gone).
    pub fn run(mut self, msgs: mpsc::Receiver<Msg>) {
        while let Ok(msg) = msgs.recv() {
            let mut buf = String::new();
            match msg {
                Msg::Event(event) => self.event(event, &mut buf),
                Msg::InputEnded => {
                    if self.want == Some(Want::Answer) {
                        self.finish_answer(Input::Eof);
                    }
                    self.answer_or_queue(Input::Eof, &mut buf);
                }
                Msg::Print(text) => {
                    if let Some(i) = self.menus.iter().position(|(q, _)| *q == text) {
                        self.armed = Some(self.menus.remove(i).1);
                    }
                    self.clear(&mut buf);
                    buf.push_str(&text);
                    if !text.ends_with('\n') {
                        buf.push('\n');
                    }
                }
                Msg::Request(want) => self.request(want, &mut buf),
                Msg::Status(status) => self.status = status,
                Msg::Footer(footer) => self.footer = footer,
                Msg::Prefill(text) => {
                    self.line.take();
                    self.line.insert(&text);
                }
                Msg::Menu(question, menu) => {
                    if self.menus.len() == MENUS_KEPT {
                        self.menus.remove(0);
                    }
                    self.menus.push((question, menu));
                }
                Msg::Finish(done) => {
                    self.clear(&mut buf);
                    flush(&buf);
                    let _ = done.send(());
                    return;
                }
            }
            self.redraw(&mut buf);
            flush(&buf);
        }
    }

    fn request(&mut self, want: Want, buf: &mut String) {
        if want == Want::Prompt {
            if let Some(mut input) = self.queued.pop_front() {
                if let Input::Line(text) = &mut input {
                    self.echo(Want::Prompt, text, buf);
                    *text = self.pastes.expand(text);
                }
                let _ = self.out.lines.send(input);
                return;
            }
        } else {
            if let Some(search) = self.search.take() {
                self.line = search.cancel();
            }
            if self.want != Some(Want::Answer) {
                self.stash = Some(std::mem::take(&mut self.line));
                self.resume = self.want;
            }
            self.asking = self.armed.take().map(Asking::new);
        }
        self.want = Some(want);
    }

    fn event(&mut self, event: Event, buf: &mut String) {
        match event {
            Event::Key(key) if key.kind != KeyEventKind::Release => self.key(key, buf),
            Event::Paste(text) => {
                let pasted = self.pastes.insert(&text);
                self.line.insert(&pasted);
            }
            // Resizes and the rest: the redraw after every message is all they need.
            _ => {}
        }
    }

    fn key(&mut self, key: KeyEvent, buf: &mut String) {
        if self.menu_key(key, buf) || self.search_key(key) {
            return;
        }
        if self.want == Some(Want::Prompt) && self.vim.key(key, &mut self.line) {
            self.escaped = false;
            return;
        }
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        let escaped = std::mem::take(&mut self.escaped);
        let line = &mut self.line;
        match key.code {
            // Esc interrupts a running turn; Esc Esc clears the line, or on an empty prompt
            // line offers to rewind.
            KeyCode::Esc if self.want.is_none() => {
                let _ = self.out.interrupts.send(());
            }
            KeyCode::Esc if escaped && line.is_empty() && self.want == Some(Want::Prompt) => {
                self.line.insert("/rewind");
                self.submit(buf);
            }
            KeyCode::Esc if escaped => {
                line.take();
                self.history.reset();
            }
            KeyCode::Esc => self.escaped = true,
            KeyCode::BackTab => {
                let mode = self.out.mode.cycle();
                self.clear(buf);
                buf.push_str(&super::mode::announce(mode));
                buf.push('\n');
            }
            KeyCode::Char('c') if ctrl => self.ctrl_c(buf),
            KeyCode::Char('d') if ctrl && line.is_empty() => self.answer_or_queue(Input::Eof, buf),
            KeyCode::Char('d') if ctrl => line.delete(),
            KeyCode::Char('u') if ctrl => line.kill_to_start(),
            KeyCode::Char('k') if ctrl => line.kill_to_end(),
            KeyCode::Char('w') if ctrl => line.kill_word(),
            KeyCode::Char('h') if ctrl => line.backspace(),
            KeyCode::Char('a') if ctrl => line.home(),
            KeyCode::Char('e') if ctrl => line.end(),
            KeyCode::Char('b') if ctrl => line.left(),
            KeyCode::Char('f') if ctrl => line.right(),
            KeyCode::Char('r') if ctrl && self.want == Some(Want::Prompt) => {
                self.search = Some(Search::new(line.clone(), self.history.entries()));
            }
            KeyCode::Char('p') if ctrl => self.history.up(line),
            KeyCode::Char('n') if ctrl => self.history.down(line),
            KeyCode::Char('v') if ctrl => match super::clipboard::image() {
                Ok(path) => line.insert(&self.out.images.add(path)),
                Err(why) => {
                    self.clear(buf);
                    buf.push_str(&format!("({why})\n"));
                }
            },
            KeyCode::Char(_) if ctrl => {}
            KeyCode::Char(c) => line.insert(c.encode_utf8(&mut [0; 4])),
            KeyCode::Tab => super::complete::tab(line),
            // Alt-Enter, Shift-Enter (where the terminal tells it apart) and `\` + Enter: a
            // new line in the prompt, not the end of it.
            KeyCode::Enter
                if key
                    .modifiers
                    .intersects(KeyModifiers::ALT | KeyModifiers::SHIFT) =>
            {
                line.insert("\n")
            }
            KeyCode::Enter if line.cursor() > 0 && line.chars()[line.cursor() - 1] == '\\' => {
                line.backspace();
                line.insert("\n");
            }
            KeyCode::Enter => self.submit(buf),
            KeyCode::Backspace => line.backspace(),
            KeyCode::Delete => line.delete(),
            KeyCode::Left => line.left(),
            KeyCode::Right => line.right(),
            KeyCode::Home => line.home(),
            KeyCode::End => line.end(),
            KeyCode::Up => self.history.up(line),
            KeyCode::Down => self.history.down(line),
            _ => {}
        }
    }

    /// A key for the Ctrl-R search; whether it took it.
    fn search_key(&mut self, key: KeyEvent) -> bool {
        let Some(search) = self.search.as_mut() else {
            return false;
        };
        let (line, took) = match search.key(key, self.history.entries()) {
            search::Step::Searching => return true,
            search::Step::Done(line) => (line, true),
            search::Step::DoneThenKey(line) => (line, false),
        };
        self.line = line;
        self.search = None;
        self.history.reset();
        took
    }

    /// A key for the menu being answered; whether it took it.
    fn menu_key(&mut self, key: KeyEvent, buf: &mut String) -> bool {
        let Some(asking) = self
            .asking
            .as_mut()
            .filter(|_| self.want == Some(Want::Answer))
        else {
            return false;
        };
        match asking.key(key, &self.pastes.expand(&self.line.text())) {
            Step::Pass => false,
            Step::Stay => true,
            Step::Tell => {
                self.line.take();
                true
            }
            Step::Answer { answer, echo } => {
                self.clear(buf);
                buf.push_str(&crate::sanitize::terminal(&echo));
                buf.push('\n');
                self.finish_answer(Input::Line(answer));
                true
            }
        }
    }

    /// Ctrl-C: clears what is typed at a prompt, else answers "interrupted" (at an empty
    /// prompt, or "no" to a question), else — no prompt showing — interrupts the turn.
    fn ctrl_c(&mut self, buf: &mut String) {
        match self.want {
            Some(Want::Prompt) if !self.line.is_empty() => {
                self.line.take();
                self.history.reset();
            }
            Some(want) => {
                self.clear(buf);
                buf.push_str(want.prompt());
                buf.push_str("^C\n");
                self.finish_answer(Input::Interrupted);
            }
            None => {
                let _ = self.out.interrupts.send(());
            }
        }
    }

    /// Enter: the line answers the request, or is queued for the next prompt.
    fn submit(&mut self, buf: &mut String) {
        let text = self.line.take();
        // History holds prompts: an answer to a question (`y`, `a`) is not one.
        if self.want != Some(Want::Answer) {
            self.history.add(&text);
            if let Err(e) = super::history_file::save(&self.history_path, self.history.entries()) {
                tracing::debug!(error = %e, "could not save the prompt history");
            }
        }
        match self.want {
            Some(want) => {
                self.echo(want, &text, buf);
                self.finish_answer(Input::Line(self.pastes.expand(&text)));
            }
            // Enter on nothing while the agent works (after a question answered by its
            // number, say) leaves nothing to send.
            None if text.trim().is_empty() => {}
            // Expanded when it is sent, so that its echo shows the placeholders.
            None => self.queued.push_back(Input::Line(text)),
        }
    }

    /// Sends an answer to the request, or queues it when there is none.
    fn answer_or_queue(&mut self, input: Input, buf: &mut String) {
        match self.want {
            Some(_) => {
                self.clear(buf);
                self.finish_answer(input);
            }
            None => self.queued.push_back(input),
        }
    }

    fn finish_answer(&mut self, input: Input) {
        match self.want.take() {
            Some(Want::Answer) => {
                self.asking = None;
                self.want = self.resume.take();
                if let Some(draft) = self.stash.take() {
                    self.line = draft;
                }
                let _ = self.out.answers.send(input);
            }
            _ => {
                let _ = self.out.lines.send(input);
            }
        }
    }

    /// Prints the submitted line above, where the prompt was.
    fn echo(&mut self, want: Want, text: &str, buf: &mut String) {
        self.clear(buf);
        let shown = crate::sanitize::terminal(text);
        let _ = writeln!(buf, "{}{}", want.prompt(), shown.replace('\n', "\n  "));
        if want == Want::Prompt && !text.starts_with(['/', '!', '#']) {
            self.note_missing(text, buf);
        }
    }

    /// A note under a prompt for each `@` mention that names nothing (sent as text).
    fn note_missing(&self, text: &str, buf: &mut String) {
        let Some(base) = super::complete::path_base() else {
            return;
        };
        for name in super::mention::missing(text, base) {
            let note = format!(
                "  ⎿ @{} names no file or folder here: it stays in the prompt as text",
                crate::sanitize::terminal(&name)
            );
            match self.colour {
                true => {
                    let _ = writeln!(buf, "{}", note.dim());
                }
                false => {
                    let _ = writeln!(buf, "{note}");
                }
            }
        }
    }

    /// Erases the bottom rows; the cursor ends where they started.
    fn clear(&mut self, buf: &mut String) {
        let (rows, cursor_row) = self.drawn;
        if rows == 0 {
            return;
        }
        buf.push('\r');
        if cursor_row > 0 {
            let _ = write!(buf, "{}", MoveUp(saturating_u16(cursor_row)));
        }
        let _ = write!(buf, "{}", Clear(ClearType::FromCursorDown));
        self.drawn = (0, 0);
    }

    /// Draws the status line and the prompt anew.
    fn redraw(&mut self, buf: &mut String) {
        self.clear(buf);
        let cols = crossterm::terminal::size().map_or(80, |(c, _)| usize::from(c).max(8));
        let mut rows = 0;
        if let Some(status) = &self.status {
            for line in status.lines() {
                if rows > 0 {
                    buf.push_str("\r\n");
                }
                let line = fit(line, cols - 1);
                match self.colour {
                    true => {
                        let _ = write!(buf, "{}", line.dim());
                    }
                    false => buf.push_str(&line),
                }
                rows += 1;
            }
        }
        if let Some(want) = self.want {
            let mut prompt = want.prompt();
            if let (Want::Answer, Some(asking)) = (want, &self.asking) {
                let typed = !self.line.is_empty();
                let (menu_rows, tell) = asking.rows(self.colour, cols - 1, typed);
                for row in menu_rows {
                    if rows > 0 {
                        buf.push_str("\r\n");
                    }
                    buf.push_str(&row);
                    rows += 1;
                }
                match tell {
                    Some(tell) => prompt = tell,
                    None => {
                        self.drawn = (rows, rows.saturating_sub(1));
                        return;
                    }
                }
            }
            if rows > 0 {
                buf.push_str("\r\n");
            }
            let searched = match (&self.search, want) {
                (Some(search), Want::Prompt) => Some(search.shown(self.history.entries())),
                _ => None,
            };
            let (prompt, line) = match &searched {
                Some((prompt, line)) => (prompt.as_str(), line),
                None => (prompt, &self.line),
            };
            // A long search query is cut so that the prompt stays on one row.
            let prompt = match prompt.width() > cols / 2 {
                true => fit(prompt, cols / 2),
                false => prompt.to_string(),
            };
            let (text, col) = window(line, cols - prompt.width() - 1);
            buf.push_str(&prompt);
            buf.push_str(&text);
            // Under the prompt: vim's mode, the status line, then — always — the permission
            // mode and the team.
            let vim = self.vim.label().filter(|_| want == Want::Prompt);
            let footer = match (&self.footer, want == Want::Prompt) {
                (Some(lines), true) => Some(format!("{lines}\n{}", self.out.mode.footer())),
                (None, true) => Some(self.out.mode.footer()),
                (lines, false) => lines.clone(),
            };
            let below = super::footer::draw(vim, footer.as_deref(), true, cols, buf);
            if below > 0 {
                let _ = write!(buf, "{}", MoveUp(saturating_u16(below)));
            }
            let _ = write!(buf, "\r{}", MoveRight(saturating_u16(prompt.width() + col)));
            self.drawn = (rows + 1 + below, rows);
            return;
        }
        let below = super::footer::draw(None, self.footer.as_deref(), rows > 0, cols, buf);
        self.drawn = (rows + below, (rows + below).saturating_sub(1));
    }
}

/// `text` cut to `cols` columns (with `…` when cut).
pub(super) fn fit(text: &str, cols: usize) -> String {
    if text.width() <= cols {
        return text.to_string();
    }
    let mut out = String::new();
    let mut used = 0;
    for c in text.chars() {
        let w = unicode_width::UnicodeWidthChar::width(c).unwrap_or(0);
        if used + w + 1 > cols {
            break;
        }
        out.push(c);
        used += w;
    }
    out.push('…');
    out
}

/// A count of rows or columns as a cursor command takes it.
fn saturating_u16(n: usize) -> u16 {
    u16::try_from(n).unwrap_or(u16::MAX)
}

/// Writes `buf` to the terminal in one go.
fn flush(buf: &str) {
    if buf.is_empty() {
        return;
    }
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(buf.as_bytes()).and_then(|()| out.flush());
}
