//! A real pseudo-terminal for tests of full-screen commands: the child gets the pty as its
//! controlling terminal (stdin, stdout and stderr), everything it writes is fed to a `vt100`
//! terminal emulator, and tests wait — bounded, on a condition, never a fixed sleep — until
//! the emulated screen shows what they expect, and type keys into it.
#![allow(dead_code)]

use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// What the reader thread shares with the test.
struct Screen {
    /// The emulated terminal, and whether the child side has closed.
    parser: Mutex<(vt100::Parser, bool)>,
    /// Every byte the child wrote, for checks on the escape sequences themselves.
    raw: Mutex<Vec<u8>>,
    changed: Condvar,
}

/// A child process running in a pseudo-terminal of a fixed size.
pub struct Pty {
    master: File,
    child: Child,
    screen: Arc<Screen>,
}

impl Pty {
    /// Starts `cmd` in a new `rows` × `cols` pty (its own session, the pty as its controlling
    /// terminal).
    pub fn spawn(mut cmd: Command, rows: u16, cols: u16) -> Pty {
        let mut master_fd = -1;
        let mut slave_fd = -1;
        let size = libc::winsize {
            ws_row: rows,
            ws_col: cols,
            ws_xpixel: 0,
            ws_ypixel: 0,
        };
        // SAFETY: openpty writes two descriptors into the ints we own; the name and termios
        // arguments may be null, and `size` outlives the call.
        let rc = unsafe {
            libc::openpty(
                &mut master_fd,
                &mut slave_fd,
                std::ptr::null_mut(),
                std::ptr::null(),
                &size,
            )
        };
        assert_eq!(rc, 0, "openpty: {}", std::io::Error::last_os_error());
        // SAFETY: both descriptors were just opened by openpty and are owned by nobody else.
        let (master, slave) = unsafe {
            (
                OwnedFd::from_raw_fd(master_fd),
                OwnedFd::from_raw_fd(slave_fd),
            )
        };
        let stdio = |fd: &OwnedFd| Stdio::from(fd.try_clone().expect("dup the pty"));
        cmd.stdin(stdio(&slave))
            .stdout(stdio(&slave))
            .stderr(stdio(&slave));
        // SAFETY: only async-signal-safe calls between fork and exec: setsid and ioctl.
        unsafe {
            cmd.pre_exec(|| {
                if libc::setsid() < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                if libc::ioctl(0, libc::TIOCSCTTY, 0) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let child = cmd.spawn().expect("the command starts in the pty");
        drop(slave);
        let master = File::from(master);
        let screen = Arc::new(Screen {
            parser: Mutex::new((vt100::Parser::new(rows, cols, 0), false)),
            raw: Mutex::new(Vec::new()),
            changed: Condvar::new(),
        });
        let mut reader = master.try_clone().expect("dup the pty master");
        let shared = screen.clone();
        std::thread::spawn(move || {
            let mut buf = [0u8; 8192];
            loop {
                // EIO once the child side is closed: the child has exited.
                let n = reader.read(&mut buf).unwrap_or(0);
                let mut guard = shared.parser.lock().expect("screen lock");
                if n == 0 {
                    guard.1 = true;
                    shared.changed.notify_all();
                    return;
                }
                guard.0.process(&buf[..n]);
                shared
                    .raw
                    .lock()
                    .expect("raw lock")
                    .extend_from_slice(&buf[..n]);
                shared.changed.notify_all();
            }
        });
        Pty {
            master,
            child,
            screen,
        }
    }

    /// The child's pid.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The screen as text, one line per row.
    pub fn contents(&self) -> String {
        self.screen
            .parser
            .lock()
            .expect("screen lock")
            .0
            .screen()
            .contents()
    }

    /// Every byte the child has written so far.
    pub fn raw(&self) -> Vec<u8> {
        self.screen.raw.lock().expect("raw lock").clone()
    }

    /// Types `text` (bytes as a terminal sends them: `\r` for Enter, `\x1b` for Escape).
    pub fn send(&mut self, text: &str) {
        self.master
            .write_all(text.as_bytes())
            .expect("write to the pty");
        self.master.flush().expect("flush the pty");
    }

    /// Waits until the screen satisfies `ok` (checked after every write the child makes),
    /// at most `limit`; panics with the screen and `what` when it never does. Returns the
    /// screen that satisfied it.
    #[track_caller]
    pub fn wait_for(&self, what: &str, limit: Duration, ok: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + limit;
        let mut guard = self.screen.parser.lock().expect("screen lock");
        loop {
            let text = guard.0.screen().contents();
            if ok(&text) {
                return text;
            }
            let now = Instant::now();
            if now >= deadline || guard.1 {
                panic!(
                    "the screen never showed {what} ({}):\n{text}",
                    if guard.1 {
                        "the program ended"
                    } else {
                        "timed out"
                    }
                );
            }
            guard = self
                .screen
                .changed
                .wait_timeout(guard, deadline - now)
                .expect("screen lock")
                .0;
        }
    }

    /// Waits until the screen shows `needle`.
    #[track_caller]
    pub fn wait_for_text(&self, needle: &str, limit: Duration) -> String {
        self.wait_for(&format!("{needle:?}"), limit, |s| s.contains(needle))
    }

    /// Waits for the child to exit (bounded), killing it if it does not.
    pub fn wait_exit(&mut self, limit: Duration) -> Option<ExitStatus> {
        let deadline = Instant::now() + limit;
        loop {
            if let Some(status) = self.child.try_wait().expect("wait for the child") {
                return Some(status);
            }
            if Instant::now() >= deadline {
                let _ = self.child.kill();
                let _ = self.child.wait();
                return None;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// The raw descriptor of the master side (for size changes).
    pub fn master_fd(&self) -> i32 {
        self.master.as_raw_fd()
    }
}

impl Drop for Pty {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}
