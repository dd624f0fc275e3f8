//! Liveness: a lease is exclusive while held, a probe takes nothing, a lease handed to a child
//! process is the child's alone, and a holder that dies, however it dies, loses it (at once on
//! the file store, after the TTL on a server).

use std::process::Command;
use std::time::Duration;

use troupe_store::{LeaseState, StoreError};

use crate::backend::{eventually, ok, Backend, Fixture};
use crate::both;
use crate::children::spawn;
use crate::mailbox::read_until;

both!(
    a_lease_is_exclusive_until_dropped_and_a_probe_takes_nothing,
    a_lease_handed_to_a_child_is_held_by_it_alone_until_it_dies,
    a_killed_holder_loses_its_lease,
    adopting_with_a_wrong_handoff_is_refused,
    a_holder_killed_on_this_host_is_taken_over_at_once,
);

/// Bound for a dead holder's lease to be seen free: its lapse plus slack for a loaded machine.
fn lapse_bound(f: &Fixture) -> Duration {
    f.lease_lapse() + Duration::from_secs(15)
}

async fn a_lease_is_exclusive_until_dropped_and_a_probe_takes_nothing(b: Backend) {
    let f = Fixture::new(b).await;
    let s = &f.store;
    assert_eq!(ok(s.probe_lease("bob").await), LeaseState::Free);
    let lease = ok(s.acquire_lease("bob").await);
    assert_eq!(lease.holder().pid, std::process::id());
    assert_eq!(lease.agent(), "bob");
    let other = f.open().await;
    assert_eq!(
        ok(other.probe_lease("bob").await),
        LeaseState::Held(Some(lease.holder().clone()))
    );
    // Probing many times takes nothing: the holder still holds, nobody else gets in.
    for _ in 0..20 {
        assert!(ok(other.is_alive("bob").await));
    }
    match other.acquire_lease("bob").await {
        Err(e @ StoreError::LeaseHeld { .. }) => {
            let StoreError::LeaseHeld {
                ref agent,
                ref holder,
                ..
            } = e
            else {
                unreachable!()
            };
            assert_eq!(agent, "bob");
            assert_eq!(holder.as_deref(), Some(lease.holder()));
            assert!(
                e.to_string()
                    .contains(&format!("pid {}", std::process::id())),
                "{e}"
            );
        }
        other => panic!("expected the lease to be held: {other:?}"),
    }
    // Another agent's lease is independent.
    let alice = ok(other.acquire_lease("alice").await);
    // Let go as an async caller does when it acts on "not alive" next: released, awaited.
    lease.release().await;
    assert_eq!(ok(other.probe_lease("bob").await), LeaseState::Free);
    assert!(!ok(other.is_alive("bob").await));
    let again = ok(other.acquire_lease("bob").await);
    drop((alice, again));
}

async fn a_lease_handed_to_a_child_is_held_by_it_alone_until_it_dies(b: Backend) {
    let f = Fixture::new(b).await;
    let s = &f.store;
    let lease = ok(s.acquire_lease("bob").await);
    // What the team's spawn does: the child is given the lease, then this process lets go.
    let mut cmd = Command::new("true");
    let handoff = lease.pass_to_child(&mut cmd);
    let mut child = spawn_adopter(&f, &lease, &handoff);
    lease.hand_over(child.id());
    // bob is never without a holder meanwhile.
    assert!(ok(s.is_alive("bob").await));
    let pid: u32 = read_until(&mut child, "ADOPTED").parse().unwrap();
    assert_eq!(pid, child.id());
    match ok(s.probe_lease("bob").await) {
        LeaseState::Held(Some(holder)) => assert_eq!(holder.pid, child.id()),
        other => panic!("the child holds bob's lease: {other:?}"),
    }
    match s.acquire_lease("bob").await {
        Err(StoreError::LeaseHeld {
            holder: Some(h), ..
        }) => assert_eq!(h.pid, child.id()),
        other => panic!("the parent no longer holds it, the child does: {other:?}"),
    }
    child.kill().unwrap(); // SIGKILL: no goodbye
    child.wait().unwrap();
    eventually(
        lapse_bound(&f),
        "the dead child's lease is free",
        async || ok(s.probe_lease("bob").await) == LeaseState::Free,
    )
    .await;
    assert!(
        s.acquire_lease("bob").await.is_ok(),
        "a dead holder blocks nobody"
    );
}

/// Starts a child that adopts bob's lease from `handoff`. On the file store the handoff is an
/// inherited descriptor, so the child must be started through the command the lease prepared.
fn spawn_adopter(f: &Fixture, lease: &troupe_store::Lease, handoff: &str) -> std::process::Child {
    match f.backend {
        Backend::Nats | Backend::Cluster => spawn(&format!("adopt:{handoff}"), &f.spec()),
        Backend::File => {
            use std::process::Stdio;
            let mut cmd = Command::new(std::env::current_exe().unwrap());
            cmd.args([
                "--ignored",
                "--exact",
                "children::child_entry",
                "--nocapture",
                "--test-threads=1",
            ])
            .env("TROUPE_CONFORMANCE_STORE", f.spec())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped());
            let fd = lease.pass_to_child(&mut cmd);
            cmd.env("TROUPE_CONFORMANCE_CHILD", format!("adopt:{fd}"));
            cmd.spawn().unwrap()
        }
    }
}

async fn a_killed_holder_loses_its_lease(b: Backend) {
    let f = Fixture::new(b).await;
    let mut child = spawn("holder", &f.spec());
    let pid: u32 = read_until(&mut child, "HOLDING").parse().unwrap();
    match ok(f.store.probe_lease("bob").await) {
        LeaseState::Held(Some(h)) => assert_eq!(h.pid, pid),
        other => panic!("the child holds it: {other:?}"),
    }
    assert!(matches!(
        f.store.acquire_lease("bob").await,
        Err(StoreError::LeaseHeld { .. })
    ));
    child.kill().unwrap();
    child.wait().unwrap();
    eventually(
        lapse_bound(&f),
        "the killed holder's lease is free",
        async || !ok(f.store.is_alive("bob").await),
    )
    .await;
    let lease = ok(f.store.acquire_lease("bob").await);
    assert_eq!(lease.holder().pid, std::process::id());
}

async fn adopting_with_a_wrong_handoff_is_refused(b: Backend) {
    let f = Fixture::new(b).await;
    let lease = ok(f.store.acquire_lease("bob").await);
    let err = f.open().await.adopt_lease("bob", "not-the-handoff").await;
    assert!(
        matches!(err, Err(StoreError::LeaseNotInherited { .. })),
        "{err:?}"
    );
    // Still held by its holder.
    assert_eq!(
        ok(f.store.probe_lease("bob").await),
        LeaseState::Held(Some(lease.holder().clone()))
    );
}

/// A restart right after a SIGKILL on the same host: the dead holder's pid and start time are
/// checked against `/proc`, so its lease is free at once (not after the TTL) and taken over.
async fn a_holder_killed_on_this_host_is_taken_over_at_once(b: Backend) {
    let f = Fixture::new(b).await;
    let mut child = spawn("holder", &f.spec());
    let pid: u32 = read_until(&mut child, "HOLDING").parse().unwrap();
    let holder = match ok(f.store.probe_lease("bob").await) {
        LeaseState::Held(Some(h)) => h,
        other => panic!("the child holds it: {other:?}"),
    };
    assert_eq!(holder.pid, pid);
    assert!(
        holder.process.is_some(),
        "the holder records its start time"
    );
    assert!(!holder.is_gone());
    child.kill().unwrap();
    child.wait().unwrap();
    // No waiting for a lapse: the holder is gone, and this host can tell.
    assert!(holder.is_gone());
    assert_eq!(ok(f.store.probe_lease("bob").await), LeaseState::Free);
    let lease = ok(f.open().await.acquire_lease("bob").await);
    assert_eq!(lease.holder().pid, std::process::id());
    // The taker holds it alone from now on.
    assert!(matches!(
        f.open().await.acquire_lease("bob").await,
        Err(StoreError::LeaseHeld { .. })
    ));
    match ok(f.store.probe_lease("bob").await) {
        LeaseState::Held(Some(h)) => assert_eq!(&h, lease.holder()),
        other => panic!("the taker holds it: {other:?}"),
    }
}
