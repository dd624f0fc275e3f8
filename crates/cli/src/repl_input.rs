//! The REPL's line editor on its own thread, so the lead can be woken by mail while the
//! prompt waits, and a printer that writes above an active prompt.

use rustyline::error::ReadlineError;
use rustyline::ExternalPrinter;
use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::thread::JoinHandle;

/// What the person did at the prompt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Input {
    /// Entered a line.
    Line(String),
    /// Pressed Ctrl-C at the prompt.
    Interrupted,
    /// Pressed Ctrl-D (or stdin ended).
    Eof,
}

/// Prints whole lines: above the prompt while it is active, plainly otherwise.
#[derive(Clone)]
pub struct Printer {
    active: Arc<AtomicBool>,
    external: Arc<Mutex<Option<Box<dyn ExternalPrinter + Send>>>>,
}

impl Printer {
    /// A printer with no editor attached yet.
    pub fn new() -> Printer {
        Printer {
            active: Arc::new(AtomicBool::new(false)),
            external: Arc::new(Mutex::new(None)),
        }
    }

    /// Prints one line, its control characters made visible (it may quote a model or a file).
    pub fn line(&self, text: &str) {
        let text = crate::render::sanitize::terminal(text);
        if self.active.load(Ordering::SeqCst) {
            if let Ok(mut guard) = self.external.lock() {
                if let Some(p) = guard.as_mut() {
                    if p.print(format!("{text}\n")).is_ok() {
                        return;
                    }
                }
            }
        }
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{text}");
        let _ = out.flush();
    }
}

/// The line editor thread and the channels to it.
pub struct LineReader {
    want: Option<mpsc::Sender<()>>,
    lines: tokio::sync::mpsc::UnboundedReceiver<Input>,
    outstanding: bool,
    thread: Option<JoinHandle<()>>,
}

impl LineReader {
    /// Starts the editor thread with history kept in `history`.
    pub fn start(history: PathBuf, printer: Printer) -> rustyline::Result<LineReader> {
        let mut editor = rustyline::DefaultEditor::new()?;
        let _ = editor.load_history(&history);
        if let Ok(p) = editor.create_external_printer() {
            if let Ok(mut slot) = printer.external.lock() {
                *slot = Some(Box::new(p));
            }
        }
        let (want_tx, want_rx) = mpsc::channel::<()>();
        let (line_tx, line_rx) = tokio::sync::mpsc::unbounded_channel();
        let active = printer.active.clone();
        let thread = std::thread::spawn(move || {
            while want_rx.recv().is_ok() {
                active.store(true, Ordering::SeqCst);
                let read = editor.readline("> ");
                active.store(false, Ordering::SeqCst);
                let input = match read {
                    Ok(line) => {
                        if !line.trim().is_empty() {
                            let _ = editor.add_history_entry(line.as_str());
                        }
                        Input::Line(line)
                    }
                    Err(ReadlineError::Interrupted) => Input::Interrupted,
                    Err(_) => Input::Eof,
                };
                let eof = input == Input::Eof;
                if line_tx.send(input).is_err() || eof {
                    break;
                }
            }
            if let Some(dir) = history.parent() {
                let _ = std::fs::create_dir_all(dir);
            }
            let _ = editor.save_history(&history);
        });
        Ok(LineReader {
            want: Some(want_tx),
            lines: line_rx,
            outstanding: false,
            thread: Some(thread),
        })
    }

    /// Shows the prompt, unless it is already showing.
    pub fn request(&mut self) {
        if !self.outstanding {
            if let Some(want) = &self.want {
                self.outstanding = want.send(()).is_ok();
            }
        }
    }

    /// The next input; `Eof` once the editor is gone.
    pub async fn next(&mut self) -> Input {
        let input = self.lines.recv().await.unwrap_or(Input::Eof);
        self.outstanding = false;
        input
    }

    /// Stops the editor thread and saves the history.
    pub fn finish(mut self) {
        self.want = None;
        if !self.outstanding {
            if let Some(t) = self.thread.take() {
                let _ = t.join();
            }
        }
    }
}
