//! The file backend's leases: a probe answers without taking the lock (so it never refuses a
//! process that acquires at that moment) and creates no file; a handoff that is not the lease
//! file is refused. Handing a lease to a child and losing it with the holder are in the
//! conformance suite, on every backend.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code may panic on a broken fixture

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread;

use troupe_store::file::FileStore;
use troupe_store::{LeaseState, LivenessStore, StoreError};

/// Runs `f` to completion on a runtime of this thread's own.
fn block_on<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(f)
}

fn store(dir: &Path) -> FileStore {
    FileStore::open(&dir.join(".troupe"), "blue").unwrap()
}

#[tokio::test]
async fn a_probe_says_free_held_and_free_again_and_creates_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(dir.path());
    assert_eq!(s.probe_lease("bob").await.unwrap(), LeaseState::Free);
    assert!(!s.dir().join("members").exists(), "a probe creates no file");
    let lease = s.acquire_lease("bob").await.unwrap();
    // Another handle on the store, as another process would have.
    let other = store(dir.path());
    assert_eq!(
        other.probe_lease("bob").await.unwrap(),
        LeaseState::Held(Some(lease.holder().clone()))
    );
    assert!(other.is_alive("bob").await.unwrap());
    // Probing many times takes nothing: the holder still holds, nobody else gets in.
    for _ in 0..100 {
        assert!(other.is_alive("bob").await.unwrap());
    }
    assert!(matches!(
        other.acquire_lease("bob").await,
        Err(StoreError::LeaseHeld { .. })
    ));
    drop(lease);
    assert_eq!(other.probe_lease("bob").await.unwrap(), LeaseState::Free);
    assert!(!other.is_alive("bob").await.unwrap());
    assert!(matches!(
        s.probe_lease("../x").await,
        Err(StoreError::BadName { .. })
    ));
}

/// Probers hammer every lease while acquirers take and drop theirs. A probe that briefly took
/// the lock (a try-lock) would make the lone acquirer of `bob` see "held" now and then.
#[tokio::test]
async fn probes_never_disturb_concurrent_acquires() {
    const ROUNDS: usize = 2_000;
    let dir = tempfile::tempdir().unwrap();
    let s = store(dir.path());
    let alice = s.acquire_lease("alice").await.unwrap();
    let alice_holder = alice.holder().clone();
    let stop = Arc::new(AtomicBool::new(false));
    let probes = Arc::new(AtomicUsize::new(0));

    let probers: Vec<_> = (0..4)
        .map(|_| {
            let (s, stop, probes, alice_holder) = (
                store(dir.path()),
                stop.clone(),
                probes.clone(),
                alice_holder.clone(),
            );
            thread::spawn(move || {
                block_on(async move {
                    while !stop.load(Ordering::SeqCst) {
                        s.probe_lease("bob").await.unwrap();
                        s.probe_lease("carol").await.unwrap();
                        assert_eq!(
                            s.probe_lease("alice").await.unwrap(),
                            LeaseState::Held(Some(alice_holder.clone())),
                            "a lease held all along is always seen held"
                        );
                        assert_eq!(s.probe_lease("nobody").await.unwrap(), LeaseState::Free);
                        probes.fetch_add(1, Ordering::SeqCst);
                    }
                })
            })
        })
        .collect();

    // The only acquirer of bob: every acquisition must succeed, probes or not.
    let bob = {
        let s = store(dir.path());
        thread::spawn(move || {
            block_on(async move {
                for round in 0..ROUNDS {
                    match s.acquire_lease("bob").await {
                        Ok(lease) => drop(lease),
                        Err(e) => panic!("round {round}: a probe disturbed the acquisition: {e}"),
                    }
                }
            })
        })
    };

    // Two acquirers race for carol: never both at once, and each refusal names a holder
    // process (this one), never a probe.
    let inside = Arc::new(AtomicUsize::new(0));
    let carol: Vec<_> = (0..2)
        .map(|_| {
            let (s, inside) = (store(dir.path()), inside.clone());
            thread::spawn(move || {
                block_on(async move {
                    let mut won = 0;
                    for _ in 0..ROUNDS / 2 {
                        match s.acquire_lease("carol").await {
                            Ok(lease) => {
                                assert_eq!(inside.fetch_add(1, Ordering::SeqCst), 0, "two holders");
                                assert!(s.is_alive("carol").await.unwrap());
                                inside.fetch_sub(1, Ordering::SeqCst);
                                drop(lease);
                                won += 1;
                            }
                            Err(StoreError::LeaseHeld { .. }) => {}
                            Err(e) => panic!("{e}"),
                        }
                    }
                    won
                })
            })
        })
        .collect();

    bob.join().unwrap();
    let won: usize = carol.into_iter().map(|t| t.join().unwrap()).sum();
    stop.store(true, Ordering::SeqCst);
    for p in probers {
        p.join().unwrap();
    }
    assert!(won > 0, "carol was taken at least once");
    assert!(probes.load(Ordering::SeqCst) > 0, "the probers ran");
    drop(alice);
    assert!(!s.is_alive("alice").await.unwrap());
}

/// Not a test on its own: the body of a child process that adopts the lease it inherited,
/// says so, and holds it until its stdin closes (or it is killed).
#[tokio::test]
async fn adopting_a_descriptor_that_is_not_the_lease_is_refused_and_leaves_it_open() {
    use std::os::fd::AsRawFd;
    let dir = tempfile::tempdir().unwrap();
    let s = store(dir.path());
    drop(s.acquire_lease("bob").await.unwrap()); // the lock file exists, unheld
    let other = std::fs::File::create(dir.path().join("other")).unwrap();
    match s.adopt_lease("bob", &other.as_raw_fd().to_string()).await {
        Err(e @ StoreError::LeaseNotInherited { .. }) => {
            assert!(e.to_string().contains("blue/members"), "{e}");
        }
        other => panic!("expected a refusal: {other:?}"),
    }
    // Still ours and open: the refusal did not take or close it.
    assert!(other.metadata().is_ok());
    assert!(matches!(
        s.adopt_lease("bob", "987654").await,
        Err(StoreError::LeaseNotInherited { .. })
    ));
}
