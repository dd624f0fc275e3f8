//! The REPL in a real pseudo-terminal, typed at as a person would — whole lines sent in one
//! write, keys typed while the agent is busy, mail arriving mid-line — with every wait on what
//! the emulated screen shows (or what the fake model received), bounded and generous.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code may panic on a broken fixture

mod common;
mod pty_support;
mod repl_support;

use common::subcommand;
use pty_support::Pty;
use repl_support::{leave, prompt_row, repl_in_pty, user_text, wait_requests, LIMIT};
use serde_json::json;
use std::time::Duration;
use troupe_testkit::{FakeServer, Step, TempWorkspace};

#[test]
fn a_line_sent_in_one_write_is_submitted_at_once() {
    let ws = TempWorkspace::new();
    let server = common::lead_server([Step::text("first answer"), Step::text("second answer")]);
    let mut pty = repl_in_pty(ws.path(), &server, &[], &[]);
    // A paste with its Enter: one write, no further key.
    pty.send("hello there, model\r");
    let screen = pty.wait_for_text("first answer", LIMIT);
    assert!(screen.contains("> hello there, model"), "{screen}");
    assert_eq!(user_text(&server, 0), "hello there, model");
    pty.wait_for("the next prompt", LIMIT, |s| {
        prompt_row(s).as_deref() == Some(">") && s.contains("first answer")
    });
    pty.send("and again\r");
    pty.wait_for_text("second answer", LIMIT);
    assert_eq!(user_text(&server, 1), "and again");
    leave(pty);
}

#[test]
fn type_ahead_while_the_agent_is_busy_is_submitted_next() {
    let ws = TempWorkspace::new();
    let server = FakeServer::start();
    server.script(
        "lead",
        [
            Step::delay(Duration::from_secs(3), Step::text("slow answer")),
            Step::text("answer to the queued line"),
        ],
    );
    let mut pty = repl_in_pty(ws.path(), &server, &[], &[]);
    pty.send("think slowly\r");
    wait_requests(&server, 1);
    // The model is thinking: this line is typed ahead, Enter and all.
    pty.send("queued line\r");
    let screen = pty.wait_for_text("answer to the queued line", LIMIT);
    assert!(screen.contains("slow answer"), "{screen}");
    assert!(screen.contains("> queued line"), "{screen}");
    assert_eq!(user_text(&server, 1), "queued line");
    leave(pty);
}

#[test]
fn ctrl_u_clears_the_line_and_history_recalls_it() {
    let ws = TempWorkspace::new();
    let server = FakeServer::start();
    server.script("lead", [Step::text("got it"), Step::text("again")]);
    let mut pty = repl_in_pty(ws.path(), &server, &[], &[]);
    pty.send("garbage to throw away");
    pty.wait_for("the typed text", LIMIT, |s| {
        prompt_row(s).as_deref() == Some("> garbage to throw away")
    });
    pty.send("\u{15}");
    pty.wait_for("an empty prompt", LIMIT, |s| {
        prompt_row(s).as_deref() == Some(">")
    });
    // Ctrl-U never submits.
    assert!(server.requests_for("lead").is_empty());
    pty.send("the real 日本 line\u{1b}[D\u{1b}[D\u{7f}X\r");
    pty.wait_for_text("got it", LIMIT);
    assert_eq!(user_text(&server, 0), "the real 日本 lXne");
    // Up recalls it; Enter sends it again.
    pty.wait_for("the next prompt", LIMIT, |s| {
        prompt_row(s).as_deref() == Some(">")
    });
    pty.send("\u{1b}[A");
    pty.wait_for("the recalled line", LIMIT, |s| {
        prompt_row(s).as_deref() == Some("> the real 日本 lXne")
    });
    pty.send("\r");
    pty.wait_for_text("again", LIMIT);
    assert_eq!(user_text(&server, 1), "the real 日本 lXne");
    leave(pty);
    let history = std::fs::read_to_string(ws.path().join(".troupe/history")).unwrap();
    assert!(history.contains("the real 日本 lXne"), "{history}");
}

#[test]
fn mail_printed_while_typing_keeps_the_typed_text() {
    let ws = TempWorkspace::new();
    let server = FakeServer::start();
    server.set_fallback(|_| Step::text("noted the mail"));
    let mut pty = repl_in_pty(ws.path(), &server, &[], &[]);
    pty.send("half typed");
    pty.wait_for("the typed text", LIMIT, |s| {
        prompt_row(s).as_deref() == Some("> half typed")
    });
    let sent = subcommand(ws.path(), &["team", "send", "lead", "hello from outside"]);
    assert!(sent.status.success(), "{}", common::stderr(&sent));
    let screen = pty.wait_for_text("noted the mail", LIMIT);
    assert!(screen.contains("→ lead: hello from outside"), "{screen}");
    assert!(!screen.contains("<inbox>"), "{screen}");
    pty.wait_for("the typed text kept below the mail", LIMIT, |s| {
        prompt_row(s).as_deref() == Some("> half typed") && s.contains("noted the mail")
    });
    pty.send(" and finished\r");
    wait_requests(&server, 2);
    assert_eq!(user_text(&server, 1), "half typed and finished");
    leave(pty);
}

#[test]
fn a_bracketed_paste_is_one_multi_line_prompt() {
    let ws = TempWorkspace::new();
    let server = FakeServer::start();
    server.script("lead", [Step::text("read both lines")]);
    let mut pty = repl_in_pty(ws.path(), &server, &[], &[]);
    pty.send("\u{1b}[200~first line\r\nsecond line\u{1b}[201~");
    pty.wait_for("the pasted text", LIMIT, |s| {
        prompt_row(s).as_deref() == Some("> first line↵second line")
    });
    assert!(
        server.requests_for("lead").is_empty(),
        "a paste is not sent"
    );
    pty.send("\r");
    pty.wait_for_text("read both lines", LIMIT);
    assert_eq!(user_text(&server, 0), "first line\nsecond line");
    leave(pty);
}

/// A REPL whose first turn waits 30 s for the model, interrupted by `key` once the request is
/// out, with its prompt back; the model's next answer is "still here".
fn interrupted_by(key: &str) -> (TempWorkspace, FakeServer, Pty) {
    let ws = TempWorkspace::new();
    let server = common::lead_server([
        Step::delay(Duration::from_secs(30), Step::text("too late")),
        Step::text("still here"),
    ]);
    let mut pty = repl_in_pty(ws.path(), &server, &[], &[]);
    pty.send("take your time\r");
    wait_requests(&server, 1);
    pty.send(key);
    pty.wait_for_text("(interrupted)", LIMIT);
    pty.wait_for("the prompt back", LIMIT, |s| {
        prompt_row(s).as_deref() == Some(">")
    });
    (ws, server, pty)
}

#[test]
fn ctrl_c_interrupts_a_running_turn_and_the_session_stays() {
    let (_ws, server, mut pty) = interrupted_by("\u{3}");
    pty.send("are you there\r");
    pty.wait_for_text("still here", LIMIT);
    // The interrupted prompt stays in the conversation; the new one follows it.
    assert!(user_text(&server, 1).ends_with("are you there"));
    leave(pty);
}

#[test]
fn a_retry_is_one_quiet_line_and_its_log_goes_to_the_log_file() {
    let ws = TempWorkspace::new();
    let server = common::lead_server([
        Step::fault(troupe_testkit::Fault::Overloaded),
        Step::text("answered after a retry"),
    ]);
    let mut pty = repl_in_pty(ws.path(), &server, &[], &[]);
    pty.send("hello\r");
    let screen = pty.wait_for_text("answered after a retry", LIMIT);
    assert!(screen.contains("… model call failed ("), "{screen}");
    assert!(
        !screen.contains("WARN"),
        "no log line in the REPL: {screen}"
    );
    leave(pty);
    let log = std::fs::read_to_string(ws.path().join(".troupe/logs/troupe.log")).unwrap();
    assert!(log.contains("model call failed; retrying"), "{log}");
}

#[test]
fn esc_interrupts_a_running_turn_and_esc_esc_clears_the_line() {
    let (_ws, server, mut pty) = interrupted_by("\u{1b}");
    pty.send("never sent");
    pty.wait_for("the typed text", LIMIT, |s| {
        prompt_row(s).as_deref() == Some("> never sent")
    });
    // Two separate presses (a lone Esc is told apart from a key sequence by a pause).
    pty.send("\u{1b}");
    std::thread::sleep(Duration::from_millis(100));
    pty.send("\u{1b}");
    pty.wait_for("an empty prompt", LIMIT, |s| {
        prompt_row(s).as_deref() == Some(">")
    });
    pty.send("are you there\r");
    pty.wait_for_text("still here", LIMIT);
    assert!(user_text(&server, 1).ends_with("are you there"));
    leave(pty);
}

#[test]
fn shift_tab_cycles_the_permission_mode() {
    let ws = TempWorkspace::new();
    let server = common::lead_server([
        Step::tool(
            "write_file",
            serde_json::json!({"path": "notes.txt", "content": "written"}),
        ),
        Step::text("wrote it"),
    ]);
    let mut pty = repl_in_pty(ws.path(), &server, &[], &[]);
    // The footer under the prompt always shows the mode and the team.
    pty.wait_for_text("⏵ default mode (shift+tab to cycle) · team default", LIMIT);
    pty.send("\u{1b}[Z");
    pty.wait_for_text("permission mode acceptEdits", LIMIT);
    pty.wait_for_text("⏵⏵ accept edits on (shift+tab to cycle)", LIMIT);
    // acceptEdits: the edit runs without a question.
    pty.send("write the notes\r");
    let screen = pty.wait_for_text("wrote it", LIMIT);
    assert!(!screen.contains("Allow write_file"), "{screen}");
    assert_eq!(ws.read("notes.txt"), "written");
    pty.send("\u{1b}[Z");
    pty.wait_for_text("permission mode plan", LIMIT);
    pty.wait_for_text("⏸ plan mode on", LIMIT);
    pty.send("\u{1b}[Z");
    pty.wait_for_text("permission mode default", LIMIT);
    leave(pty);
}

/// The screen from the last row starting with `from` on, without the status line (its
/// spinner frame and clock change from run to run), the footer and trailing blanks: what a
/// snapshot holds.
fn screen_from(screen: &str, from: &str) -> String {
    let lines: Vec<&str> = screen.lines().collect();
    let start = lines.iter().rposition(|l| l.starts_with(from)).unwrap_or(0);
    let spinner = |l: &str| l.starts_with(|c| ('\u{2800}'..='\u{28ff}').contains(&c));
    // The footer (mode and team) is redrawn with the prompt: whether it is there yet when the
    // screen is read is timing, not behaviour (`shift_tab_cycles_the_permission_mode` checks it).
    let footer = |l: &str| l.starts_with("⏵ ") || l.starts_with("⏵⏵ ") || l.starts_with("⏸ ");
    let kept: Vec<&str> = lines[start..]
        .iter()
        .map(|l| l.trim_end())
        .filter(|l| !spinner(l) && !footer(l))
        .collect();
    kept.join("\n").trim_end().to_string()
}

/// Waits until a question's whole menu shows with `row` highlighted.
fn wait_menu(pty: &Pty, row: &str) -> String {
    pty.wait_for(&format!("the menu at {row:?}"), LIMIT, |s| {
        s.lines().any(|l| l.trim_end() == row) && s.trim_end().ends_with("(esc)")
    })
}

#[test]
fn a_permission_menu_answers_by_number_and_a_refusal_says_what_to_do_instead() {
    let ws = TempWorkspace::new();
    let server = common::lead_server([
        Step::tool("bash", json!({"command": "touch one.txt"})),
        Step::tool("bash", json!({"command": "rm -r src"})),
        Step::text("understood"),
    ]);
    let mut pty = repl_in_pty(ws.path(), &server, &[], &[]);
    pty.send("tidy up\r");
    let screen = wait_menu(&pty, "❯ 1. Yes");
    insta::assert_snapshot!("permission_menu", screen_from(&screen, "Allow bash"));
    // A word typed as the question appears answers nothing until Enter (its first letter
    // least of all); Ctrl-U takes it back.
    pty.send("about");
    pty.wait_for("the typed word", LIMIT, |s| {
        s.lines().any(|l| l.trim_end() == "? about")
    });
    assert!(!ws.path().join("one.txt").exists());
    pty.send("\u{15}");
    wait_menu(&pty, "❯ 1. Yes");
    // A number answers at once, without Enter.
    pty.send("1");
    pty.wait_for_text("Allow bash \"rm -r src\"", LIMIT);
    wait_menu(&pty, "❯ 1. Yes");
    assert!(ws.path().join("one.txt").exists());
    // 3 asks what to do instead; that text goes back with the refusal.
    pty.send("3");
    pty.send("keep src");
    let screen = pty.wait_for("the line for what to do instead", LIMIT, |s| {
        s.lines().any(|l| l.trim_end() == "↳ keep src")
    });
    insta::assert_snapshot!(
        "permission_menu_what_instead",
        screen_from(&screen, "Allow bash")
    );
    pty.send(", delete only target\r");
    let screen = pty.wait_for_text("understood", LIMIT);
    assert!(
        screen.contains("❯ 3. No: keep src, delete only target"),
        "{screen}"
    );
    let (refusal, is_error) = server.requests_for("lead")[2].last_tool_result().unwrap();
    assert!(is_error, "{refusal}");
    assert!(refusal.contains("refused"), "{refusal}");
    assert!(
        refusal.contains("keep src, delete only target"),
        "{refusal}"
    );
    leave(pty);
}

/// The prompt row while a Ctrl-R search shows.
fn search_row(screen: &str) -> Option<String> {
    screen
        .lines()
        .rfind(|l| l.contains("reverse-i-search)"))
        .map(|l| l.trim_end().to_string())
}

#[test]
fn ctrl_r_searches_the_history_and_ctrl_g_or_esc_gives_the_line_back() {
    let ws = TempWorkspace::new();
    ws.write(
        ".troupe/history",
        "#V2\nfirst about zebras\nsecond thing\nthird zebra crossing\n",
    );
    let server = common::lead_server([Step::text("found it")]);
    let mut pty = repl_in_pty(ws.path(), &server, &[], &[]);
    pty.send("draft");
    pty.wait_for("the draft", LIMIT, |s| {
        prompt_row(s).as_deref() == Some("> draft")
    });
    pty.send("\u{12}sec");
    pty.wait_for("the match", LIMIT, |s| {
        search_row(s).as_deref() == Some("(reverse-i-search)'sec': second thing")
    });
    // Ctrl-G cancels: the draft is back.
    pty.send("\u{7}");
    pty.wait_for("the draft back", LIMIT, |s| {
        prompt_row(s).as_deref() == Some("> draft") && search_row(s).is_none()
    });
    // So does Esc (a lone one: a pause tells it apart from a key sequence).
    pty.send("\u{12}thing");
    pty.wait_for("the match again", LIMIT, |s| {
        search_row(s).as_deref() == Some("(reverse-i-search)'thing': second thing")
    });
    std::thread::sleep(Duration::from_millis(100));
    pty.send("\u{1b}");
    pty.wait_for("the draft back after Esc", LIMIT, |s| {
        prompt_row(s).as_deref() == Some("> draft") && search_row(s).is_none()
    });
    pty.send("\u{15}\u{12}ZEB");
    pty.wait_for("the newest match", LIMIT, |s| {
        search_row(s).as_deref() == Some("(reverse-i-search)'ZEB': third zebra crossing")
    });
    // Ctrl-R again: the older match; Enter puts it on the line, a second Enter sends it.
    pty.send("\u{12}");
    pty.wait_for("the older match", LIMIT, |s| {
        search_row(s).as_deref() == Some("(reverse-i-search)'ZEB': first about zebras")
    });
    pty.send("\r");
    pty.wait_for("the match on the line", LIMIT, |s| {
        prompt_row(s).as_deref() == Some("> first about zebras")
    });
    assert!(server.requests_for("lead").is_empty());
    pty.send("\r");
    pty.wait_for_text("found it", LIMIT);
    assert_eq!(user_text(&server, 0), "first about zebras");
    leave(pty);
}

#[test]
fn backslash_enter_and_shift_enter_add_a_line_instead_of_sending() {
    let ws = TempWorkspace::new();
    let server = common::lead_server([Step::text("three lines read")]);
    let mut pty = repl_in_pty(ws.path(), &server, &[], &[]);
    pty.send("one\\\r");
    pty.wait_for("a new line", LIMIT, |s| {
        prompt_row(s).as_deref() == Some("> one↵")
    });
    // Shift-Enter as the kitty keyboard protocol reports it.
    pty.send("two\u{1b}[13;2u");
    pty.wait_for("another new line", LIMIT, |s| {
        prompt_row(s).as_deref() == Some("> one↵two↵")
    });
    assert!(server.requests_for("lead").is_empty());
    pty.send("three\r");
    pty.wait_for_text("three lines read", LIMIT);
    assert_eq!(user_text(&server, 0), "one\ntwo\nthree");
    leave(pty);
}

#[test]
fn a_large_paste_shows_as_a_placeholder_and_sends_its_text() {
    let ws = TempWorkspace::new();
    let server = common::lead_server([Step::text("read the log"), Step::text("read it again")]);
    let mut pty = repl_in_pty(ws.path(), &server, &[], &[]);
    let rows: Vec<String> = (1..=15).map(|i| format!("log row {i}")).collect();
    pty.send(&format!(
        "look: \u{1b}[200~{}\u{1b}[201~",
        rows.join("\r\n")
    ));
    pty.wait_for("the placeholder", LIMIT, |s| {
        prompt_row(s).as_deref() == Some("> look: [Pasted text #1 +15 lines]")
    });
    pty.send("\r");
    let screen = pty.wait_for("the answer and the next prompt", LIMIT, |s| {
        s.contains("read the log") && prompt_row(s).as_deref() == Some(">")
    });
    insta::assert_snapshot!("large_paste_sent", screen_from(&screen, "> look:"));
    assert_eq!(user_text(&server, 0), format!("look: {}", rows.join("\n")));
    // Recalled from the history, it sends the paste again.
    pty.wait_for("the next prompt", LIMIT, |s| {
        prompt_row(s).as_deref() == Some(">")
    });
    pty.send("\u{1b}[A");
    pty.wait_for("the recalled placeholder", LIMIT, |s| {
        prompt_row(s).as_deref() == Some("> look: [Pasted text #1 +15 lines]")
    });
    pty.send("\r");
    pty.wait_for_text("read it again", LIMIT);
    assert_eq!(user_text(&server, 1), format!("look: {}", rows.join("\n")));
    leave(pty);
    let history = ws.read(".troupe/history");
    assert!(
        history.contains("look: [Pasted text #1 +15 lines]"),
        "{history}"
    );
    assert!(!history.contains("log row 7"), "{history}");
}

#[test]
fn a_prompt_past_the_context_window_is_refused_before_the_request() {
    let ws = TempWorkspace::new();
    // About 63,000 tokens, attached to a prompt for a window of 50,000.
    ws.write("big.txt", "all work and no play\n".repeat(12_000));
    let server = common::lead_server([Step::text("the small one answered")]);
    let mut pty = repl_in_pty(ws.path(), &server, &["--context-window", "50000"], &[]);
    pty.send("read @big.txt\r");
    let screen = pty.wait_for_text("Nothing was sent.", LIMIT);
    assert!(screen.contains("attach less"), "{screen}");
    assert!(server.requests_for("lead").is_empty());
    pty.send("a small one\r");
    pty.wait_for_text("the small one answered", LIMIT);
    assert_eq!(user_text(&server, 0), "a small one");
    leave(pty);
}

#[test]
fn at_paths_with_spaces_are_completed_in_quotes_and_attached() {
    let ws = TempWorkspace::new();
    ws.write("notes with spaces.md", "spaced content\n");
    let server = common::lead_server([Step::text("read the notes"), Step::text("read again")]);
    let mut pty = repl_in_pty(ws.path(), &server, &[], &[]);
    pty.send("summarise @notes\t");
    pty.wait_for("the quoted completion", LIMIT, |s| {
        prompt_row(s).as_deref() == Some("> summarise @\"notes with spaces.md\"")
    });
    pty.send("and @nowhere.md\r");
    let screen = pty.wait_for("the answer and the next prompt", LIMIT, |s| {
        s.contains("read the notes") && prompt_row(s).as_deref() == Some(">")
    });
    insta::assert_snapshot!(
        "at_path_naming_nothing",
        screen_from(&screen, "> summarise")
    );
    let sent = user_text(&server, 0);
    assert!(
        sent.contains("<file path=\"notes with spaces.md\">\nspaced content\n"),
        "{sent}"
    );
    assert!(
        sent.starts_with("summarise @\"notes with spaces.md\" and @nowhere.md"),
        "{sent}"
    );
    pty.wait_for("the next prompt", LIMIT, |s| {
        prompt_row(s).as_deref() == Some(">")
    });
    pty.send("again @notes\\ with\\ spaces.md\r");
    pty.wait_for_text("read again", LIMIT);
    let sent = user_text(&server, 1);
    assert!(
        sent.contains("<file path=\"notes with spaces.md\">\nspaced content\n"),
        "{sent}"
    );
    leave(pty);
}
