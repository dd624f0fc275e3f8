//! The dashboard drawn from fixed team states into ratatui's `TestBackend` and compared as
//! text snapshots (insta): the overview, a plan in full, the answer prompt, a member with its
//! transcript, the traffic scrolled, the wait for a missing team, and a small terminal.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code may panic on a broken fixture

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::backend::TestBackend;
use ratatui::Terminal;
use serde_json::json;
use troupe_protocol::{
    AgentStatus, Event, EventKind, Member, Request, RequestKind, Roster, Task, TaskStatus, Usage,
};
use troupe_watch::history::History;
use troupe_watch::{draw, App, Command, TeamState};

/// "Now" in every snapshot: 12:00:00 UTC on some day.
const NOW: u64 = 1_750_000_000_000 - 1_750_000_000_000 % 86_400_000 + 12 * 3_600_000;

fn ago(secs: u64) -> u64 {
    NOW - secs * 1000
}

fn price(model: &str, usage: &Usage) -> Option<f64> {
    model
        .contains("sonnet")
        .then(|| (usage.input_tokens as f64 * 3.0 + usage.output_tokens as f64 * 15.0) / 1e6)
}

fn member(name: &str, role: &str, status: AgentStatus, seen: u64) -> Member {
    let mut m = Member::new(name, role, 1, ago(seen));
    m.status = status;
    m
}

fn request(
    kind: RequestKind,
    from: &str,
    to: &str,
    payload: serde_json::Value,
    age: u64,
    id: &str,
) -> Request {
    let mut r = Request::open(kind, from, to, 1, payload, ago(age), Some(30 * 60 * 1000));
    r.id = id.to_string();
    r
}

fn task(
    id: u64,
    subject: &str,
    status: TaskStatus,
    owner: Option<&str>,
    blocked_by: &[u64],
) -> Task {
    Task {
        id,
        subject: subject.into(),
        description: format!("Do {subject} carefully."),
        status,
        owner: owner.map(str::to_string),
        blocked_by: blocked_by.to_vec(),
        worktree: None,
        result: None,
        created_by: "lead".into(),
        created_at: ago(600),
        updated_at: ago(60),
        history: Vec::new(),
    }
}

/// A team mid-work: alice runs tests, bob waits for his plan, carol waits for a permission,
/// dave failed, erin's process is gone; three requests pending, a board of four.
fn team() -> TeamState {
    let mut roster = Roster::new("demo", "lead");
    let mut alice = member("alice", "coder", AgentStatus::Working, 3);
    alice.model = Some("claude-sonnet-4-5".into());
    alice.usage = Usage {
        input_tokens: 120_000,
        output_tokens: 8_500,
        ..Usage::default()
    };
    alice.worktree = Some("alice".into());
    let mut bob = member("bob", "planner", AgentStatus::Idle, 95);
    bob.require_plan = true;
    bob.usage.input_tokens = 4_200;
    let carol = member("carol", "tester", AgentStatus::Working, 40);
    let dave = member("dave", "docs", AgentStatus::Failed, 900);
    let erin = member("erin", "ops", AgentStatus::Working, 7_200);
    roster.members = vec![alice, bob, carol, dave, erin];
    TeamState {
        roster,
        doing: [
            ("lead", "review_plan"),
            ("alice", "bash(cargo test -p parser)"),
            ("carol", "write_file(tests/parse.rs)"),
            // Not shown: erin's process is gone.
            ("erin", "bash(sleep 1000)"),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect(),
        alive: ["lead", "alice", "bob", "carol"]
            .iter()
            .map(|s| s.to_string())
            .collect(),
        requests: vec![
            request(
                RequestKind::Plan,
                "bob",
                "lead",
                json!({"plan": "1. Split parser.rs into lexer.rs and grammar.rs.\n2. Keep the public API.\n3. Run cargo test."}),
                90,
                "01JPLAN0000000000000BOB001",
            ),
            request(
                RequestKind::Permission,
                "carol",
                "lead",
                json!({"tool": "write_file", "summary": "write_file(tests/parse.rs)", "input": {"path": "tests/parse.rs", "content": "#[test]\nfn parses() {}\n"}, "reason": "edits ask in default mode"}),
                35,
                "01JPERM000000000000CAROL02",
            ),
            request(
                RequestKind::Shutdown,
                "lead",
                "dave",
                json!({"reason": "docs are done"}),
                20,
                "01JSHUT0000000000000DAVE03",
            ),
        ],
        tasks: vec![
            task(
                1,
                "design the grammar",
                TaskStatus::Completed,
                Some("bob"),
                &[],
            ),
            task(
                2,
                "write the parser",
                TaskStatus::InProgress,
                Some("alice"),
                &[1],
            ),
            task(3, "test the parser", TaskStatus::Pending, None, &[2]),
            task(4, "update the README", TaskStatus::Pending, None, &[]),
        ],
        corrupt_tasks: 0,
    }
}

fn events() -> Vec<Event> {
    let e = |secs: u64, agent: &str, kind: EventKind, detail: &str| {
        Event::new(kind, Some(agent), detail, ago(secs))
    };
    vec![
        e(
            600,
            "lead",
            EventKind::MemberSpawned,
            "alice (coder), epoch 1",
        ),
        e(
            598,
            "lead",
            EventKind::MemberSpawned,
            "bob (planner), epoch 1",
        ),
        e(300, "alice", EventKind::StatusChanged, "working"),
        e(
            95,
            "bob",
            EventKind::RequestOpened,
            "plan request 01JPLAN0000000000000BOB001 (bob -> lead): pending by bob",
        ),
        e(
            95,
            "bob",
            EventKind::MessageSent,
            "plan_approval_request → lead: bob submits a plan for your approval",
        ),
        e(94, "bob", EventKind::StatusChanged, "idle: plan submitted"),
        e(
            35,
            "carol",
            EventKind::RequestOpened,
            "permission request 01JPERM000000000000CAROL02 (carol -> lead): pending by carol",
        ),
        e(
            20,
            "lead",
            EventKind::MessageSent,
            "shutdown_request → dave: lead asks you to shut down",
        ),
        e(
            12,
            "alice",
            EventKind::MessageSent,
            "message → bob: the lexer is in, look at tokens.rs",
        ),
        e(
            3,
            "alice",
            EventKind::ToolCalled,
            "bash(cargo test -p parser)",
        ),
    ]
}

fn app() -> App {
    let mut app = App::new("demo", NOW, Some(price));
    app.apply_state(team());
    app.push_events(events(), 1);
    app
}

fn screen(app: &App, width: u16, height: u16) -> String {
    let mut terminal = Terminal::new(TestBackend::new(width, height)).unwrap();
    terminal.draw(|f| draw(f, app)).unwrap();
    terminal.backend().to_string()
}

fn press(app: &mut App, code: KeyCode) -> Option<Command> {
    app.on_key(KeyEvent::new(code, KeyModifiers::NONE))
}

#[test]
fn overview() {
    insta::assert_snapshot!(screen(&app(), 140, 40));
}

#[test]
fn a_plan_in_full() {
    let mut app = app();
    press(&mut app, KeyCode::Char('2'));
    assert_eq!(press(&mut app, KeyCode::Enter), None);
    insta::assert_snapshot!(screen(&app, 120, 32));
}

#[test]
fn a_permission_request_in_full() {
    let mut app = app();
    press(&mut app, KeyCode::Char('2'));
    press(&mut app, KeyCode::Down);
    press(&mut app, KeyCode::Enter);
    insta::assert_snapshot!(screen(&app, 120, 32));
}

#[test]
fn the_answer_prompt() {
    let mut app = app();
    press(&mut app, KeyCode::Char('2'));
    press(&mut app, KeyCode::Char('r'));
    for c in "keep the public API".chars() {
        press(&mut app, KeyCode::Char(c));
    }
    insta::assert_snapshot!(screen(&app, 120, 32));
}

#[test]
fn a_member_with_its_transcript() {
    let mut app = app();
    press(&mut app, KeyCode::Down);
    assert_eq!(
        press(&mut app, KeyCode::Enter),
        Some(Command::Transcript("alice".into()))
    );
    let entries = vec![
        json!({"type": "meta", "id": "x", "agent": "alice", "cwd": "/w", "ts": 1}),
        json!({"type": "message", "ts": 2, "message": {"role": "user", "content": [{"type": "text", "text": "Write the parser."}]}}),
        json!({"type": "message", "ts": 3, "message": {"role": "assistant", "content": [
            {"type": "text", "text": "I will start with the lexer."},
            {"type": "tool_use", "id": "t1", "name": "bash", "input": {"command": "cargo test -p parser"}}]}}),
        json!({"type": "message", "ts": 4, "message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t1", "content": "error[E0425]: cannot find value `tok`\n...", "is_error": true}]}}),
    ];
    let lines = troupe_watch::panes::detail::transcript_lines(&entries, 60);
    app.set_transcript("alice", lines);
    insta::assert_snapshot!(screen(&app, 120, 32));
}

#[test]
fn traffic_scrolled_up_with_a_corrupt_line_counted() {
    let mut app = app();
    press(&mut app, KeyCode::Char('4'));
    press(&mut app, KeyCode::Up);
    press(&mut app, KeyCode::Up);
    insta::assert_snapshot!(screen(&app, 120, 36));
}

#[test]
fn waiting_for_a_team_that_does_not_exist() {
    let mut app = App::new("nightly", NOW, None);
    app.set_waiting("There is no team 'nightly' in /work/repo/.troupe yet.".into());
    insta::assert_snapshot!(screen(&app, 100, 16));
}

#[test]
fn a_small_terminal_still_draws_every_pane() {
    let text = screen(&app(), 80, 24);
    for pane in ["1 Roster", "2 Requests", "3 Board", "4 Traffic"] {
        assert!(text.contains(pane), "{pane} missing:\n{text}");
    }
    // Tiny terminals do not panic either.
    let _ = screen(&app(), 20, 6);
}

#[test]
fn control_sequences_in_team_text_are_drawn_as_escapes() {
    let mut state = team();
    state.roster.members[0].role = "\u{1b}]52;c;ZXZpbA==\u{7}coder".into();
    let mut app = App::new("demo", NOW, None);
    app.apply_state(state);
    app.push_events(
        vec![Event::new(
            EventKind::MessageSent,
            Some("alice"),
            "message → bob: hi\u{1b}[2J",
            NOW,
        )],
        0,
    );
    let text = screen(&app, 140, 40);
    assert!(!text.contains('\u{1b}'), "{text}");
    assert!(text.contains("\\x1b]52;c;"), "{text}");
}

#[test]
fn the_history_stays_bounded() {
    let mut app = App::with_history("demo", NOW, None, History::with_capacity(50));
    for batch in 0..20u64 {
        let events = (0..100)
            .map(|i| {
                Event::new(
                    EventKind::MessageSent,
                    Some("a"),
                    format!("{batch}-{i}"),
                    NOW,
                )
            })
            .collect();
        app.push_events(events, 0);
    }
    assert_eq!(app.events_seen(), 2_000);
    let text = screen(&app, 100, 30);
    assert!(text.contains("19-99"), "{text}");
}
