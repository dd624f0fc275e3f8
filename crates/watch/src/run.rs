//! The dashboard's loop: wait for the team if it does not exist yet, then follow it — each
//! change notification re-reads only the parts it names (the event log from where the last
//! read ended), key presses become commands, and the screen is redrawn at most once a frame.
//! Nothing polls: between changes, keys and the once-a-second clock (ages on screen), the
//! process sleeps.

use std::future::Future;
use std::time::{Duration, Instant};
use troupe_protocol::now_ms;

use crossterm::event::Event as TermEvent;
use futures_util::{FutureExt, Stream, StreamExt};
use ratatui::backend::Backend;
use ratatui::Terminal;
use troupe_store::{Areas, ChangeWatch, EventCursor, SharedStore, StoreError};

use crate::app::{App, Command, Tone};
use crate::history::HISTORY;
use crate::model::Pricing;
use crate::source;
use crate::ui::{self, Colours};

/// The shortest time between two frames: a burst of changes is drawn once per frame.
pub const FRAME: Duration = Duration::from_millis(16);

/// How often leases are asked again: a process that dies drops its lease without any file
/// changing, so this is the one thing the dashboard has to ask for.
const LIVENESS_EVERY: Duration = Duration::from_secs(2);

/// Why the dashboard stopped before the person quit.
#[derive(Debug, thiserror::Error)]
pub enum WatchError {
    /// The team store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The terminal failed (drawing, or reading keys).
    #[error("terminal: {0}")]
    Terminal(#[from] std::io::Error),
}

/// How the dashboard is set up.
#[derive(Debug, Clone)]
pub struct Options {
    /// The team's name.
    pub team: String,
    /// Who the person is in answers and mail (`user:<name>`).
    pub person: String,
    /// Prices tokens per model, for the cost column.
    pub pricing: Option<Pricing>,
    /// Colour or not.
    pub colours: Colours,
    /// Shown while the team does not exist yet: where it is expected.
    pub waiting_note: String,
}

/// Runs the dashboard on `terminal`, reading keys from `keys`, until the person quits (or
/// the key stream ends). `open` yields the team's store; while it is pending the dashboard
/// says it waits for the team.
pub async fn run<B, S, F>(
    terminal: &mut Terminal<B>,
    mut keys: S,
    open: F,
    options: Options,
) -> Result<(), WatchError>
where
    B: Backend<Error = std::io::Error>,
    S: Stream<Item = std::io::Result<TermEvent>> + Unpin,
    F: Future<Output = Result<SharedStore, StoreError>>,
{
    let mut app = App::new(&options.team, now_ms(), options.pricing);
    app.set_colours(options.colours);
    let mut open = std::pin::pin!(open);
    let store = match (&mut open).now_or_never() {
        Some(store) => store?,
        None => {
            app.set_waiting(options.waiting_note.clone());
            terminal.draw(|f| ui::draw(f, &app))?;
            loop {
                tokio::select! {
                    store = &mut open => break store?,
                    key = keys.next() => match key {
                        None => return Ok(()),
                        Some(key) => {
                            if let TermEvent::Key(k) = key? {
                                if app.on_key(k) == Some(Command::Quit) {
                                    return Ok(());
                                }
                            }
                            terminal.draw(|f| ui::draw(f, &app))?;
                        }
                    },
                }
            }
        }
    };
    app.set_live();
    follow(terminal, keys, store, app, &options).await
}

/// The live part of [`run`].
async fn follow<B, S>(
    terminal: &mut Terminal<B>,
    mut keys: S,
    store: SharedStore,
    mut app: App,
    options: &Options,
) -> Result<(), WatchError>
where
    B: Backend<Error = std::io::Error>,
    S: Stream<Item = std::io::Result<TermEvent>> + Unpin,
{
    // Watching starts before the first read, so no change between the two is missed.
    let mut feed: Box<dyn ChangeWatch> = store.watch_changes().await?;
    let (state, recent) = async {
        let s: &dyn troupe_store::TeamStore = &*store;
        Ok::<_, StoreError>((
            source::read_state(s).await?,
            source::recent_events(s, HISTORY).await?,
        ))
    }
    .await?;
    app.apply_state(state);
    let mut cursor: EventCursor = recent.next;
    app.push_events(recent.events, recent.corrupt);
    terminal.draw(|f| ui::draw(f, &app))?;
    let mut last_draw = Instant::now();
    let mut dirty = false;
    let mut clock = tokio::time::interval(Duration::from_secs(1));
    clock.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    clock.tick().await; // the first tick is immediate
    let mut last_probe = Instant::now();
    loop {
        if dirty && last_draw.elapsed() >= FRAME {
            terminal.draw(|f| ui::draw(f, &app))?;
            last_draw = Instant::now();
            dirty = false;
        }
        let next_frame = tokio::time::Instant::from_std(last_draw + FRAME);
        tokio::select! {
            key = keys.next() => {
                let Some(key) = key else { return Ok(()) };
                match key? {
                    TermEvent::Key(k) => {
                        if let Some(command) = app.on_key(k) {
                            if command == Command::Quit {
                                return Ok(());
                            }
                            carry_out(&store, &mut app, command, options).await;
                        }
                    }
                    TermEvent::Resize(..) => terminal.autoresize()?,
                    _ => {}
                }
                dirty = true;
            }
            areas = feed.changed() => {
                cursor = refresh(&store, &mut app, areas, cursor).await?;
                dirty = true;
            }
            _ = clock.tick() => {
                app.tick(now_ms());
                if last_probe.elapsed() >= LIVENESS_EVERY {
                    last_probe = Instant::now();
                    cursor = refresh(&store, &mut app, Areas::LIVENESS, cursor).await?;
                }
                dirty = true;
            }
            () = tokio::time::sleep_until(next_frame), if dirty => {}
        }
    }
}

/// Re-reads what `areas` names; returns where the event log is to be read next.
async fn refresh(
    store: &SharedStore,
    app: &mut App,
    areas: Areas,
    cursor: EventCursor,
) -> Result<EventCursor, StoreError> {
    let transcript_of = if areas.intersects(Areas::TRANSCRIPTS) {
        app.detail_member().map(str::to_string)
    } else {
        None
    };
    let (patch, events, transcript) = async {
        let s: &dyn troupe_store::TeamStore = &**store;
        let patch = source::read_patch(s, areas).await?;
        let events = if areas.intersects(Areas::EVENTS) {
            Some(source::new_events(s, cursor).await?)
        } else {
            None
        };
        let transcript = match transcript_of {
            Some(name) => Some((source::transcript(s, &name).await?, name)),
            None => None,
        };
        Ok::<_, StoreError>((patch, events, transcript))
    }
    .await?;
    app.apply_patch(patch);
    app.tick(now_ms());
    if let Some((lines, name)) = transcript {
        app.set_transcript(&name, lines);
    }
    match events {
        Some(read) => {
            app.push_events(read.events, read.corrupt);
            Ok(read.next)
        }
        None => Ok(cursor),
    }
}

/// Does what a key asked and shows how it went.
async fn carry_out(store: &SharedStore, app: &mut App, command: Command, options: &Options) {
    let person = options.person.clone();
    match command {
        Command::Quit => {}
        Command::Answer {
            id,
            verdict,
            reason,
        } => {
            let outcome = source::answer(&**store, &person, &id, verdict, reason).await;
            report(app, outcome);
        }
        Command::Send { to, text } => {
            let now = now_ms();
            let outcome = source::send(&**store, &person, &to, &text, now).await;
            report(app, outcome);
        }
        Command::Transcript(name) => {
            let read = source::transcript(&**store, &name).await;
            match read {
                Ok(lines) => app.set_transcript(&name, lines),
                Err(e) => app.report(
                    Tone::Refused,
                    format!("could not read {name}'s transcript: {e}"),
                ),
            }
        }
    }
}

fn report(app: &mut App, outcome: Result<String, String>) {
    match outcome {
        Ok(text) => app.report(Tone::Done, text),
        Err(text) => app.report(Tone::Refused, text),
    }
}
