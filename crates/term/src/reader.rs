//! The REPL's side of the terminal: [`LineReader`] asks for lines and answers (from the editor
//! thread on a terminal, one line of stdin at a time otherwise), and [`Printer`] prints above
//! the prompt from any thread.

use super::editor::{Editor, Msg, Outlets, Want};
use super::Input;
use std::io::{BufRead, IsTerminal, Write};
use std::path::PathBuf;
use std::sync::{mpsc, Arc, Mutex};
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver};

/// Prints whole lines: through the editor (above the prompt) on a terminal, plainly otherwise.
#[derive(Clone, Default)]
pub struct Printer {
    editor: Arc<Mutex<Option<mpsc::Sender<Msg>>>>,
}

impl Printer {
    /// A printer with no editor attached yet.
    pub fn new() -> Printer {
        Printer::default()
    }

    /// Prints one line, its control characters made visible (it may quote a model or a file).
    pub fn line(&self, text: &str) {
        self.styled(&crate::sanitize::terminal(text));
    }

    /// Prints text that is already safe for the terminal (troupe's own colours around
    /// sanitised text); a newline is added when it lacks one.
    pub fn styled(&self, text: &str) {
        let msg = Msg::Print(text.to_string());
        if let Err(mpsc::SendError(Msg::Print(text))) = self.send(msg) {
            let mut out = std::io::stdout().lock();
            let newline = if text.ends_with('\n') { "" } else { "\n" };
            let _ = write!(out, "{text}{newline}").and_then(|()| out.flush());
        }
    }

    /// Shows `status` on the line above the prompt (the spinner), or removes it. Without an
    /// editor (stdin or stdout not a terminal) there is no status line.
    pub fn status(&self, status: Option<String>) {
        let _ = self.send(Msg::Status(status));
    }

    /// Offers `menu` for the question whose text is `question`: once that text is printed, the
    /// next answer asked for is taken from the menu (without an editor, nothing changes: the
    /// answer is the next line).
    pub fn offer(&self, question: &str, menu: super::menu::Menu) {
        let _ = self.send(Msg::Menu(question.to_string(), menu));
    }

    /// Shows `lines` under the prompt (the settings' `statusLine`), or removes them.
    pub fn footer(&self, lines: Option<String>) {
        let _ = self.send(Msg::Footer(lines));
    }

    /// Puts `text` on the prompt line, to be edited and sent (nothing without an editor).
    pub fn prefill(&self, text: &str) {
        let _ = self.send(Msg::Prefill(text.to_string()));
    }

    /// Whether an editor owns the terminal (so a status line can be shown).
    pub fn is_live(&self) -> bool {
        self.editor.lock().map(|e| e.is_some()).unwrap_or(false)
    }

    fn send(&self, msg: Msg) -> Result<(), mpsc::SendError<Msg>> {
        match self.editor.lock().ok().as_ref().and_then(|e| e.as_ref()) {
            Some(tx) => tx.send(msg),
            None => Err(mpsc::SendError(msg)),
        }
    }
}

/// How lines are read.
enum Kind {
    /// The editor thread owns the terminal.
    Terminal {
        tx: mpsc::Sender<Msg>,
        raw: Option<super::raw::RawMode>,
    },
    /// stdin is not a terminal: one line per request, read by a thread of its own.
    Plain { want: Option<mpsc::Sender<()>> },
}

/// Asks the person for lines and answers.
pub struct LineReader {
    kind: Kind,
    lines: UnboundedReceiver<Input>,
    answers: UnboundedReceiver<Input>,
    outstanding: bool,
    printer: Printer,
    images: super::image_paste::PastedImages,
}

impl LineReader {
    /// Starts reading: the line editor when stdin and stdout are a terminal (history kept in
    /// `history`), plain lines otherwise. `colour` styles the status line.
    pub fn start(
        history: PathBuf,
        printer: Printer,
        colour: bool,
        mode: super::mode::ModeCell,
    ) -> std::io::Result<(LineReader, Interrupts)> {
        let (line_tx, lines) = unbounded_channel();
        let (answer_tx, answers) = unbounded_channel();
        let (interrupt_tx, interrupts) = unbounded_channel();
        let terminal = std::io::stdin().is_terminal() && std::io::stdout().is_terminal();
        let images = super::image_paste::PastedImages::default();
        let kind = if terminal {
            let raw = super::raw::RawMode::enable()?;
            let (tx, rx) = mpsc::channel();
            let outlets = Outlets {
                lines: line_tx,
                answers: answer_tx,
                interrupts: interrupt_tx,
                mode,
                images: images.clone(),
            };
            let editor = Editor::new(history, outlets, colour);
            std::thread::Builder::new()
                .name("troupe-editor".into())
                .spawn(move || editor.run(rx))?;
            let keys = tx.clone();
            std::thread::Builder::new()
                .name("troupe-keys".into())
                .spawn(move || loop {
                    let msg = match crossterm::event::read() {
                        Ok(event) => Msg::Event(event),
                        Err(_) => Msg::InputEnded,
                    };
                    let ended = matches!(msg, Msg::InputEnded);
                    if keys.send(msg).is_err() || ended {
                        return;
                    }
                })?;
            if let Ok(mut slot) = printer.editor.lock() {
                *slot = Some(tx.clone());
            }
            Kind::Terminal { tx, raw: Some(raw) }
        } else {
            drop((answer_tx, interrupt_tx));
            let (want_tx, want_rx) = mpsc::channel::<()>();
            std::thread::Builder::new()
                .name("troupe-stdin".into())
                .spawn(move || {
                    let mut stdin = std::io::stdin().lock();
                    while want_rx.recv().is_ok() {
                        let mut line = String::new();
                        let input = match stdin.read_line(&mut line) {
                            Ok(0) | Err(_) => Input::Eof,
                            Ok(_) => Input::Line(line.trim_end_matches(['\n', '\r']).into()),
                        };
                        let eof = input == Input::Eof;
                        if line_tx.send(input).is_err() || eof {
                            return;
                        }
                    }
                })?;
            Kind::Plain {
                want: Some(want_tx),
            }
        };
        let reader = LineReader {
            kind,
            lines,
            answers,
            outstanding: false,
            printer,
            images,
        };
        Ok((reader, Interrupts(interrupts)))
    }

    /// The image files pasted as paths at the prompt, by the number of their `[Image #N]`.
    pub fn pasted_images(&self) -> &super::image_paste::PastedImages {
        &self.images
    }

    /// Shows the prompt, unless it is already showing.
    pub fn request(&mut self) {
        if self.outstanding {
            return;
        }
        self.outstanding = match &self.kind {
            Kind::Terminal { tx, .. } => tx.send(Msg::Request(Want::Prompt)).is_ok(),
            Kind::Plain { want: Some(want) } => want.send(()).is_ok(),
            Kind::Plain { want: None } => false,
        };
    }

    /// The next line (or Ctrl-C, Ctrl-D) at the prompt; `Eof` once input is gone.
    pub async fn next(&mut self) -> Input {
        let input = self.lines.recv().await.unwrap_or(Input::Eof);
        self.outstanding = false;
        input
    }

    /// The answer to a question just printed: typed fresh at a prompt of its own on a
    /// terminal (type-ahead stays queued for the next prompt), the next line otherwise.
    pub async fn answer(&mut self) -> Input {
        if !self.ask_answer() {
            return Input::Eof;
        }
        self.answered().await
    }

    /// Asks for the answer to a question just printed; `false` when input is gone.
    pub fn ask_answer(&mut self) -> bool {
        match &self.kind {
            Kind::Terminal { tx, .. } => tx.send(Msg::Request(Want::Answer)).is_ok(),
            Kind::Plain { .. } => {
                self.request();
                true
            }
        }
    }

    /// The answer [`LineReader::ask_answer`] asked for. Cancel-safe: dropped before it
    /// resolves, the next call still gets that answer.
    pub async fn answered(&mut self) -> Input {
        match &self.kind {
            Kind::Terminal { .. } => self.answers.recv().await.unwrap_or(Input::Eof),
            Kind::Plain { .. } => self.next().await,
        }
    }

    /// Tidies the prompt away and gives the terminal back as it was.
    pub fn finish(mut self) {
        if let Ok(mut slot) = self.printer.editor.lock() {
            *slot = None;
        }
        match &mut self.kind {
            Kind::Terminal { tx, raw } => {
                let (done_tx, done) = mpsc::channel();
                if tx.send(Msg::Finish(done_tx)).is_ok() {
                    let _ = done.recv();
                }
                drop(raw.take());
            }
            Kind::Plain { want } => *want = None,
        }
    }
}

/// Ctrl-C pressed while no prompt is showing: the running turn is to be interrupted.
pub struct Interrupts(UnboundedReceiver<()>);

impl Interrupts {
    /// Resolves at the next such Ctrl-C (never without a terminal: there Ctrl-C is a signal).
    pub async fn next(&mut self) {
        if self.0.recv().await.is_none() {
            std::future::pending::<()>().await;
        }
    }

    /// Forgets Ctrl-C pressed before now.
    pub fn forget(&mut self) {
        while self.0.try_recv().is_ok() {}
    }
}
