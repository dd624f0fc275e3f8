//! Every hook run is reported: to whoever the caller supplies (the team's event log) and to
//! `tracing` (a failed or timed-out hook as a warning).

use crate::decide::{summary, system_message};
use crate::event::HookEvent;
use crate::run::{Ending, HookRun};

/// One finished hook run, as reported.
#[derive(Debug, Clone, Copy)]
pub struct HookReport<'a> {
    /// The agent it ran for.
    pub agent: &'a str,
    /// The event.
    pub event: HookEvent,
    /// The tool or occasion it matched (empty for events without matchers).
    pub subject: &'a str,
    /// The run.
    pub run: &'a HookRun,
}

impl HookReport<'_> {
    /// One line on how it went (`exit 2 (blocks)`, `timed out after 60s; …`).
    pub fn summary(&self) -> String {
        summary(self.run)
    }

    /// The hook's `systemMessage`, a warning meant for the user.
    pub fn system_message(&self) -> Option<String> {
        system_message(self.run)
    }

    /// Whether the hook failed to do its job (crashed, timed out, could not start, or exited
    /// with an error other than the blocking 2).
    pub fn failed(&self) -> bool {
        !matches!(self.run.ending, Ending::Exited(0) | Ending::Exited(2))
    }
}

/// Receives every hook run; the caller decides where it goes (the team's event log).
pub trait HookReporter: Send + Sync {
    /// Called once per run, after it ended.
    fn report(&self, report: &HookReport<'_>);
}

impl<F: Fn(&HookReport<'_>) + Send + Sync> HookReporter for F {
    fn report(&self, report: &HookReport<'_>) {
        self(report)
    }
}

/// Logs a run: failures and system messages as warnings (shown on stderr by default), the rest
/// at debug level.
pub(crate) fn trace(report: &HookReport<'_>) {
    let run = report.run;
    let ms = run.duration.as_millis() as u64;
    if report.failed() {
        let stderr = run.stderr.trim();
        tracing::warn!(
            agent = report.agent,
            event = %report.event,
            command = %run.command,
            ms,
            "hook {}{}",
            report.summary(),
            if stderr.is_empty() { String::new() } else { format!(": {stderr}") }
        );
    } else {
        tracing::debug!(agent = report.agent, event = %report.event, command = %run.command, ms, "hook {}", report.summary());
    }
    if let Some(message) = report.system_message() {
        tracing::warn!(agent = report.agent, event = %report.event, "hook says: {message}");
    }
}
