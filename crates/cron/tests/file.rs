//! The cron file under contention: many schedulers (each with its own handle, as separate
//! processes have) fire every due job exactly once; recurring jobs move on, one-shots go, a
//! missed job is marked late, and a failed delivery is tried again.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code may panic on a broken fixture

use std::collections::HashMap;
use std::sync::{Arc, Barrier, Mutex};
use troupe_cron::{CronFile, CronJob, Deliver, ScheduleKind};

/// Counts what it was asked to deliver; fails the first `fail` deliveries.
#[derive(Default)]
struct Counting {
    delivered: Mutex<HashMap<String, Vec<String>>>,
    fail: Mutex<u32>,
}

impl Deliver for Counting {
    fn deliver(&self, job: &CronJob, message: &str) -> Result<(), String> {
        let mut fail = self.fail.lock().unwrap();
        if *fail > 0 {
            *fail -= 1;
            return Err("mailbox unavailable".into());
        }
        self.delivered
            .lock()
            .unwrap()
            .entry(job.id.clone())
            .or_default()
            .push(message.to_string());
        Ok(())
    }
}

fn job(file: &CronFile, schedule: &str, prompt: &str, now: u64) -> CronJob {
    file.add(CronJob::new(schedule, prompt, "default", "lead", "test", now).unwrap())
        .unwrap()
}

#[test]
fn concurrent_schedulers_fire_each_due_job_exactly_once() {
    let dir = tempfile::tempdir().unwrap();
    let now = troupe_cron::now_ms();
    let setup = CronFile::in_dir(dir.path());
    for i in 0..40 {
        job(&setup, "in 1s", &format!("ping {i}"), now);
    }
    let later = now + 2_000;
    let deliver = Arc::new(Counting::default());
    let start = Arc::new(Barrier::new(8));
    let threads: Vec<_> = (0..8)
        .map(|_| {
            let (deliver, start) = (deliver.clone(), start.clone());
            let file = CronFile::in_dir(dir.path());
            std::thread::spawn(move || {
                start.wait();
                let mut fired = 0;
                for _ in 0..5 {
                    fired += file.fire_due(later, deliver.as_ref()).unwrap().len();
                }
                fired
            })
        })
        .collect();
    let fired: usize = threads.into_iter().map(|t| t.join().unwrap()).sum();
    assert_eq!(fired, 40);
    let delivered = deliver.delivered.lock().unwrap();
    assert_eq!(delivered.len(), 40);
    assert!(delivered.values().all(|m| m.len() == 1), "{delivered:?}");
    assert!(setup.list().unwrap().is_empty(), "one-shot jobs are gone");
}

#[test]
fn recurring_jobs_move_on_missed_ones_are_late_and_failures_retry() {
    let dir = tempfile::tempdir().unwrap();
    let file = CronFile::in_dir(dir.path());
    let now = troupe_cron::now_ms();
    let every = job(&file, "*/5 * * * *", "check the build", now);
    assert_eq!(every.kind, ScheduleKind::Recurring);
    let deliver = Counting::default();
    // Nothing is due yet.
    assert!(file.fire_due(now, &deliver).unwrap().is_empty());
    // Three hours pass with nobody running: it fires once, late, and is due again after now.
    let much_later = every.next_ms + 3 * 3_600_000;
    let fired = file.fire_due(much_later, &deliver).unwrap();
    assert_eq!(fired.len(), 1);
    assert!(fired[0].1.late);
    let message = deliver.delivered.lock().unwrap()[&every.id][0].clone();
    assert!(
        message.starts_with("[Scheduled] check the build\n(late: this was due at"),
        "{message}"
    );
    let again = &file.list().unwrap()[0];
    assert!(again.next_ms > much_later && again.next_ms <= much_later + 300_000);
    assert_eq!(again.fired, 1);

    // A delivery that fails leaves the job due; the next look delivers it, on time.
    *deliver.fail.lock().unwrap() = 1;
    let due = again.next_ms;
    assert!(file.fire_due(due, &deliver).unwrap().is_empty());
    let fired = file.fire_due(due + 1_000, &deliver).unwrap();
    assert_eq!(fired.len(), 1);
    assert!(!fired[0].1.late);
    assert_eq!(
        deliver.delivered.lock().unwrap()[&every.id][1],
        "[Scheduled] check the build"
    );
}

#[test]
fn removing_an_unknown_job_names_the_ones_there_are() {
    let dir = tempfile::tempdir().unwrap();
    let file = CronFile::in_dir(dir.path());
    let kept = job(&file, "in 1h", "later", troupe_cron::now_ms());
    let err = file.remove("cron-nothere").unwrap_err().to_string();
    assert!(err.contains("no scheduled prompt 'cron-nothere'"), "{err}");
    assert!(err.contains(&kept.id), "{err}");
    assert_eq!(file.remove(&kept.id).unwrap().prompt, "later");
}
