//! How background commands read to the model and to people.

use super::{now_ms, JobRead, JobSnapshot, JobStatus};

/// "12s", "3m 4s", "2h 5m": how long ago (or for how long) in words.
pub fn describe_age(ms: u64) -> String {
    let secs = ms / 1000;
    match secs {
        0..=59 => format!("{secs}s"),
        60..=3599 => format!("{}m {}s", secs / 60, secs % 60),
        _ => format!("{}h {}m", secs / 3600, (secs / 60) % 60),
    }
}

/// How long the job ran (or has run so far).
fn runtime(job: &JobSnapshot) -> String {
    let end = job.ended_ms.unwrap_or_else(now_ms);
    describe_age(end.saturating_sub(job.started_ms))
}

/// The `<task_notification>` a finished job leaves for its agent.
pub(super) fn notification(job: &JobSnapshot, tail: &str) -> String {
    let mut text = format!(
        "<task_notification>\nid: {}\ncommand: {}\nstatus: {} after {}\n",
        job.id,
        job.command,
        job.status.describe(),
        runtime(job)
    );
    if tail.trim().is_empty() {
        text.push_str("output: (no new output)\n");
    } else {
        text.push_str("output (last lines not yet read):\n");
        text.push_str(tail.trim_end());
        text.push('\n');
    }
    text.push_str(&format!("log: {}\n</task_notification>", job.log.display()));
    text
}

/// What the `bash` call that started a job returns.
pub(super) fn started(job: &JobSnapshot, sandbox: crate::Sandbox) -> String {
    format!(
        "Started in the background with id {id} (sandbox: {sandbox}); its output goes to {log}.\n\
         Read new output with bash_output{{\"id\": \"{id}\"}}, end it with \
         kill_background{{\"id\": \"{id}\"}}. A <task_notification> will tell you when it \
         finishes; meanwhile go on with other work.",
        id = job.id,
        log = job.log.display(),
    )
}

/// What `bash_output` returns.
pub(super) fn read(read: &JobRead) -> String {
    let job = &read.job;
    let mut text = match &job.status {
        JobStatus::Running => format!("{}: running for {}\n", job.id, runtime(job)),
        status => format!("{}: {} after {}\n", job.id, status.describe(), runtime(job)),
    };
    if read.bytes == 0 {
        text.push_str("(no new output)\n");
    } else {
        text.push_str(&read.output);
        if !read.output.ends_with('\n') {
            text.push('\n');
        }
    }
    text.push_str(&format!("(full log: {})", job.log.display()));
    text
}

/// What `kill_background` returns.
pub(super) fn killed(job: &JobSnapshot, was_running: bool) -> String {
    match was_running {
        true => format!(
            "{} was killed, with every process it started, after {}.",
            job.id,
            runtime(job)
        ),
        false => format!(
            "{} had already ended: {} after {}. Nothing to kill.",
            job.id,
            job.status.describe(),
            runtime(job)
        ),
    }
}

/// The placeholder result of a foreground call moved to the background while it ran.
pub(crate) fn moved(job: &JobSnapshot, after: std::time::Duration, so_far: &str) -> String {
    let mut text = format!(
        "The command ran longer than {secs} s, so it was moved to the background as {id} and \
         goes on running; its output goes to {log}. Read new output with \
         bash_output{{\"id\": \"{id}\"}}, end it with kill_background{{\"id\": \"{id}\"}}; a \
         <task_notification> will tell you when it finishes.\n",
        secs = after.as_secs_f64(),
        id = job.id,
        log = job.log.display(),
    );
    match so_far.trim().is_empty() {
        true => text.push_str("(no output so far)"),
        false => {
            text.push_str("Output so far:\n");
            text.push_str(so_far);
        }
    }
    text
}
