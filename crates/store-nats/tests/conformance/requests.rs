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

fn create_get_round_trip_and_duplicate_refused(b: Backend) {
    let f = Fixture::new(b);
    let s = &f.store;
    let r = shutdown("alice", 100, Some(1_000));
    ok(s.create_request(&r));
    assert_eq!(ok(s.get_request(&r.id)), Some(r.clone()));
    assert_eq!(ok(f.open().get_request(&r.id)), Some(r.clone()));
    assert!(matches!(
        s.create_request(&r),
        Err(StoreError::DuplicateRequest { .. })
    ));
    assert_eq!(ok(s.get_request("01NOPE")), None);
    let events = ok(s.read_events(EventCursor::START)).events;
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].kind, EventKind::RequestOpened);
    assert_eq!(events[0].data["request_id"], r.id.as_str());
}

fn unknown_and_unsafe_ids_are_clear_errors(b: Backend) {
    let f = Fixture::new(b);
    let s = &f.store;
    let err = s.update_request("01UNKNOWN", &mut |_| Ok(()));
    let Err(err @ StoreError::UnknownRequest { .. }) = err else {
        panic!("expected UnknownRequest, got {err:?}");
    };
    assert!(err.to_string().contains("01UNKNOWN"));
    assert!(matches!(
        s.get_request("../roster"),
        Err(StoreError::BadRequestId { .. })
    ));
}

fn response_rules_are_enforced_and_persisted(b: Backend) {
    let f = Fixture::new(b);
    let s = &f.store;
    let r = shutdown("alice", 100, None);
    ok(s.create_request(&r));
    // Wrong responder: refused, nothing written.
    let err = s.update_request(&r.id, &mut |req| {
        req.respond("bob", 1, true, None, 150).map(|_| ())
    });
    assert!(matches!(
        err,
        Err(StoreError::Request(RequestError::WrongResponder { .. }))
    ));
    assert_eq!(
        ok(s.get_request(&r.id)).map(|x| x.status),
        Some(RequestStatus::Pending)
    );
    // The addressee approves.
    let done = ok(s.update_request(&r.id, &mut |req| {
        req.respond("alice", 1, true, Some("bye".into()), 200)
            .map(|_| ())
    }));
    assert_eq!(done.status, RequestStatus::Approved);
    let stored = ok(s.get_request(&r.id)).unwrap_or_else(|| panic!("missing"));
    assert_eq!(stored, done);
    assert_eq!(stored.response.map(|x| x.by), Some("alice".to_string()));
    // A second response names the current status.
    let err = s.update_request(&r.id, &mut |req| {
        req.respond("alice", 1, false, None, 300).map(|_| ())
    });
    let Err(err) = err else {
        panic!("second response accepted")
    };
    assert!(err.to_string().contains("approved"), "{err}");
    let kinds: Vec<_> = ok(s.read_events(EventCursor::START))
        .events
        .iter()
        .map(|e| e.kind)
        .collect();
    assert_eq!(
        kinds,
        [EventKind::RequestOpened, EventKind::RequestResolved]
    );
}

fn late_response_expires_the_stored_request(b: Backend) {
    let f = Fixture::new(b);
    let s = &f.store;
    let r = shutdown("alice", 100, Some(50));
    ok(s.create_request(&r));
    let err = s.update_request(&r.id, &mut |req| {
        req.respond("alice", 1, true, None, 500).map(|_| ())
    });
    assert!(matches!(
        err,
        Err(StoreError::Request(RequestError::Expired { .. }))
    ));
    // The refusal still persisted the move to expired.
    let stored = ok(s.get_request(&r.id)).unwrap_or_else(|| panic!("missing"));
    assert_eq!(stored.status, RequestStatus::Expired);
    assert_eq!(stored.response, None);
    let last = ok(s.read_events(EventCursor::START))
        .events
        .pop()
        .map(|e| e.kind);
    assert_eq!(last, Some(EventKind::RequestExpired));
}

fn concurrent_responders_yield_exactly_one_resolution(b: Backend) {
    let f = Fixture::new(b);
    let s = &f.store;
    let r = shutdown("alice", 100, None);
    ok(s.create_request(&r));
    let threads: Vec<_> = (0..8)
        .map(|i| {
            // Each thread uses its own handle, as separate processes would.
            let (own, id) = (f.open(), r.id.clone());
            std::thread::spawn(move || {
                own.update_request(&id, &mut |req| {
                    req.respond("alice", 1, i % 2 == 0, Some(format!("t{i}")), 200 + i)
                        .map(|_| ())
                })
            })
        })
        .collect();
    let results: Vec<_> = threads
        .into_iter()
        .map(|t| t.join().unwrap_or_else(|_| panic!("thread panicked")))
        .collect();
    let wins = results.iter().filter(|r| r.is_ok()).count();
    assert_eq!(wins, 1);
    for r in results.iter().filter_map(|r| r.as_ref().err()) {
        assert!(matches!(
            r,
            StoreError::Request(RequestError::AlreadyResolved { .. })
        ));
    }
    let stored = ok(s.get_request(&r.id)).unwrap_or_else(|| panic!("missing"));
    assert_eq!(stored.history.len(), 1);
    let winner = results.iter().find_map(|r| r.as_ref().ok());
    assert_eq!(winner, Some(&stored));
    let resolved = ok(s.read_events(EventCursor::START))
        .events
        .iter()
        .filter(|e| e.kind == EventKind::RequestResolved)
        .count();
    assert_eq!(resolved, 1);
}

fn sweep_expires_only_overdue_pending_requests(b: Backend) {
    let f = Fixture::new(b);
    let s = &f.store;
    let overdue = shutdown("alice", 100, Some(10));
    let fresh = shutdown("bob", 100, Some(10_000));
    let forever = shutdown("carol", 100, None);
    let mut answered = shutdown("dave", 100, Some(10));
    let _ = answered.respond("dave", 1, true, None, 105);
    for r in [&overdue, &fresh, &forever, &answered] {
        ok(s.create_request(r));
    }
    let swept = ok(s.sweep_expired(1_000));
    let ids: Vec<_> = swept.iter().map(|r| r.id.clone()).collect();
    assert_eq!(ids, vec![overdue.id.clone()]);
    let status = |id: &str| ok(s.get_request(id)).map(|r| r.status);
    assert_eq!(status(&overdue.id), Some(RequestStatus::Expired));
    assert_eq!(status(&fresh.id), Some(RequestStatus::Pending));
    assert_eq!(status(&forever.id), Some(RequestStatus::Pending));
    assert_eq!(status(&answered.id), Some(RequestStatus::Approved));
    // A second sweep finds nothing new.
    assert!(ok(s.sweep_expired(1_000)).is_empty());
}

fn list_filters_by_status_kind_and_agent(b: Backend) {
    let f = Fixture::new(b);
    let s = &f.store;
    let a = shutdown("alice", 1, None);
    let b = Request::open(RequestKind::Plan, "bob", "lead", 0, json!({}), 2, None);
    let mut c = shutdown("carol", 3, None);
    let _ = c.cancel("lead", 4);
    for r in [&a, &b, &c] {
        ok(s.create_request(r));
    }
    let ids = |f: RequestFilter| -> Vec<String> {
        ok(s.list_requests(&f)).into_iter().map(|r| r.id).collect()
    };
    assert_eq!(
        ids(RequestFilter::default()),
        [a.id.clone(), b.id.clone(), c.id.clone()]
    );
    let pending = RequestFilter {
        status: Some(RequestStatus::Pending),
        ..RequestFilter::default()
    };
    assert_eq!(ids(pending), [a.id.clone(), b.id.clone()]);
    let plans = RequestFilter {
        kind: Some(RequestKind::Plan),
        ..RequestFilter::default()
    };
    assert_eq!(ids(plans), vec![b.id.clone()]);
    let carol = RequestFilter {
        agent: Some("carol".into()),
        ..RequestFilter::default()
    };
    assert_eq!(ids(carol), vec![c.id.clone()]);
    let lead = RequestFilter {
        agent: Some("lead".into()),
        ..RequestFilter::default()
    };
    assert_eq!(ids(lead).len(), 3);
}
