//! One look at troupe's process tree, shared by every call ending at the same time.
//!
//! Reading the tree costs a read of `/proc/self/task/<tid>/children` for every thread of troupe
//! (hundreds, with a busy blocking pool) and a `stat` and an `environ` for every descendant. A
//! thousand teammates' commands end a few at a time, each with the others' shells still
//! running, so each call read the whole tree, twice, for itself. Here a call asks for a look
//! that *starts after it asked* (so it sees everything its own round did before, such as
//! killing its group): if one is already running, it began too early, and the call waits for
//! the next one, which the first caller to find none running starts and everyone waiting then
//! shares — the group commit's pattern (`troupe_durable::commit`), for reads.

use std::collections::HashMap;
use std::sync::{Arc, Condvar, Mutex, PoisonError};

use super::live::CALL_MARKER_ENV;

/// What a process's environment says about the calls it belongs to.
#[derive(Debug, Clone)]
pub(super) enum Marks {
    /// Unreadable or empty (a process between fork and exec): look again.
    Unknown,
    /// Its `TROUPE_TOOL_CALL=…` entries (usually one, or none).
    Known(Vec<Box<[u8]>>),
}

impl Marks {
    /// Reads `pid`'s environment.
    fn read(pid: libc::pid_t) -> Marks {
        let Ok(environ) = std::fs::read(format!("/proc/{pid}/environ")) else {
            return Marks::Unknown;
        };
        if environ.is_empty() {
            return Marks::Unknown;
        }
        let prefix = CALL_MARKER_ENV.as_bytes();
        Marks::Known(
            environ
                .split(|b| *b == 0)
                .filter(|entry| {
                    entry.len() > prefix.len()
                        && entry.starts_with(prefix)
                        && entry[prefix.len()] == b'='
                })
                .map(Box::from)
                .collect(),
        )
    }

    /// Whether `marker` (`NAME=value`) is among them; `None` when unknown.
    pub(super) fn carries(&self, marker: &[u8]) -> Option<bool> {
        match self {
            Marks::Unknown => None,
            Marks::Known(entries) => Some(entries.iter().any(|e| &**e == marker)),
        }
    }
}

/// One look at troupe's descendants: their stats, and the marks of the living ones.
#[derive(Debug)]
pub(super) struct Look<S> {
    pub(super) all: Vec<S>,
    pub(super) marks: HashMap<libc::pid_t, Marks>,
}

impl<S> Look<S> {
    /// Reads the marks of the pids `living` names.
    pub(super) fn with_marks(all: Vec<S>, living: impl Iterator<Item = libc::pid_t>) -> Look<S> {
        let marks = living.map(|pid| (pid, Marks::read(pid))).collect();
        Look { all, marks }
    }
}

/// The looks of this process, one at a time.
pub(super) struct Looks<S> {
    state: Mutex<State<S>>,
    done: Condvar,
}

struct State<S> {
    /// Looks begun so far (the running one included).
    begun: u64,
    /// The newest look finished, and its number.
    finished: u64,
    latest: Option<Arc<Look<S>>>,
    running: bool,
}

/// Puts the state back when a look ends, even by a panic, so the waiters are not left waiting.
struct Running<'a, S> {
    looks: &'a Looks<S>,
    number: u64,
    result: Option<Arc<Look<S>>>,
}

impl<S> Drop for Running<'_, S> {
    fn drop(&mut self) {
        let mut state = self.looks.lock();
        state.running = false;
        state.finished = self.number;
        state.latest = self.result.take();
        self.looks.done.notify_all();
    }
}

impl<S> Looks<S> {
    pub(super) const fn new() -> Looks<S> {
        Looks {
            state: Mutex::new(State {
                begun: 0,
                finished: 0,
                latest: None,
                running: false,
            }),
            done: Condvar::new(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State<S>> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A look that began after this call: the one this caller starts, or the one it waited for.
    /// A caller that may not wait (on a runtime's worker, whose other tasks would wait with it)
    /// is told [`Busy`] when another look is running. `Ok(None)` when `read` found nothing to
    /// look at (the kernel lists no children).
    pub(super) fn after_now(
        &self,
        may_wait: bool,
        read: impl FnOnce() -> Option<Look<S>>,
    ) -> Result<Option<Arc<Look<S>>>, Busy> {
        let mut state = self.lock();
        let wanted = state.begun + 1;
        loop {
            if state.finished >= wanted {
                return Ok(state.latest.clone());
            }
            if !state.running {
                state.running = true;
                state.begun += 1;
                let mut running = Running {
                    looks: self,
                    number: state.begun,
                    result: None,
                };
                drop(state);
                running.result = read().map(Arc::new);
                let result = running.result.clone();
                drop(running);
                return Ok(result);
            }
            if !may_wait {
                return Err(Busy);
            }
            state = self
                .done
                .wait(state)
                .unwrap_or_else(PoisonError::into_inner);
        }
    }
}

/// Another call's look is running, and the caller may not wait for the next one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Busy;

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Barrier;

    #[test]
    fn a_look_begun_before_the_ask_is_not_taken_and_waiters_share_the_next() {
        static LOOKS: Looks<u32> = Looks::new();
        static READS: AtomicUsize = AtomicUsize::new(0);
        let gate = Arc::new(Barrier::new(2));
        let first = {
            let gate = Arc::clone(&gate);
            std::thread::spawn(move || {
                LOOKS.after_now(true, || {
                    gate.wait(); // the others ask while this look runs
                    std::thread::sleep(std::time::Duration::from_millis(50));
                    Some(Look::with_marks(
                        vec![READS.fetch_add(1, Ordering::SeqCst) as u32],
                        std::iter::empty(),
                    ))
                })
            })
        };
        gate.wait();
        let askers: Vec<_> = (0..8)
            .map(|_| {
                std::thread::spawn(|| {
                    LOOKS.after_now(true, || {
                        std::thread::sleep(std::time::Duration::from_millis(20));
                        Some(Look::with_marks(
                            vec![READS.fetch_add(1, Ordering::SeqCst) as u32],
                            std::iter::empty(),
                        ))
                    })
                })
            })
            .collect();
        assert_eq!(first.join().unwrap().unwrap().unwrap().all, vec![0]);
        for asker in askers {
            // Every later asker saw a look begun after it asked: never the first one.
            assert_ne!(asker.join().unwrap().unwrap().unwrap().all, vec![0]);
        }
        let reads = READS.load(Ordering::SeqCst);
        assert!(reads < 9, "{reads} looks for 9 askers: none shared");
    }

    #[test]
    fn a_caller_that_may_not_wait_is_told_a_look_is_running() {
        static LOOKS: Looks<u32> = Looks::new();
        let gate = Arc::new(Barrier::new(2));
        let release = Arc::new(Barrier::new(2));
        let first = {
            let (gate, release) = (Arc::clone(&gate), Arc::clone(&release));
            std::thread::spawn(move || {
                LOOKS.after_now(true, || {
                    gate.wait();
                    release.wait(); // runs until the other caller is done
                    Some(Look::with_marks(vec![1], std::iter::empty()))
                })
            })
        };
        gate.wait();
        let busy = LOOKS.after_now(false, || {
            Some(Look::with_marks(vec![2], std::iter::empty()))
        });
        release.wait();
        assert_eq!(busy.err(), Some(Busy));
        assert_eq!(first.join().unwrap().unwrap().unwrap().all, vec![1]);
        // With none running, it starts one.
        let own = LOOKS.after_now(false, || {
            Some(Look::with_marks(vec![3], std::iter::empty()))
        });
        assert_eq!(own.unwrap().unwrap().all, vec![3]);
    }

    #[test]
    fn marks_name_the_calls_a_process_belongs_to() {
        let me = std::process::id() as libc::pid_t;
        let marks = Marks::read(me);
        assert_eq!(marks.carries(b"TROUPE_TOOL_CALL=nobody"), Some(false));
        assert!(Marks::read(-1).carries(b"x").is_none());
    }
}
