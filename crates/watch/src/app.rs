//! The dashboard's state, pure: updated from store reads ([`App::apply_state`],
//! [`App::push_events`]) and key presses ([`App::on_key`]), drawn by [`crate::ui::draw`]. It
//! never touches the store: what a key asks the team to do comes back as a [`Command`] for
//! the caller to carry out, and its outcome is reported back with [`App::report`].

use troupe_protocol::{Event, TaskId};
use troupe_team::protocols::answer::Verdict;

use crate::colours::Colours;
use crate::history::History;
use crate::model::{self, MemberRow, Pricing, TeamState};

/// The panes that take the focus, in Tab order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Focus {
    /// Members.
    Roster,
    /// Pending requests.
    Requests,
    /// The task board.
    Board,
    /// Messages and protocol events.
    Traffic,
}

impl Focus {
    pub(crate) fn next(self) -> Focus {
        match self {
            Focus::Roster => Focus::Requests,
            Focus::Requests => Focus::Board,
            Focus::Board => Focus::Traffic,
            Focus::Traffic => Focus::Roster,
        }
    }

    pub(crate) fn previous(self) -> Focus {
        match self {
            Focus::Roster => Focus::Traffic,
            Focus::Requests => Focus::Roster,
            Focus::Board => Focus::Requests,
            Focus::Traffic => Focus::Board,
        }
    }
}

/// What a detail view shows.
#[derive(Debug, Clone, PartialEq)]
pub enum Target {
    /// A member: its row, its requests and its recent transcript.
    Member(String),
    /// A request in full (the plan, the tool call).
    Request(String),
    /// A task in full.
    Task(TaskId),
    /// One event with its structured data.
    Event(Box<Event>),
}

/// What the person is typing, and what for.
#[derive(Debug, Clone, PartialEq)]
pub enum Purpose {
    /// A reason for approving or rejecting a request (may be left empty).
    Answer {
        /// The request.
        id: String,
        /// Approve or reject.
        verdict: Verdict,
    },
    /// A message to an agent.
    Message {
        /// The recipient.
        to: String,
    },
}

/// What covers the panes.
#[derive(Debug, Clone, PartialEq)]
pub enum Overlay {
    /// Nothing: the four panes.
    None,
    /// A detail view, scrolled down by `scroll` lines.
    Detail {
        /// What it shows.
        target: Target,
        /// Lines scrolled.
        scroll: u16,
    },
    /// A one-line input.
    Input {
        /// What the text is for.
        purpose: Purpose,
        /// The text so far.
        text: String,
        /// The detail view to return to afterwards, if the input was opened from one.
        back: Option<Box<Overlay>>,
    },
}

/// Something a key asks the caller to do.
#[derive(Debug, Clone, PartialEq)]
pub enum Command {
    /// Leave the dashboard.
    Quit,
    /// Answer a request as the person.
    Answer {
        /// The request.
        id: String,
        /// Approve or reject.
        verdict: Verdict,
        /// Why, if given.
        reason: Option<String>,
    },
    /// Send a message as the person.
    Send {
        /// The recipient.
        to: String,
        /// The text.
        text: String,
    },
    /// Read a member's recent transcript for its detail view.
    Transcript(String),
}

/// How a report reads: done, or refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tone {
    /// It worked.
    Done,
    /// It was refused or failed.
    Refused,
}

/// Where the dashboard is in its life.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Phase {
    /// The team does not exist yet; the note says where it is expected.
    Waiting(String),
    /// Showing a team.
    Live,
}

/// The whole dashboard state.
#[derive(Debug, Clone)]
pub struct App {
    pub(crate) team: String,
    pub(crate) phase: Phase,
    pub(crate) state: TeamState,
    pub(crate) history: History,
    pub(crate) focus: Focus,
    pub(crate) selected: [usize; 3],
    /// Traffic lines scrolled up from the newest; 0 follows the log.
    pub(crate) traffic_scroll: usize,
    pub(crate) overlay: Overlay,
    pub(crate) flash: Option<(Tone, String)>,
    pub(crate) transcript: Option<(String, Vec<String>)>,
    pub(crate) now: u64,
    pub(crate) pricing: Option<Pricing>,
    pub(crate) colours: Colours,
}

impl App {
    /// A dashboard for `team`, showing nothing yet, at time `now` (ms since the epoch).
    pub fn new(team: &str, now: u64, pricing: Option<Pricing>) -> App {
        App::with_history(team, now, pricing, History::default())
    }

    /// Like [`App::new`] with a history of its own bound (tests, benchmarks).
    pub fn with_history(team: &str, now: u64, pricing: Option<Pricing>, history: History) -> App {
        App {
            team: team.to_string(),
            phase: Phase::Live,
            state: TeamState::default(),
            history,
            focus: Focus::Roster,
            selected: [0; 3],
            traffic_scroll: 0,
            overlay: Overlay::None,
            flash: None,
            transcript: None,
            now,
            pricing,
            colours: Colours::On,
        }
    }

    /// Draws with or without colour.
    pub fn set_colours(&mut self, colours: Colours) {
        self.colours = colours;
    }

    /// Shows that the team does not exist yet, and where it is awaited.
    pub fn set_waiting(&mut self, note: String) {
        self.phase = Phase::Waiting(note);
    }

    /// The team exists: show it.
    pub fn set_live(&mut self) {
        self.phase = Phase::Live;
    }

    /// Replaces what is known of the team (from a fresh read of the store).
    pub fn apply_state(&mut self, state: TeamState) {
        self.state = state;
        self.clamp_selection();
    }

    /// Applies fresh reads of the parts of the state that changed.
    pub fn apply_patch(&mut self, patch: crate::source::Patch) {
        patch.apply(&mut self.state);
        self.clamp_selection();
    }

    /// Adds events read from the log, with the count of lines that did not parse.
    pub fn push_events(&mut self, events: Vec<Event>, corrupt: usize) {
        let added = events.len();
        self.history.extend(events, corrupt);
        if self.traffic_scroll > 0 {
            // Keep the lines the person is reading where they are.
            self.traffic_scroll = (self.traffic_scroll + added).min(self.history.len());
        }
    }

    /// The recent transcript lines of a member, for its detail view.
    pub fn set_transcript(&mut self, name: &str, lines: Vec<String>) {
        self.transcript = Some((name.to_string(), lines));
    }

    /// The clock moved on (ages are relative to it).
    pub fn tick(&mut self, now: u64) {
        self.now = now;
    }

    /// Shows the outcome of a command.
    pub fn report(&mut self, tone: Tone, text: String) {
        self.flash = Some((tone, text));
    }

    /// The member whose detail view is open (its transcript is worth re-reading).
    pub fn detail_member(&self) -> Option<&str> {
        match &self.overlay {
            Overlay::Detail {
                target: Target::Member(name),
                ..
            } => Some(name),
            _ => None,
        }
    }

    /// The roster rows as shown.
    pub fn rows(&self) -> Vec<MemberRow> {
        model::member_rows(&self.state, &self.history.last_active, self.pricing)
    }

    /// Events seen so far (kept or not).
    pub fn events_seen(&self) -> u64 {
        self.history.total
    }

    pub(crate) fn len_of(&self, focus: Focus) -> usize {
        match focus {
            Focus::Roster => self.state.roster.members.len() + 1,
            Focus::Requests => model::pending_requests(&self.state).len(),
            Focus::Board => self.state.tasks.len(),
            Focus::Traffic => self.history.len(),
        }
    }

    pub(crate) fn slot(focus: Focus) -> Option<usize> {
        match focus {
            Focus::Roster => Some(0),
            Focus::Requests => Some(1),
            Focus::Board => Some(2),
            Focus::Traffic => None,
        }
    }

    /// The selected row of a pane (its index in the pane's order).
    pub fn selected(&self, focus: Focus) -> usize {
        Self::slot(focus).map_or(0, |i| self.selected[i])
    }

    fn clamp_selection(&mut self) {
        for focus in [Focus::Roster, Focus::Requests, Focus::Board] {
            let len = self.len_of(focus);
            if let Some(i) = Self::slot(focus) {
                self.selected[i] = self.selected[i].min(len.saturating_sub(1));
            }
        }
    }
}

#[cfg(test)]
#[path = "app_tests.rs"]
mod tests;
