//! Where the REPL's log lines go: into `.troupe/logs/troupe.log` once the workspace is known
//! (a warning printed into the prompt would tear it), to stderr before that and with `--debug`.

use std::fs::File;
use std::io::Write;
use std::path::Path;
use std::sync::{Mutex, OnceLock};

/// The log file, once the REPL has opened it.
static FILE: OnceLock<Mutex<File>> = OnceLock::new();

/// Sends log lines from now on to `logs/troupe.log` (appended), when [`Writer`] is the log's
/// writer. A file that cannot be opened leaves them on stderr.
pub fn redirect(logs: &Path) {
    let opened = std::fs::create_dir_all(logs).and_then(|()| {
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(logs.join("troupe.log"))
    });
    if let Ok(file) = opened {
        let _ = FILE.set(Mutex::new(file));
    }
}

/// Sends log lines from now on to `path` (appended, created with its folder), for
/// `--debug-file`; the REPL's own log file is then not used.
pub fn open(path: &Path) -> std::io::Result<()> {
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent)?;
    }
    let file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)?;
    let _ = FILE.set(Mutex::new(file));
    Ok(())
}

/// A log writer: the log file once [`redirect`] opened it, stderr until then.
pub struct Writer;

impl Write for Writer {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match FILE.get().and_then(|f| f.lock().ok()) {
            Some(mut file) => file.write(buf),
            None => std::io::stderr().write(buf),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match FILE.get().and_then(|f| f.lock().ok()) {
            Some(mut file) => file.flush(),
            None => std::io::stderr().flush(),
        }
    }
}
