//! Key presses: what each key does to the [`App`] in the panes, in a detail view and in the
//! input line, and the [`Command`]s they yield.

use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use troupe_team::protocols::answer::Verdict;

use crate::app::{App, Command, Focus, Overlay, Purpose, Target, Tone};
use crate::model;

impl App {
    fn move_selection(&mut self, down: bool, by: usize) {
        if self.focus == Focus::Traffic {
            self.traffic_scroll = if down {
                self.traffic_scroll.saturating_sub(by)
            } else {
                (self.traffic_scroll + by).min(self.history.len().saturating_sub(1))
            };
            return;
        }
        let len = self.len_of(self.focus);
        if let Some(i) = Self::slot(self.focus) {
            let cur = self.selected[i];
            self.selected[i] = if down {
                (cur + by).min(len.saturating_sub(1))
            } else {
                cur.saturating_sub(by)
            };
        }
    }

    /// The request that `a`/`r` would answer: the one in the open detail view, else the
    /// selected pending one.
    fn answerable(&self) -> Option<String> {
        match &self.overlay {
            Overlay::Detail {
                target: Target::Request(id),
                ..
            } => Some(id.clone()),
            Overlay::Detail { .. } => None,
            _ => model::pending_requests(&self.state)
                .get(self.selected(Focus::Requests))
                .map(|r| r.id.clone()),
        }
    }

    /// Who `m` would write to: the member in the open detail view, else the selected one in
    /// the roster, else the lead.
    fn recipient(&self) -> String {
        if let Some(name) = self.detail_member() {
            return name.to_string();
        }
        if self.focus == Focus::Roster {
            if let Some(row) = self.rows().get(self.selected(Focus::Roster)) {
                return row.name.clone();
            }
        }
        troupe_team::LEAD.to_string()
    }

    /// What Enter opens in the focused pane.
    fn open_selected(&mut self) -> Option<Command> {
        let target = match self.focus {
            Focus::Roster => self
                .rows()
                .get(self.selected(Focus::Roster))
                .map(|r| Target::Member(r.name.clone())),
            Focus::Requests => model::pending_requests(&self.state)
                .get(self.selected(Focus::Requests))
                .map(|r| Target::Request(r.id.clone())),
            Focus::Board => model::board_order(&self.state)
                .get(self.selected(Focus::Board))
                .map(|t| Target::Task(t.id)),
            Focus::Traffic => {
                let len = self.history.len();
                let index = len.checked_sub(1 + self.traffic_scroll)?;
                self.history
                    .get(index)
                    .map(|e| Target::Event(Box::new(e.clone())))
            }
        }?;
        let command = match &target {
            Target::Member(name) => Some(Command::Transcript(name.clone())),
            _ => None,
        };
        self.overlay = Overlay::Detail { target, scroll: 0 };
        command
    }

    /// Handles one key press; returns what the caller should do, if anything.
    pub fn on_key(&mut self, key: KeyEvent) -> Option<Command> {
        if key.kind == KeyEventKind::Release {
            return None;
        }
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        if ctrl && key.code == KeyCode::Char('c') {
            return Some(Command::Quit);
        }
        match self.overlay.clone() {
            Overlay::Input {
                purpose,
                mut text,
                back,
            } => {
                match key.code {
                    KeyCode::Esc => self.overlay = back.map_or(Overlay::None, |b| *b),
                    KeyCode::Enter => {
                        self.overlay = back.map_or(Overlay::None, |b| *b);
                        return self.submit(purpose, text);
                    }
                    KeyCode::Backspace => {
                        text.pop();
                        self.overlay = Overlay::Input {
                            purpose,
                            text,
                            back,
                        };
                    }
                    KeyCode::Char('u') if ctrl => {
                        self.overlay = Overlay::Input {
                            purpose,
                            text: String::new(),
                            back,
                        };
                    }
                    KeyCode::Char(c) if !ctrl => {
                        text.push(c);
                        self.overlay = Overlay::Input {
                            purpose,
                            text,
                            back,
                        };
                    }
                    _ => {}
                }
                None
            }
            Overlay::Detail { target, scroll } => {
                match key.code {
                    KeyCode::Esc | KeyCode::Enter | KeyCode::Char('q') => {
                        self.overlay = Overlay::None;
                        self.transcript = None;
                    }
                    KeyCode::Down | KeyCode::Char('j') => {
                        self.overlay = Overlay::Detail {
                            target,
                            scroll: scroll.saturating_add(1),
                        }
                    }
                    KeyCode::Up | KeyCode::Char('k') => {
                        self.overlay = Overlay::Detail {
                            target,
                            scroll: scroll.saturating_sub(1),
                        }
                    }
                    KeyCode::PageDown => {
                        self.overlay = Overlay::Detail {
                            target,
                            scroll: scroll.saturating_add(10),
                        }
                    }
                    KeyCode::PageUp => {
                        self.overlay = Overlay::Detail {
                            target,
                            scroll: scroll.saturating_sub(10),
                        }
                    }
                    KeyCode::Char('a') => self.ask_reason(Verdict::Approve),
                    KeyCode::Char('r') => self.ask_reason(Verdict::Reject),
                    KeyCode::Char('m') => self.ask_message(),
                    _ => {}
                }
                None
            }
            Overlay::None => self.on_pane_key(key),
        }
    }

    fn on_pane_key(&mut self, key: KeyEvent) -> Option<Command> {
        match key.code {
            KeyCode::Char('q') => return Some(Command::Quit),
            KeyCode::Tab => self.focus = self.focus.next(),
            KeyCode::BackTab => self.focus = self.focus.previous(),
            KeyCode::Char('1') => self.focus = Focus::Roster,
            KeyCode::Char('2') => self.focus = Focus::Requests,
            KeyCode::Char('3') => self.focus = Focus::Board,
            KeyCode::Char('4') => self.focus = Focus::Traffic,
            KeyCode::Down | KeyCode::Char('j') => self.move_selection(true, 1),
            KeyCode::Up | KeyCode::Char('k') => self.move_selection(false, 1),
            KeyCode::PageDown => self.move_selection(true, 10),
            KeyCode::PageUp => self.move_selection(false, 10),
            KeyCode::End | KeyCode::Char('G') if self.focus == Focus::Traffic => {
                self.traffic_scroll = 0;
            }
            KeyCode::Enter => return self.open_selected(),
            KeyCode::Char('a') => self.ask_reason(Verdict::Approve),
            KeyCode::Char('r') => self.ask_reason(Verdict::Reject),
            KeyCode::Char('m') => self.ask_message(),
            KeyCode::Esc => self.flash = None,
            _ => {}
        }
        None
    }

    fn ask_reason(&mut self, verdict: Verdict) {
        match self.answerable() {
            Some(id) => {
                let back = match &self.overlay {
                    Overlay::Detail { .. } => Some(Box::new(self.overlay.clone())),
                    _ => None,
                };
                self.overlay = Overlay::Input {
                    purpose: Purpose::Answer { id, verdict },
                    text: String::new(),
                    back,
                };
            }
            None => self.report(
                Tone::Refused,
                "no pending request selected: pick one in the requests pane (2) first".into(),
            ),
        }
    }

    fn ask_message(&mut self) {
        let back = match &self.overlay {
            Overlay::Detail { .. } => Some(Box::new(self.overlay.clone())),
            _ => None,
        };
        self.overlay = Overlay::Input {
            purpose: Purpose::Message {
                to: self.recipient(),
            },
            text: String::new(),
            back,
        };
    }

    fn submit(&mut self, purpose: Purpose, text: String) -> Option<Command> {
        let text = text.trim().to_string();
        match purpose {
            Purpose::Answer { id, verdict } => {
                // Answered: its detail view would only show it resolved; back to the panes.
                if matches!(&self.overlay, Overlay::Detail { target: Target::Request(r), .. } if *r == id)
                {
                    self.overlay = Overlay::None;
                }
                Some(Command::Answer {
                    id,
                    verdict,
                    reason: (!text.is_empty()).then_some(text),
                })
            }
            Purpose::Message { .. } if text.is_empty() => {
                self.report(Tone::Refused, "empty message not sent".into());
                None
            }
            Purpose::Message { to } => Some(Command::Send { to, text }),
        }
    }
}
