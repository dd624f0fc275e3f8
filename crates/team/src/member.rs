//! One teammate's life: build its agent, work, report to the lead, go idle, wake on mail,
//! until it shuts down or fails.

use crate::error::MemberError;
use crate::extension::TeammateExtension;
use crate::member_front::{MemberFront, MemberWakes, SharedOutcome};
use crate::notice::Notice;
use crate::prompt::teammate_identity;
use crate::protocols::permission::EscalatingApprover;
use crate::shared::TeamShared;
use crate::spec::{MemberSpec, LEAD};
use crate::wake::{SharedWake, WakeListener};
use std::sync::Arc;
use tokio_util::sync::CancellationToken;
use troupe_agent::{Agent, AgentEvent, AgentKind, Place, Role, SessionEndReason};
use troupe_driver::{Driver, Event, Flow, Policy};
use troupe_protocol::{AgentStatus, BackgroundCommand, BackgroundState, EventKind, MailKind};
use troupe_tools::background::Jobs;

/// Model calls one work phase may make before it is cut off (a runaway guard).
const MAX_ROUNDS_PER_PHASE: u32 = 200;

/// Work phases in a row a TeammateIdle hook may add (exit 2) before the teammate goes idle
/// anyway, so a hook that always refuses cannot keep it busy forever.
pub(crate) const MAX_IDLE_REFUSALS: u32 = 5;

/// Runs a member under a supervisor that turns a failure or a panic into `failed` and tells
/// the lead; the runtime spawns this into its task set. The member ends at a round boundary
/// once `cancel` fires.
///
/// The member runs inside this future, its panic caught here, rather than in a task of its
/// own: a second task per member cost its own allocation (a fifth of an idle teammate's
/// futures) and a spawn, and an abort of the team's task set did not reach it.
pub async fn supervise(shared: Arc<TeamShared>, spec: MemberSpec, cancel: CancellationToken) {
    use futures_util::FutureExt;
    let name = spec.name.clone();
    let epoch = spec.epoch;
    let outcome = std::panic::AssertUnwindSafe(run(shared.clone(), spec, cancel))
        .catch_unwind()
        .await;
    let failure = match outcome {
        Ok(Ok(())) => None,
        Ok(Err(e)) => Some(e.to_string()),
        Err(panic) => Some(format!("its task panicked: {}", panic_message(&*panic))),
    };
    if let Some(reason) = failure {
        let (n, r) = (name.clone(), reason);
        fail(&shared, &n, epoch, &r).await;
    }
    shared.forget_running(&name, epoch);
}

/// What a panic said, when it said it as text.
fn panic_message(panic: &(dyn std::any::Any + Send)) -> &str {
    match panic.downcast_ref::<&str>() {
        Some(text) => text,
        None => panic
            .downcast_ref::<String>()
            .map_or("(no message)", String::as_str),
    }
}

/// Marks a member failed and tells the lead; the rest of the team keeps working.
pub async fn fail(shared: &TeamShared, name: &str, epoch: u64, reason: &str) {
    shared
        .record(EventKind::Error, Some(name), reason.to_string())
        .await;
    let superseded = shared
        .store
        .member(name)
        .await
        .ok()
        .flatten()
        .is_some_and(|m| m.epoch != epoch || m.status.is_ended());
    if superseded {
        return; // stopped, shut down or replaced already: nothing to report
    }
    // The mail goes first: whoever sees the member ended must also find the lead's mail.
    let text = format!("teammate '{name}' failed and stopped: {reason}");
    if let Err(e) = shared
        .send(troupe_protocol::Envelope::new(
            MailKind::Message,
            name,
            LEAD,
            text,
            troupe_agent::transcript::now_ms(),
        ))
        .await
    {
        tracing::warn!(error = %e, "could not tell the lead that {name} failed");
    }
    shared
        .set_status(name, epoch, AgentStatus::Failed, reason)
        .await;
}

/// Builds the member's agent — in this process or in its own — from the run's one recipe
/// (`TeamConfig::recipe`: the lead's model, reasoning, client, settings, policy, limit, memory,
/// added directories and shared extensions) with a teammate's role: its identity, its
/// definition's model, stricter mode and tools, the escalating approver, the teammate extension
/// (its mail and protocol tools, gates, prompt sections and mailbox) and its own transcript.
pub async fn build_agent(
    shared: &Arc<TeamShared>,
    spec: &MemberSpec,
) -> Result<Agent, MemberError> {
    // What the store holds first (awaited), then the files the agent is built from, read on
    // the blocking pool.
    let config = &shared.config;
    let transcript =
        troupe_store::file::transcript_path(&config.troupe_dir, &config.team, &spec.name)?;
    // A rejoin on another machine finds its conversation in the store, not in this file.
    let mirror = crate::transcript_cache::prepare(&shared.store, &spec.name, &transcript).await?;
    let extension = TeammateExtension::new(shared.clone(), spec.clone()).await?;
    let (shared, spec) = (shared.clone(), spec.clone());
    let built = tokio::task::spawn_blocking(move || {
        assemble(&shared, &spec, transcript, mirror, extension)
    })
    .await;
    built.map_err(|e| MemberError::Panicked(e.to_string()))?
}

/// The synchronous part of [`build_agent`]: the role, from the definition and the worktree.
fn assemble(
    shared: &Arc<TeamShared>,
    spec: &MemberSpec,
    transcript: std::path::PathBuf,
    mirror: Option<crate::transcript_cache::StoreMirror>,
    mut extension: TeammateExtension,
) -> Result<Agent, MemberError> {
    let config = &shared.config;
    let own = own_worktree(shared, spec)?;
    let root = own
        .as_ref()
        .map_or_else(|| config.workspace.clone(), |(_, dir)| dir.clone());
    let definition = crate::profile::definition(config, &spec.profile)?;
    let mut identity = teammate_identity(&config.team, spec);
    if let Some(d) = definition.filter(|d| !d.prompt.is_empty()) {
        // The definition's body is the teammate's role: it follows who the teammate is.
        identity = format!("{identity}\n\n{}", d.prompt);
    }
    if let Some((record, dir)) = own {
        extension = extension.with_own_worktree(record, dir);
    }
    let approver = EscalatingApprover::new(shared.clone(), &spec.name, spec.epoch);
    let kind = AgentKind::Member {
        group: config.team.clone(),
    };
    let role = Role::new(
        kind,
        spec.name.clone(),
        Place::Root {
            dir: root,
            start: None,
        },
    )
    .identity(identity)
    .model(spec.model.clone())
    .stricter_mode(crate::profile::asked_mode(definition))
    .tool_filter(crate::profile::tool_filter(&spec.profile, definition))
    .approver(Arc::new(approver))
    .max_rounds(Some(MAX_ROUNDS_PER_PHASE))
    .extension(Arc::new(extension))
    .transcript(transcript)
    .transcript_mirror(mirror.map(|m| m.shared()));
    let agent = config.recipe.build(role)?;
    shared
        .protocols
        .register_agent(&spec.name, spec.epoch, agent.stop_flag());
    Ok(agent)
}

/// The teammate's own worktree and the directory its tools work in, when it has one for life.
/// A worktree that has gone missing fails the build: working in the shared tree instead would
/// silently drop the isolation it was spawned with.
fn own_worktree(
    shared: &TeamShared,
    spec: &MemberSpec,
) -> Result<Option<(crate::worktree::WorktreeRecord, std::path::PathBuf)>, MemberError> {
    let Some(name) = &spec.worktree else {
        return Ok(None);
    };
    let config = &shared.config;
    let missing = |reason: String| MemberError::Worktree {
        name: name.clone(),
        reason,
    };
    let index =
        crate::worktree::index::read(&config.troupe_dir).map_err(|e| missing(e.to_string()))?;
    let record = index
        .present(name)
        .cloned()
        .ok_or_else(|| missing("it was removed".to_string()))?;
    let manager = crate::worktree::Worktrees::new(
        &config.workspace,
        &config.troupe_dir,
        shared.store.as_ref(),
    );
    let dir = manager
        .tools_dir(&record)
        .map_err(|e| missing(e.to_string()))?;
    if !dir.is_dir() {
        return Err(missing(format!("{} does not exist", dir.display())));
    }
    Ok(Some((record, dir)))
}

/// How a member's loop ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    /// This process is exiting (`stop_all`): not a shutdown, the member stays on the roster
    /// idle and `--continue` respawns it.
    ProcessExit,
    /// It approved a shutdown request and finished its round.
    Shutdown,
    /// It was force-stopped or replaced by a newer incarnation.
    Stopped,
}

/// The member's session until it ends. Returns `Err` with a reason when it fails.
pub async fn run(
    shared: Arc<TeamShared>,
    spec: MemberSpec,
    cancel: CancellationToken,
) -> Result<(), MemberError> {
    // Listen before anything else, so no wake sent after this point is missed.
    let wake: SharedWake = Arc::new(tokio::sync::Mutex::new(
        WakeListener::bind(&shared.store, &spec.name).await?,
    ));
    shared.register_wake(&spec.name, wake.clone());
    let result = phases(&shared, &spec, &cancel, &wake).await;
    shared.forget_wake(&spec.name);
    result
}

async fn phases(
    shared: &Arc<TeamShared>,
    spec: &MemberSpec,
    cancel: &CancellationToken,
    wake: &SharedWake,
) -> Result<(), MemberError> {
    let mut agent = build_agent(shared, spec).await?;
    let name = spec.name.clone();
    let jobs = agent.background().cloned();
    // Keeps the roster's view of its background commands current while it works or idles.
    let publisher = jobs
        .clone()
        .map(|jobs| tokio::spawn(publish_background(shared.clone(), name.clone(), jobs)));
    let result = phases_of(shared, spec, cancel, wake, &mut agent, jobs.as_ref()).await;
    if let Some(publisher) = publisher {
        publisher.abort();
    }
    result
}

/// The member's session with its agent built, on the session driver: the first work phase,
/// then idle until mail, a task it claims or a stop wakes it; see [`phases`].
async fn phases_of(
    shared: &Arc<TeamShared>,
    spec: &MemberSpec,
    cancel: &CancellationToken,
    wake: &SharedWake,
    agent: &mut Agent,
    jobs: Option<&Jobs>,
) -> Result<(), MemberError> {
    let outcome = SharedOutcome::default();
    let wakes = MemberWakes {
        shared,
        spec,
        cancel,
        wake,
        stop_flag: agent.stop_flag(),
        outcome: outcome.clone(),
    };
    let mut front = MemberFront {
        shared,
        spec,
        cancel,
        outcome: outcome.clone(),
        idle_refusals: 0,
    };
    let first = match spec.prompt.clone() {
        Some(prompt) => Flow::Prompt(prompt.into()),
        None => Flow::Retry,
    };
    let policy = Policy {
        settle: None,
        who: spec.name.clone(),
        agent: spec.name.clone(),
    };
    let (sh, name) = (shared.clone(), spec.name.clone());
    let mut sink = move |event: Event<'_>| match event {
        Event::Agent(AgentEvent::ToolStarted {
            name: tool, input, ..
        }) => {
            let summary = crate::tools::summarize(tool, input);
            sh.set_doing(&name, Some(format!("{tool}: {summary}")));
            sh.record_tool_call(&name, tool, &summary);
            sh.notice(Notice::Tool {
                agent: name.clone(),
                tool: tool.to_string(),
                summary,
            });
        }
        Event::Error(why) => tracing::warn!(member = %name, error = why, "between turns"),
        _ => {}
    };
    Box::pin(Driver::new(agent, Box::new(wakes), policy).run(first, &mut front, &mut sink)).await;
    let (ending, error) = {
        let mut o = outcome
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        (o.ending.take(), o.error.take())
    };
    if let Some(error) = error {
        return Err(error);
    }
    let ending = ending.unwrap_or(match cancel.is_cancelled() {
        true => Ending::ProcessExit,
        false => Ending::Stopped,
    });
    // Its background commands end with it.
    if let Some(jobs) = jobs {
        jobs.kill_all().await;
    }
    Box::pin(agent.end_session(SessionEndReason::Other)).await;
    let status = match ending {
        Ending::ProcessExit => AgentStatus::Idle,
        Ending::Shutdown => AgentStatus::Shutdown,
        Ending::Stopped => AgentStatus::Stopped,
    };
    shared.set_background(&spec.name, Vec::new()).await;
    shared.set_status(&spec.name, spec.epoch, status, "").await;
    Ok(())
}

/// A member's outstanding background commands as the roster records them.
pub fn roster_background(jobs: &Jobs) -> Vec<BackgroundCommand> {
    jobs.outstanding()
        .into_iter()
        .map(|job| BackgroundCommand {
            state: match job.status.is_running() {
                true => BackgroundState::Running,
                false => BackgroundState::Finished,
            },
            id: job.id,
            command: job.command,
            started_ms: job.started_ms,
        })
        .collect()
}

/// Writes the member's background commands to the roster whenever they change, until aborted.
async fn publish_background(shared: Arc<TeamShared>, name: String, jobs: Jobs) {
    let mut changes = jobs.subscribe();
    loop {
        let now = roster_background(&jobs);
        let n = name.clone();
        shared.set_background(&n, now).await;
        if changes.changed().await.is_err() {
            return;
        }
    }
}
