//! Protocol requests through the store: round trips, the FSM's rules enforced on every
//! change, one winner among concurrent responders, expiry sweeps, listing.

use serde_json::json;
use troupe_protocol::{EventKind, Request, RequestError, RequestKind, RequestStatus};
use troupe_store::{EventCursor, RequestFilter, StoreError};

use crate::backend::{ok, Backend, Fixture};
use crate::both;

both!(
    create_get_round_trip_and_duplicate_refused,
    unknown_and_unsafe_ids_are_clear_errors,
    response_rules_are_enforced_and_persisted,
    late_response_expires_the_stored_request,
    concurrent_responders_yield_exactly_one_resolution,
    sweep_expires_only_overdue_pending_requests,
    list_filters_by_status_kind_and_agent,
);

fn shutdown(to: &str, now: u64, ttl: Option<u64>) -> Request {
    Request::open(
        RequestKind::Shutdown,
        "lead",
        to,
        1,
        json!({"reason": "done"}),
        now,
        ttl,
    )
}

async fn create_get_round_trip_and_duplicate_refused(b: Backend) {
    let f = Fixture::new(b).await;
    let s = &f.store;
    let r = shutdown("alice", 100, Some(1_000));
    ok(s.create_request(&r).await);
    assert_eq!(ok(s.get_request(&r.id).await), Some(r.clone()));
    assert_eq!(ok(f.open().await.get_request(&r.id).await), Some(r.clone()));
    assert!(matches!(
        s.create_request(&r).await,
        Err(StoreError::DuplicateRequest { .. })
    ));
    assert_eq!(ok(s.get_request("01NOPE").await), None);
    let events = ok(s.read_events(EventCursor::START).await).events;
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].kind, EventKind::RequestOpened);
    assert_eq!(events[0].data["request_id"], r.id.as_str());
}

async fn unknown_and_unsafe_ids_are_clear_errors(b: Backend) {
    let f = Fixture::new(b).await;
    let s = &f.store;
    let err = s.update_request("01UNKNOWN", &mut |_| Ok(())).await;
    let Err(err @ StoreError::UnknownRequest { .. }) = err else {
        panic!("expected UnknownRequest, got {err:?}");
    };
    assert!(err.to_string().contains("01UNKNOWN"));
    assert!(matches!(
        s.get_request("../roster").await,
        Err(StoreError::BadRequestId { .. })
    ));
}

async fn response_rules_are_enforced_and_persisted(b: Backend) {
    let f = Fixture::new(b).await;
    let s = &f.store;
    let r = shutdown("alice", 100, None);
    ok(s.create_request(&r).await);
    // Wrong responder: refused, nothing written.
    let err = s
        .update_request(&r.id, &mut |req| {
            req.respond("bob", 1, true, None, 150).map(|_| ())
        })
        .await;
    assert!(matches!(
        err,
        Err(StoreError::Request(RequestError::WrongResponder { .. }))
    ));
    assert_eq!(
        ok(s.get_request(&r.id).await).map(|x| x.status),
        Some(RequestStatus::Pending)
    );
    // The addressee approves.
    let done = ok(s
        .update_request(&r.id, &mut |req| {
            req.respond("alice", 1, true, Some("bye".into()), 200)
                .map(|_| ())
        })
        .await);
    assert_eq!(done.status, RequestStatus::Approved);
    let stored = ok(s.get_request(&r.id).await).unwrap_or_else(|| panic!("missing"));
    assert_eq!(stored, done);
    assert_eq!(stored.response.map(|x| x.by), Some("alice".to_string()));
    // A second response names the current status.
    let err = s
        .update_request(&r.id, &mut |req| {
            req.respond("alice", 1, false, None, 300).map(|_| ())
        })
        .await;
    let Err(err) = err else {
        panic!("second response accepted")
    };
    assert!(err.to_string().contains("approved"), "{err}");
    let kinds: Vec<_> = ok(s.read_events(EventCursor::START).await)
        .events
        .iter()
        .map(|e| e.kind)
        .collect();
    assert_eq!(
        kinds,
        [EventKind::RequestOpened, EventKind::RequestResolved]
    );
}

async fn late_response_expires_the_stored_request(b: Backend) {
    let f = Fixture::new(b).await;
    let s = &f.store;
    let r = shutdown("alice", 100, Some(50));
    ok(s.create_request(&r).await);
    let err = s
        .update_request(&r.id, &mut |req| {
            req.respond("alice", 1, true, None, 500).map(|_| ())
        })
        .await;
    assert!(matches!(
        err,
        Err(StoreError::Request(RequestError::Expired { .. }))
    ));
    // The refusal still persisted the move to expired.
    let stored = ok(s.get_request(&r.id).await).unwrap_or_else(|| panic!("missing"));
    assert_eq!(stored.status, RequestStatus::Expired);
    assert_eq!(stored.response, None);
    let last = ok(s.read_events(EventCursor::START).await)
        .events
        .pop()
        .map(|e| e.kind);
    assert_eq!(last, Some(EventKind::RequestExpired));
}

async fn concurrent_responders_yield_exactly_one_resolution(b: Backend) {
    let f = Fixture::new(b).await;
    let s = &f.store;
    let r = shutdown("alice", 100, None);
    ok(s.create_request(&r).await);
    let mut threads = Vec::new();
    for i in 0..8 {
        // Each task uses its own handle, as separate processes would.
        let (own, id) = (f.open().await, r.id.clone());
        threads.push(tokio::spawn(async move {
            own.update_request(&id, &mut |req| {
                req.respond("alice", 1, i % 2 == 0, Some(format!("t{i}")), 200 + i)
                    .map(|_| ())
            })
            .await
        }));
    }
    let mut results = Vec::new();
    for t in threads {
        results.push(t.await.unwrap_or_else(|_| panic!("task panicked")));
    }
    let wins = results.iter().filter(|r| r.is_ok()).count();
    assert_eq!(wins, 1);
    for r in results.iter().filter_map(|r| r.as_ref().err()) {
        assert!(matches!(
            r,
            StoreError::Request(RequestError::AlreadyResolved { .. })
        ));
    }
    let stored = ok(s.get_request(&r.id).await).unwrap_or_else(|| panic!("missing"));
    assert_eq!(stored.history.len(), 1);
    let winner = results.iter().find_map(|r| r.as_ref().ok());
    assert_eq!(winner, Some(&stored));
    let resolved = ok(s.read_events(EventCursor::START).await)
        .events
        .iter()
        .filter(|e| e.kind == EventKind::RequestResolved)
        .count();
    assert_eq!(resolved, 1);
}

async fn sweep_expires_only_overdue_pending_requests(b: Backend) {
    let f = Fixture::new(b).await;
    let s = &f.store;
    let overdue = shutdown("alice", 100, Some(10));
    let fresh = shutdown("bob", 100, Some(10_000));
    let forever = shutdown("carol", 100, None);
    let mut answered = shutdown("dave", 100, Some(10));
    let _ = answered.respond("dave", 1, true, None, 105);
    for r in [&overdue, &fresh, &forever, &answered] {
        ok(s.create_request(r).await);
    }
    let swept = ok(s.sweep_expired(1_000).await);
    let ids: Vec<_> = swept.iter().map(|r| r.id.clone()).collect();
    assert_eq!(ids, vec![overdue.id.clone()]);
    let status = async |id: &str| ok(s.get_request(id).await).map(|r| r.status);
    assert_eq!(status(&overdue.id).await, Some(RequestStatus::Expired));
    assert_eq!(status(&fresh.id).await, Some(RequestStatus::Pending));
    assert_eq!(status(&forever.id).await, Some(RequestStatus::Pending));
    assert_eq!(status(&answered.id).await, Some(RequestStatus::Approved));
    // A second sweep finds nothing new.
    assert!(ok(s.sweep_expired(1_000).await).is_empty());
}

async fn list_filters_by_status_kind_and_agent(b: Backend) {
    let f = Fixture::new(b).await;
    let s = &f.store;
    let a = shutdown("alice", 1, None);
    let b = Request::open(RequestKind::Plan, "bob", "lead", 0, json!({}), 2, None);
    let mut c = shutdown("carol", 3, None);
    let _ = c.cancel("lead", 4);
    for r in [&a, &b, &c] {
        ok(s.create_request(r).await);
    }
    let ids = async |f: RequestFilter| -> Vec<String> {
        ok(s.list_requests(&f).await)
            .into_iter()
            .map(|r| r.id)
            .collect()
    };
    assert_eq!(
        ids(RequestFilter::default()).await,
        [a.id.clone(), b.id.clone(), c.id.clone()]
    );
    let pending = RequestFilter {
        status: Some(RequestStatus::Pending),
        ..RequestFilter::default()
    };
    assert_eq!(ids(pending).await, [a.id.clone(), b.id.clone()]);
    let plans = RequestFilter {
        kind: Some(RequestKind::Plan),
        ..RequestFilter::default()
    };
    assert_eq!(ids(plans).await, vec![b.id.clone()]);
    let carol = RequestFilter {
        agent: Some("carol".into()),
        ..RequestFilter::default()
    };
    assert_eq!(ids(carol).await, vec![c.id.clone()]);
    let lead = RequestFilter {
        agent: Some("lead".into()),
        ..RequestFilter::default()
    };
    assert_eq!(ids(lead).await.len(), 3);
}
