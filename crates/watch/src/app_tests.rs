//! Key handling: what each key does to the state and which commands it yields.

use super::*;
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use serde_json::json;
use troupe_protocol::{AgentStatus, EventKind, Member, Request, RequestKind, Roster};

fn key(code: KeyCode) -> KeyEvent {
    KeyEvent::new(code, KeyModifiers::NONE)
}

fn typed(app: &mut App, text: &str) {
    for c in text.chars() {
        assert_eq!(app.on_key(key(KeyCode::Char(c))), None);
    }
}

fn app_with_two_requests() -> (App, Request, Request) {
    let mut roster = Roster::new("t", "lead");
    for name in ["ann", "bob"] {
        let mut m = Member::new(name, "dev", 1, 1_000);
        m.status = AgentStatus::Idle;
        roster.members.push(m);
    }
    let older = Request::open(
        RequestKind::Plan,
        "bob",
        "lead",
        0,
        json!({"plan": "p"}),
        10,
        None,
    );
    let newer = Request::open(
        RequestKind::Permission,
        "ann",
        "lead",
        0,
        json!({"summary": "bash rm x"}),
        20,
        None,
    );
    let mut app = App::new("t", 100_000, None);
    app.apply_state(TeamState {
        roster,
        alive: ["lead", "ann", "bob"]
            .iter()
            .map(|s| s.to_string())
            .collect(),
        requests: vec![newer.clone(), older.clone()],
        ..TeamState::default()
    });
    (app, older, newer)
}

#[test]
fn approving_the_selected_request_asks_for_a_reason_then_yields_the_answer() {
    let (mut app, older, newer) = app_with_two_requests();
    assert_eq!(app.on_key(key(KeyCode::Char('2'))), None);
    assert_eq!(app.focus, Focus::Requests);
    // Oldest first: the plan is selected; Down moves to the permission request.
    assert_eq!(app.on_key(key(KeyCode::Down)), None);
    assert_eq!(app.on_key(key(KeyCode::Char('r'))), None);
    assert!(matches!(app.overlay, Overlay::Input { .. }));
    typed(&mut app, "not that file");
    assert_eq!(
        app.on_key(key(KeyCode::Enter)),
        Some(Command::Answer {
            id: newer.id.clone(),
            verdict: Verdict::Reject,
            reason: Some("not that file".into()),
        })
    );
    assert_eq!(app.overlay, Overlay::None);
    // From the detail view of the plan, with no reason.
    assert_eq!(app.on_key(key(KeyCode::Up)), None);
    assert_eq!(app.on_key(key(KeyCode::Enter)), None);
    assert_eq!(
        app.overlay,
        Overlay::Detail {
            target: Target::Request(older.id.clone()),
            scroll: 0
        }
    );
    assert_eq!(app.on_key(key(KeyCode::Char('a'))), None);
    assert_eq!(
        app.on_key(key(KeyCode::Enter)),
        Some(Command::Answer {
            id: older.id.clone(),
            verdict: Verdict::Approve,
            reason: None,
        })
    );
    assert_eq!(
        app.overlay,
        Overlay::None,
        "an answered request's view closes"
    );
}

#[test]
fn escape_cancels_and_q_quits_only_outside_inputs() {
    let (mut app, _, _) = app_with_two_requests();
    app.on_key(key(KeyCode::Char('2')));
    app.on_key(key(KeyCode::Char('a')));
    typed(&mut app, "q");
    assert_eq!(app.on_key(key(KeyCode::Esc)), None);
    assert_eq!(app.overlay, Overlay::None);
    assert_eq!(app.on_key(key(KeyCode::Char('q'))), Some(Command::Quit));
    let ctrl_c = KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL);
    app.on_key(key(KeyCode::Char('m')));
    assert_eq!(app.on_key(ctrl_c), Some(Command::Quit));
}

#[test]
fn answering_with_nothing_pending_says_so() {
    let mut app = App::new("t", 0, None);
    assert_eq!(app.on_key(key(KeyCode::Char('a'))), None);
    assert_eq!(app.overlay, Overlay::None);
    assert!(matches!(&app.flash, Some((Tone::Refused, t)) if t.contains("no pending request")));
}

#[test]
fn a_member_opens_with_its_transcript_and_can_be_messaged() {
    let (mut app, _, _) = app_with_two_requests();
    app.on_key(key(KeyCode::Down)); // lead -> ann
    assert_eq!(
        app.on_key(key(KeyCode::Enter)),
        Some(Command::Transcript("ann".into()))
    );
    assert_eq!(app.detail_member(), Some("ann"));
    app.on_key(key(KeyCode::Char('m')));
    typed(&mut app, "  please rebase ");
    assert_eq!(
        app.on_key(key(KeyCode::Enter)),
        Some(Command::Send {
            to: "ann".into(),
            text: "please rebase".into()
        })
    );
    assert_eq!(
        app.detail_member(),
        Some("ann"),
        "back to the member's view"
    );
    app.on_key(key(KeyCode::Esc));
    app.on_key(key(KeyCode::Char('m')));
    assert_eq!(
        app.on_key(key(KeyCode::Enter)),
        None,
        "an empty message is not sent"
    );
}

#[test]
fn traffic_follows_unless_scrolled_up() {
    let mut app = App::new("t", 0, None);
    let ev = |i: u64| Event::new(EventKind::MessageSent, Some("ann"), format!("e{i}"), i);
    app.push_events((0..5).map(ev).collect(), 0);
    app.on_key(key(KeyCode::Char('4')));
    app.on_key(key(KeyCode::Up));
    app.on_key(key(KeyCode::Up));
    assert_eq!(app.traffic_scroll, 2);
    app.push_events(vec![ev(5)], 0);
    assert_eq!(app.traffic_scroll, 3, "the lines being read stay in place");
    assert_eq!(app.on_key(key(KeyCode::Enter)), None);
    assert!(
        matches!(&app.overlay, Overlay::Detail { target: Target::Event(e), .. } if e.detail == "e2")
    );
    app.on_key(key(KeyCode::Esc));
    app.on_key(key(KeyCode::End));
    assert_eq!(app.traffic_scroll, 0);
}
