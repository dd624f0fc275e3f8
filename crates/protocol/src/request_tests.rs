use super::*;
use serde_json::json;

fn shutdown(ttl: Option<u64>) -> Request {
    Request::open(
        RequestKind::Shutdown,
        "lead",
        "alice",
        2,
        json!({}),
        1_000,
        ttl,
    )
}

#[test]
fn approve_records_response_and_history() {
    let mut r = shutdown(Some(500));
    assert_eq!(r.expires_at, Some(1_500));
    let got = r.respond("alice", 2, true, Some("done".into()), 1_200);
    assert_eq!(got, Ok(RequestStatus::Approved));
    assert_eq!(r.status, RequestStatus::Approved);
    let resp = r.response.clone().unwrap_or_else(|| panic!("no response"));
    assert!(resp.approve);
    assert_eq!(resp.by, "alice");
    assert_eq!(resp.at, 1_200);
    assert_eq!(r.history.len(), 1);
    assert_eq!(r.history[0].from, RequestStatus::Pending);
    assert_eq!(r.history[0].to, RequestStatus::Approved);
}

#[test]
fn reject_then_second_response_is_refused_naming_status() {
    let mut r = shutdown(None);
    assert_eq!(
        r.respond("alice", 2, false, None, 1_100),
        Ok(RequestStatus::Rejected)
    );
    let err = r.respond("alice", 2, true, None, 1_200);
    assert_eq!(
        err,
        Err(RequestError::AlreadyResolved {
            request_id: r.id.clone(),
            status: RequestStatus::Rejected
        })
    );
    assert!(err
        .map_err(|e| e.to_string())
        .unwrap_err()
        .contains("rejected"));
    assert_eq!(r.history.len(), 1);
}

#[test]
fn only_addressee_responds_and_only_opener_cancels() {
    let mut r = shutdown(None);
    assert!(matches!(
        r.respond("lead", 2, true, None, 1_100),
        Err(RequestError::WrongResponder { .. })
    ));
    assert!(matches!(
        r.cancel("alice", 1_100),
        Err(RequestError::NotOpener { .. })
    ));
    assert_eq!(r.status, RequestStatus::Pending);
    assert!(r.history.is_empty());
    assert_eq!(r.cancel("lead", 1_200), Ok(()));
    assert_eq!(r.status, RequestStatus::Cancelled);
}

#[test]
fn stale_epoch_is_refused_without_change() {
    let mut r = shutdown(None);
    let err = r.respond("alice", 3, true, None, 1_100);
    assert!(matches!(
        err,
        Err(RequestError::StaleEpoch {
            request_epoch: 2,
            current_epoch: 3,
            ..
        })
    ));
    assert_eq!(r.status, RequestStatus::Pending);
}

#[test]
fn late_response_expires_the_request() {
    let mut r = shutdown(Some(100));
    let err = r.respond("alice", 2, true, None, 1_100);
    assert_eq!(
        err,
        Err(RequestError::Expired {
            request_id: r.id.clone()
        })
    );
    assert_eq!(r.status, RequestStatus::Expired);
    assert_eq!(r.response, None);
    assert_eq!(r.history.len(), 1);
    assert_eq!(r.history[0].by, SYSTEM_ACTOR);
}

#[test]
fn a_person_answers_in_the_addressees_place_and_is_recorded() {
    let mut r = shutdown(Some(500));
    assert!(matches!(
        r.respond_as_person("bob", true, None, 1_100),
        Err(RequestError::NotAPerson { .. })
    ));
    assert!(matches!(
        r.respond_as_person("user:", true, None, 1_100),
        Err(RequestError::NotAPerson { .. })
    ));
    assert_eq!(r.status, RequestStatus::Pending);
    let got = r.respond_as_person("user:ann", false, Some("not now".into()), 1_200);
    assert_eq!(got, Ok(RequestStatus::Rejected));
    assert!(r.answered_by_person());
    let resp = r.response.clone().unwrap_or_else(|| panic!("no response"));
    assert_eq!((resp.by.as_str(), resp.approve), ("user:ann", false));
    assert_eq!(r.history[0].by, "user:ann");
    // Resolved stays resolved, for people as for agents.
    assert!(matches!(
        r.respond_as_person("user:ann", true, None, 1_300),
        Err(RequestError::AlreadyResolved {
            status: RequestStatus::Rejected,
            ..
        })
    ));
    assert!(matches!(
        r.respond("alice", 2, true, None, 1_300),
        Err(RequestError::AlreadyResolved { .. })
    ));
    // A late answer expires the request, whoever gives it.
    let mut late = shutdown(Some(100));
    assert!(matches!(
        late.respond_as_person("user:ann", true, None, 1_100),
        Err(RequestError::Expired { .. })
    ));
    assert_eq!(late.status, RequestStatus::Expired);
    assert!(!late.answered_by_person());
}

#[test]
fn expire_only_when_due() {
    let mut r = shutdown(Some(100));
    assert!(matches!(
        r.expire(1_099),
        Err(RequestError::NotExpiredYet {
            expires_at: 1_100,
            ..
        })
    ));
    assert_eq!(r.expire(1_100), Ok(()));
    assert_eq!(r.status, RequestStatus::Expired);
    assert!(matches!(
        r.expire(2_000),
        Err(RequestError::AlreadyResolved { .. })
    ));
    let mut forever = shutdown(None);
    assert!(matches!(
        forever.expire(u64::MAX),
        Err(RequestError::NoDeadline { .. })
    ));
    assert!(!forever.is_overdue(u64::MAX));
}

#[test]
fn wire_shape_round_trips() {
    let mut r = Request::open(
        RequestKind::Plan,
        "alice",
        "lead",
        0,
        json!({"plan": "x"}),
        5,
        None,
    );
    let _ = r.respond("lead", 0, false, Some("more tests".into()), 6);
    let v = serde_json::to_value(&r).unwrap_or_default();
    assert_eq!(v["kind"], "plan");
    assert_eq!(v["status"], "rejected");
    assert_eq!(v["response"]["reason"], "more tests");
    assert_eq!(v["history"][0]["to"], "rejected");
    let back: Request = serde_json::from_value(v).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(back, r);
}
