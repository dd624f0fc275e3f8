//! Schedules as people write them: a five-field cron expression (`*/5 * * * *`, local time),
//! a delay (`in 90s`, `in 3m`, `in 2h`, `in 1d`), or a moment (RFC 3339,
//! `2026-05-01T09:00:00+02:00`).

use chrono::{DateTime, Local, TimeZone, Utc};
use croner::Cron;
use std::str::FromStr;

/// A parsed schedule.
#[derive(Debug, Clone)]
pub enum Schedule {
    /// Fires once, at this moment (ms since the Unix epoch).
    Once(u64),
    /// Fires at every match of a cron expression, in local time.
    Recurring(Box<Cron>),
}

/// Why a schedule was not understood.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("bad schedule '{given}': {why}. Use a five-field cron expression (minute hour day-of-month month day-of-week, e.g. '*/5 * * * *' or '0 9 * * MON-FRI'), a delay ('in 90s', 'in 3m', 'in 2h', 'in 1d') or an RFC 3339 time ('2026-05-01T09:00:00Z')")]
pub struct ScheduleError {
    /// What was given.
    pub given: String,
    /// What is wrong with it.
    pub why: String,
}

/// Parses `text` as of `now_ms`.
pub fn parse_schedule(text: &str, now_ms: u64) -> Result<Schedule, ScheduleError> {
    let given = text.trim();
    let bad = |why: &str| ScheduleError {
        given: given.to_string(),
        why: why.to_string(),
    };
    if given.is_empty() {
        return Err(bad("it is empty"));
    }
    if let Some(delay) = given.strip_prefix("in ") {
        let ms = parse_delay(delay.trim()).ok_or_else(|| {
            bad("a delay is a whole number followed by s, m, h or d (seconds, minutes, hours, days)")
        })?;
        return Ok(Schedule::Once(now_ms.saturating_add(ms)));
    }
    if given.contains('T') && given.chars().next().is_some_and(|c| c.is_ascii_digit()) {
        let at = DateTime::parse_from_rfc3339(given)
            .map_err(|e| bad(&format!("not an RFC 3339 time ({e})")))?;
        let ms = u64::try_from(at.timestamp_millis()).map_err(|_| bad("it is before 1970"))?;
        if ms <= now_ms {
            return Err(bad("that time has passed"));
        }
        return Ok(Schedule::Once(ms));
    }
    let fields = given.split_whitespace().count();
    if fields != 5 {
        return Err(bad(&format!(
            "a cron expression has five fields, this has {fields}"
        )));
    }
    let cron = Cron::from_str(given).map_err(|e| bad(&e.to_string()))?;
    let schedule = Schedule::Recurring(Box::new(cron));
    if schedule.next_after(now_ms).is_none() {
        return Err(bad("it never matches"));
    }
    Ok(schedule)
}

/// `90s`, `3m`, `2 h`, `1d` → milliseconds.
fn parse_delay(text: &str) -> Option<u64> {
    let text: String = text.chars().filter(|c| !c.is_whitespace()).collect();
    let split = text.find(|c: char| !c.is_ascii_digit())?;
    let (number, unit) = text.split_at(split);
    let n: u64 = number.parse().ok()?;
    let unit_ms = match unit {
        "s" | "sec" | "secs" | "second" | "seconds" => 1_000,
        "m" | "min" | "mins" | "minute" | "minutes" => 60_000,
        "h" | "hr" | "hrs" | "hour" | "hours" => 3_600_000,
        "d" | "day" | "days" => 86_400_000,
        _ => return None,
    };
    n.checked_mul(unit_ms)
}

impl Schedule {
    /// The first moment after `after_ms` it fires at; `None` when it never will again.
    pub fn next_after(&self, after_ms: u64) -> Option<u64> {
        match self {
            Schedule::Once(at) => (*at > after_ms).then_some(*at),
            Schedule::Recurring(cron) => {
                let after = Local
                    .timestamp_millis_opt(i64::try_from(after_ms).ok()?)
                    .single()?;
                let next = cron.find_next_occurrence(&after, false).ok()?;
                u64::try_from(next.timestamp_millis()).ok()
            }
        }
    }
}

/// A moment as people read it, in UTC (RFC 3339, seconds).
pub fn show_time(ms: u64) -> String {
    match i64::try_from(ms)
        .ok()
        .and_then(|ms| Utc.timestamp_millis_opt(ms).single())
    {
        Some(t) => t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        None => format!("{ms} ms"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: u64 = 1_800_000_000_000;

    #[test]
    fn delays_and_times() {
        assert!(
            matches!(parse_schedule("in 90s", NOW), Ok(Schedule::Once(t)) if t == NOW + 90_000)
        );
        assert!(
            matches!(parse_schedule("in 3m", NOW), Ok(Schedule::Once(t)) if t == NOW + 180_000)
        );
        assert!(
            matches!(parse_schedule("in 2 hours", NOW), Ok(Schedule::Once(t)) if t == NOW + 7_200_000)
        );
        let at = parse_schedule("2030-01-01T00:00:00Z", NOW);
        assert!(
            matches!(at, Ok(Schedule::Once(1_893_456_000_000))),
            "{at:?}"
        );
        assert!(
            parse_schedule("2020-01-01T00:00:00Z", NOW).is_err_and(|e| e.why.contains("passed"))
        );
    }

    #[test]
    fn cron_expressions_fire_after_now() {
        let every5 = parse_schedule("*/5 * * * *", NOW).unwrap_or_else(|e| panic!("{e}"));
        let next = every5.next_after(NOW).unwrap_or_default();
        assert!(next > NOW && next - NOW <= 300_000, "{next}");
        assert_eq!((next / 1000) % 300, 0, "on a five-minute boundary");
    }

    #[test]
    fn bad_schedules_say_why() {
        for (text, why) in [
            ("", "empty"),
            ("in soon", "whole number"),
            ("in 5x", "whole number"),
            ("* * * *", "five fields"),
            ("0 0 * * * *", "five fields"),
            ("61 * * * *", ""),
            ("2026-13-01T00:00:00Z", "RFC 3339"),
        ] {
            let err = parse_schedule(text, NOW).err();
            assert!(
                err.as_ref().is_some_and(|e| e.why.contains(why)),
                "{text}: {err:?}"
            );
            let shown = err.map(|e| e.to_string()).unwrap_or_default();
            assert!(shown.contains("five-field cron expression"), "{shown}");
        }
    }
}
