//! How a `troupe teammate` process gets going on its team's store: reaching the store (a
//! server that is not up yet is retried with backoff, and the teammate says so) and taking its
//! lease (a holder on this host that is gone is taken over at once by the store; a holder on
//! another host is waited for until its lease lapses, unless `--no-wait`).

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use troupe_store::{Lease, LeaseHolder, SharedStore, StoreError};

use crate::args::TeammateArgs;
use crate::store::StoreChoice;

/// The longest pause between two attempts to reach the server.
const MAX_BACKOFF: Duration = Duration::from_secs(30);

/// How often the wait for a lease says how long is left.
const SAY_EVERY: Duration = Duration::from_secs(5);

/// Opens the team's store; while a server cannot be reached, tries again with backoff (1 s,
/// doubling up to 30 s, with jitter), saying so each time, instead of exiting.
pub async fn open_store(
    choice: &StoreChoice,
    troupe_dir: &Path,
    team: &str,
) -> Result<SharedStore> {
    let mut pause = Duration::from_secs(1);
    loop {
        let opened = crate::store::open(choice, troupe_dir, team);
        let err = match opened.await {
            Ok(store) => return Ok(store),
            Err(e) => e,
        };
        let unreachable = matches!(choice, StoreChoice::Nats(..))
            && matches!(
                err.downcast_ref::<StoreError>(),
                Some(StoreError::Backend { .. })
            );
        if !unreachable {
            return Err(err).with_context(|| {
                format!("opening team '{team}' ({})", choice.describe(troupe_dir))
            });
        }
        let wait = jitter(pause);
        eprintln!(
            "troupe teammate: cannot reach the team store at {} ({err}); retrying in {} s",
            choice.describe(troupe_dir),
            wait.as_secs_f64().round()
        );
        tokio::time::sleep(wait).await;
        pause = (pause * 2).min(MAX_BACKOFF);
    }
}

/// `pause` give or take a fifth, so teammates started together do not retry in step.
fn jitter(pause: Duration) -> Duration {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    let spread = f64::from(nanos % 1000) / 1000.0 * 0.4 - 0.2;
    pause.mul_f64(1.0 + spread)
}

/// The teammate's lease: the one the lead handed down (`--lease`), else taken now. A live
/// process holding it on this host is refused by name, pid and start time; a holder on
/// another host is waited for until its lease lapses, saying so, unless `--no-wait`.
pub async fn take_lease(store: &SharedStore, team: &str, args: &TeammateArgs) -> Result<Lease> {
    let name = args.name();
    if let Some(handoff) = &args.lease {
        return store
            .adopt_lease(name, handoff)
            .await
            .with_context(|| format!("taking over the lease of teammate '{name}'"));
    }
    let mut said: Option<Instant> = None;
    loop {
        let (holder, place) = match store.acquire_lease(name).await {
            Ok(lease) => return Ok(lease),
            Err(StoreError::LeaseHeld { holder, place, .. }) => (holder, place),
            Err(e) => {
                return Err(e).with_context(|| format!("taking the lease of teammate '{name}'"))
            }
        };
        let elsewhere = holder
            .as_ref()
            .and_then(|h| (!h.is_on_this_host()).then(|| h.host.clone().unwrap_or_default()));
        let Some(host) = elsewhere else {
            if store.probe_lease(name).await?.is_held() {
                bail!(already_running(team, name, holder.as_deref(), &place));
            }
            continue; // let go between the refusal and the look: try again at once
        };
        let lapse = store.lease_lapses_in(name).await?;
        let left = lapse.map_or_else(
            || "to be let go".to_string(),
            |d| format!("to lapse ({} s)", d.as_secs_f64().ceil()),
        );
        if args.no_wait {
            bail!(
                "teammate '{name}' of team '{team}' is held by {} ({place}); waiting for it {left} was not asked for (--no-wait): run again without --no-wait to wait, or stop that process first",
                holder.as_deref().map_or_else(String::new, ToString::to_string),
            );
        }
        if said.is_none_or(|at| at.elapsed() >= SAY_EVERY) {
            eprintln!("waiting for {name}'s lease on host {host} {left}");
            said = Some(Instant::now());
        }
        let lapse = lapse.unwrap_or(SAY_EVERY);
        tokio::time::sleep(lapse.clamp(Duration::from_millis(200), SAY_EVERY)).await;
    }
}

/// The refusal for a live holder on this host.
fn already_running(team: &str, name: &str, holder: Option<&LeaseHolder>, place: &str) -> String {
    let who = holder.map_or_else(|| "it is just starting".to_string(), ToString::to_string);
    format!(
        "teammate '{name}' of team '{team}' is already running ({who}; it holds {place}). Two processes with one name would race on its mail and tasks: stop that one first (`troupe team stop {name}`), or pick another --name"
    )
}
