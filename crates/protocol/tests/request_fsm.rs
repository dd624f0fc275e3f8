//! Property tests for the request FSM: terminal states are final, only the addressee
//! resolves, and any mix of duplicate, late and out-of-order responses resolves each request
//! exactly once, by the first legal response.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code may panic on a broken fixture

use proptest::prelude::*;
use serde_json::json;
use troupe_protocol::{Request, RequestError, RequestKind, RequestStatus};

const NAMES: [&str; 3] = ["lead", "alice", "bob"];
const OPENED_AT: u64 = 1_000;
const EPOCH: u64 = 4;

#[derive(Debug, Clone)]
enum Op {
    Respond {
        by: usize,
        epoch: u64,
        approve: bool,
        at: u64,
    },
    Expire {
        at: u64,
    },
    Cancel {
        by: usize,
        at: u64,
    },
}

fn op() -> impl Strategy<Value = Op> {
    let at = OPENED_AT..OPENED_AT + 400;
    prop_oneof![
        4 => (0..3usize, EPOCH - 1..=EPOCH + 1, any::<bool>(), at.clone())
            .prop_map(|(by, epoch, approve, at)| Op::Respond { by, epoch, approve, at }),
        1 => at.clone().prop_map(|at| Op::Expire { at }),
        1 => (0..3usize, at).prop_map(|(by, at)| Op::Cancel { by, at }),
    ]
}

fn ttl() -> impl Strategy<Value = Option<u64>> {
    prop_oneof![Just(None), (0u64..300).prop_map(Some)]
}

fn request(ttl: Option<u64>) -> Request {
    Request::open(
        RequestKind::Shutdown,
        "lead",
        "alice",
        EPOCH,
        json!({}),
        OPENED_AT,
        ttl,
    )
}

fn apply(r: &mut Request, op: &Op) -> Result<(), RequestError> {
    match *op {
        Op::Respond {
            by,
            epoch,
            approve,
            at,
        } => r.respond(NAMES[by], epoch, approve, None, at).map(|_| ()),
        Op::Expire { at } => r.expire(at),
        Op::Cancel { by, at } => r.cancel(NAMES[by], at),
    }
}

proptest! {
    #[test]
    fn terminal_state_never_changes(ttl in ttl(), ops in prop::collection::vec(op(), 0..40)) {
        let mut r = request(ttl);
        let mut terminal: Option<Request> = None;
        for op in &ops {
            let before = r.clone();
            let result = apply(&mut r, op);
            if let Some(frozen) = &terminal {
                // Once terminal, nothing moves and every operation is refused.
                prop_assert_eq!(&r, frozen);
                prop_assert!(result.is_err());
                let refused_as_resolved =
                    matches!(result, Err(RequestError::AlreadyResolved { .. }));
                let refused_by_identity = matches!(
                    result,
                    Err(RequestError::WrongResponder { .. }
                        | RequestError::StaleEpoch { .. }
                        | RequestError::NotOpener { .. })
                );
                prop_assert!(refused_as_resolved || refused_by_identity);
            } else if r.status.is_terminal() {
                terminal = Some(r.clone());
            }
            // Every change of status is exactly one appended transition.
            if before.status != r.status {
                prop_assert_eq!(r.history.len(), before.history.len() + 1);
                let last = r.history.last().cloned();
                prop_assert_eq!(last.map(|t| (t.from, t.to)), Some((before.status, r.status)));
            } else {
                prop_assert_eq!(&r.history, &before.history);
            }
        }
    }

    #[test]
    fn only_the_addressee_resolves(ttl in ttl(), ops in prop::collection::vec(op(), 0..40)) {
        let mut r = request(ttl);
        for op in &ops {
            let _ = apply(&mut r, op);
        }
        match r.status {
            RequestStatus::Approved | RequestStatus::Rejected => {
                let resp = r.response.clone();
                prop_assert_eq!(resp.as_ref().map(|x| x.by.as_str()), Some("alice"));
                prop_assert_eq!(
                    resp.map(|x| x.approve),
                    Some(r.status == RequestStatus::Approved)
                );
            }
            RequestStatus::Cancelled => {
                prop_assert_eq!(r.history.last().map(|t| t.by.as_str()), Some("lead"));
                prop_assert!(r.response.is_none());
            }
            RequestStatus::Pending | RequestStatus::Expired => prop_assert!(r.response.is_none()),
        }
    }

    #[test]
    fn one_resolution_per_request_the_first_legal_one(
        ttls in prop::collection::vec(prop_oneof![Just(None), (50u64..300).prop_map(Some)], 1..6),
        raw in prop::collection::vec(
            (0..6usize, 0..3usize, EPOCH - 1..=EPOCH + 1, any::<bool>(), OPENED_AT..OPENED_AT + 400),
            0..60,
        ),
    ) {
        // A set of requests all addressed to alice, hit by a stream of responses that
        // may be duplicated, late, from the wrong agent or incarnation, and in any order.
        let mut requests: Vec<Request> = ttls.iter().map(|t| request(*t)).collect();
        let n = requests.len();
        let mut oks = vec![0usize; n];
        let mut expected: Vec<Option<RequestStatus>> = vec![None; n];
        for &(idx, by, epoch, approve, at) in &raw {
            let i = idx % n;
            let legal_responder = NAMES[by] == "alice" && epoch == EPOCH;
            if legal_responder && expected[i].is_none() {
                // The first legal-looking response decides: on time it resolves, late it expires.
                let late = requests[i].expires_at.is_some_and(|deadline| at >= deadline);
                expected[i] = Some(match (late, approve) {
                    (true, _) => RequestStatus::Expired,
                    (false, true) => RequestStatus::Approved,
                    (false, false) => RequestStatus::Rejected,
                });
            }
            if requests[i].respond(NAMES[by], epoch, approve, None, at).is_ok() {
                oks[i] += 1;
            }
        }
        for i in 0..n {
            let r = &requests[i];
            let want = expected[i].unwrap_or(RequestStatus::Pending);
            prop_assert_eq!(r.status, want);
            let resolved = matches!(want, RequestStatus::Approved | RequestStatus::Rejected);
            prop_assert_eq!(oks[i], usize::from(resolved));
            prop_assert_eq!(r.history.len(), usize::from(want != RequestStatus::Pending));
        }
    }
}
