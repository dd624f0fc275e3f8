//! A team stuck on a request nobody has answered says so, once per request, after a short
//! while: who waits, for which request, and how to answer it from any terminal
//! (`troupe team approve <id>`), instead of silence until the team timeout.

use std::collections::HashSet;
use std::time::Duration;
use troupe_protocol::{Request, RequestStatus};
use troupe_store::{RequestFilter, TeamStore};

/// How long a request may wait before it is mentioned (`TROUPE_WAIT_NOTICE_MS` overrides).
const DEFAULT_AFTER: Duration = Duration::from_secs(15);

/// Pending requests already mentioned, and how old one must be to be.
pub struct Overdue {
    seen: HashSet<String>,
    after: Duration,
}

impl Default for Overdue {
    fn default() -> Overdue {
        Overdue::new()
    }
}

impl Overdue {
    /// Mentions requests pending longer than the default (or `TROUPE_WAIT_NOTICE_MS`).
    pub fn new() -> Overdue {
        let after = std::env::var("TROUPE_WAIT_NOTICE_MS")
            .ok()
            .and_then(|v| v.parse::<u64>().ok())
            .map_or(DEFAULT_AFTER, Duration::from_millis);
        Overdue {
            seen: HashSet::new(),
            after,
        }
    }

    /// How often to look.
    pub fn interval(&self) -> Duration {
        (self.after / 3).clamp(Duration::from_millis(100), Duration::from_secs(5))
    }

    /// One line for each request pending longer than the limit and not mentioned before.
    pub async fn check(&mut self, store: &dyn TeamStore) -> Vec<String> {
        let filter = RequestFilter {
            status: Some(RequestStatus::Pending),
            ..RequestFilter::default()
        };
        let Ok(pending) = store.list_requests(&filter).await else {
            return Vec::new();
        };
        let now = troupe_agent::transcript::now_ms();
        let after = u64::try_from(self.after.as_millis()).unwrap_or(u64::MAX);
        let overdue: Vec<Request> = pending
            .into_iter()
            .filter(|r| now.saturating_sub(r.created_at) >= after)
            .collect();
        if overdue.is_empty() {
            return Vec::new();
        }
        // A request whose party ended (a forced stop) waits for nobody: the sweep cancels it.
        let Ok(roster) = store.roster().await else {
            return Vec::new();
        };
        overdue
            .into_iter()
            .filter(|r| troupe_team::protocols::sweep::void_reason(&roster, r).is_none())
            .filter(|r| self.seen.insert(r.id.clone()))
            .map(|r| describe(&r, now))
            .collect()
    }
}

/// `alice has waited 20s for an answer to her plan request 01… (addressed to lead); answer it
/// with: troupe team approve 01… (or reject)`.
fn describe(r: &Request, now: u64) -> String {
    let waited = now.saturating_sub(r.created_at) / 1000;
    format!(
        "{} has waited {waited}s for an answer to {} request {} (addressed to {}); answer it from \
         any terminal: troupe team approve {} [--reason …] or troupe team reject {}",
        crate::render::sanitize::terminal(&r.from),
        r.kind.as_str(),
        r.id,
        crate::render::sanitize::terminal(&r.to),
        r.id,
        r.id
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use troupe_protocol::{AgentStatus, Member, RequestKind};

    #[tokio::test]
    async fn a_request_to_a_stopped_teammate_is_not_mentioned() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let store = troupe_store::file::open(dir.path(), "t").unwrap_or_else(|e| panic!("{e}"));
        store
            .update_roster(&mut |r| {
                for name in ["alice", "bob"] {
                    r.members.push(Member::new(name, "coder", 1, 0));
                }
            })
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        for name in ["alice", "bob"] {
            let request = Request::open(
                RequestKind::Shutdown,
                "lead",
                name,
                1,
                serde_json::json!({}),
                0,
                None,
            );
            store
                .create_request(&request)
                .await
                .unwrap_or_else(|e| panic!("{e}"));
        }
        // alice was force-stopped while her shutdown request waited; bob still works.
        store
            .update_member("alice", &mut |m| m.status = AgentStatus::Stopped)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let mut overdue = Overdue {
            seen: HashSet::new(),
            after: Duration::ZERO,
        };
        let lines = overdue.check(&*store).await;
        assert_eq!(lines.len(), 1, "{lines:?}");
        assert!(lines[0].contains("addressed to bob"), "{lines:?}");
    }
}
