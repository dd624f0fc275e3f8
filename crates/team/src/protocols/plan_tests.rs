//! Plan requests answered by a person while the teammate acts on the verdict at once, and
//! revisions across incarnations.

use super::*;
use crate::protocols::answer::{answer_as_person, Verdict};
use crate::protocols::StoreCourier;
use std::sync::Mutex;
use troupe_protocol::{Envelope, Member};
use troupe_store::{SharedStore, TeamStore};

/// A team store with `bob` (epoch `epoch`, plan required) on the roster.
async fn team(dir: &std::path::Path, epoch: u64) -> SharedStore {
    let store = troupe_store::file::open(dir, "t").unwrap_or_else(|e| panic!("{e}"));
    store
        .update_roster(&mut |roster: &mut Roster| {
            let mut bob = Member::new("bob", "coder", epoch, 0);
            bob.require_plan = true;
            roster.members.retain(|m| m.name != "bob");
            roster.members.push(bob);
        })
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    store
}

/// What a teammate saw when its verdict arrived, and where things stood then.
#[derive(Default)]
struct Seen {
    /// The plan request's status when the verdict was delivered.
    status: Option<RequestStatus>,
    /// Whether the lead had been told already.
    lead_told: bool,
    /// The revision bob submitted on reading it.
    revision: Option<Request>,
}

/// A courier whose teammate `bob` revises its plan the moment a plan verdict lands in its
/// inbox — before the answering party has gone on to record it.
struct EagerBob<'a> {
    store: &'a dyn TeamStore,
    seen: Mutex<Seen>,
}

#[async_trait::async_trait]
impl Courier for EagerBob<'_> {
    fn store(&self) -> &dyn TeamStore {
        self.store
    }

    async fn deliver(&self, env: Envelope) -> Result<(), crate::error::TeamError> {
        crate::shared::deliver(self.store, &env).await?;
        if env.to != "bob" || env.kind != MailKind::PlanApprovalResponse {
            return Ok(());
        }
        let id = env.request_id.clone().unwrap_or_default();
        let status = self.store.get_request(&id).await?.map(|r| r.status);
        let lead_told = self
            .store
            .peek(LEAD)
            .await?
            .messages
            .iter()
            .any(|m| m.content.contains("in your place"));
        let revision = submit_plan(self, "bob", 1, "Create greeting.txt and a test.")
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let mut seen = self.seen.lock().unwrap_or_else(|e| panic!("{e}"));
        *seen = Seen {
            status,
            lead_told,
            revision: Some(revision),
        };
        Ok(())
    }
}

#[tokio::test]
async fn a_revision_prompted_by_a_persons_rejection_leaves_the_rejection_recorded() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let store = team(dir.path(), 1).await;
    let bob = EagerBob {
        store: &*store,
        seen: Mutex::new(Seen::default()),
    };
    let plan = submit_plan(&bob, "bob", 1, "Create greeting.txt.")
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let answered = answer_as_person(
        &bob,
        "user:tester",
        &plan.id,
        Verdict::Reject,
        Some("add a test".into()),
    )
    .await
    .unwrap_or_else(|e| panic!("{e}"));
    let (status, lead_told, revision) = {
        let seen = bob.seen.lock().unwrap_or_else(|e| panic!("{e}"));
        (seen.status, seen.lead_told, seen.revision.clone())
    };
    assert_eq!(status, Some(RequestStatus::Pending), "told before recorded");
    assert!(
        lead_told,
        "the lead is told before the request leaves pending"
    );

    assert_eq!(answered.status, RequestStatus::Rejected);
    let record = store
        .get_request(&plan.id)
        .await
        .unwrap_or_else(|e| panic!("{e}"))
        .unwrap_or_else(|| panic!("no request {}", plan.id));
    assert_eq!(record.status, RequestStatus::Rejected);
    let response = record
        .response
        .clone()
        .unwrap_or_else(|| panic!("no response"));
    assert_eq!(
        (response.by.as_str(), response.reason.as_deref()),
        ("user:tester", Some("add a test"))
    );
    assert!(
        record.payload.get(ANSWERING).is_none(),
        "{:?}",
        record.payload
    );
    let revision = revision.unwrap_or_else(|| panic!("bob did not revise"));
    let revision = store
        .get_request(&revision.id)
        .await
        .unwrap_or_else(|e| panic!("{e}"))
        .unwrap_or_else(|| panic!("no request {}", revision.id));
    assert_eq!(revision.status, RequestStatus::Pending);
}

#[tokio::test]
async fn a_revision_still_supersedes_a_plan_nobody_is_answering() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let store = team(dir.path(), 1).await;
    let courier = StoreCourier(&*store);
    let first = submit_plan(&courier, "bob", 1, "one")
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let second = submit_plan(&courier, "bob", 1, "two")
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let first = store
        .get_request(&first.id)
        .await
        .unwrap_or_else(|e| panic!("{e}"))
        .unwrap_or_else(|| panic!("no first request"));
    assert_eq!(first.status, RequestStatus::Cancelled);
    assert_eq!(
        first.history.last().and_then(|t| t.note.as_deref()),
        Some("superseded by a revised plan")
    );
    // Answering the superseded plan is refused, naming where it stands; nobody is told.
    let refused =
        answer_as_person(&courier, "user:tester", &first.id, Verdict::Approve, None).await;
    assert!(
        matches!(&refused, Err(e) if e.to_string().contains("already cancelled")),
        "{refused:?}"
    );
    assert!(store
        .peek("bob")
        .await
        .unwrap_or_else(|e| panic!("{e}"))
        .messages
        .is_empty());
    let approved = answer_as_person(&courier, "user:tester", &second.id, Verdict::Approve, None)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(approved.status, RequestStatus::Approved);
}

#[tokio::test]
async fn a_new_incarnation_does_not_supersede_an_earlier_ones_plan() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let store = team(dir.path(), 1).await;
    let courier = StoreCourier(&*store);
    let old = submit_plan(&courier, "bob", 1, "one")
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    // bob is replaced by incarnation 2, which submits its own plan.
    let _ = team(dir.path(), 2).await;
    let new = submit_plan(&courier, "bob", 2, "two")
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let get = async |id: &str| {
        store
            .get_request(id)
            .await
            .unwrap_or_else(|e| panic!("{e}"))
            .unwrap_or_else(|| panic!("no request {id}"))
    };
    // Not a revision: the earlier incarnation's plan is left to the sweep, which voids it
    // saying why.
    assert_eq!(get(&old.id).await.status, RequestStatus::Pending);
    let swept = super::super::sweep::sweep(&courier, now_ms())
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(swept.voided.len(), 1);
    let old = get(&old.id).await;
    assert_eq!(old.status, RequestStatus::Cancelled);
    let note = old
        .history
        .last()
        .and_then(|t| t.note.clone())
        .unwrap_or_default();
    assert!(
        note.contains("incarnation 1 of bob, which opened it, has ended"),
        "{note}"
    );
    assert_eq!(get(&new.id).await.status, RequestStatus::Pending);
}
