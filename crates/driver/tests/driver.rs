//! The session driver's behaviours, once for every front end: turns and their events, an
//! interrupt, operations queued during a turn, closed input, follow-up work, settling with
//! what wakes the agent, and waking while idle. Against the fake model through the real client.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code may panic on a broken fixture

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use troupe_agent::{Agent, AgentEvent};
use troupe_driver::{
    Cause, Driver, Event, Failure, Flow, Frontend, Op, Policy, Progress, Readiness, Wake, Wakes,
};
use troupe_testkit::{FakeServer, Step, TempWorkspace};

/// What a test front end saw.
#[derive(Default)]
struct Seen {
    finished: Vec<Result<Progress, String>>,
    applied: Vec<Op>,
    before: Vec<Cause>,
}

/// A front end fed from a script: idle operations in order, operations given while a turn
/// runs (after a short delay), and follow-ups to answer `finished` with.
struct Script {
    idle: VecDeque<Op>,
    during: VecDeque<(Duration, Option<Op>)>,
    follow: VecDeque<Flow>,
    seen: Arc<Mutex<Seen>>,
}

impl Script {
    fn new(idle: impl IntoIterator<Item = Op>) -> Script {
        Script {
            idle: idle.into_iter().collect(),
            during: VecDeque::new(),
            follow: VecDeque::new(),
            seen: Arc::default(),
        }
    }
}

#[async_trait::async_trait]
impl Frontend for Script {
    async fn next_op(&mut self, turn: Option<Cause>) -> Option<Op> {
        match turn {
            None => self.idle.pop_front(),
            Some(_) => match self.during.front().cloned() {
                Some((wait, op)) => {
                    tokio::time::sleep(wait).await;
                    self.during.pop_front();
                    op
                }
                None => std::future::pending().await,
            },
        }
    }

    async fn apply(&mut self, _agent: &mut Agent, op: Op) -> Flow {
        self.seen.lock().unwrap().applied.push(op.clone());
        match op {
            Op::Command(text) => Flow::Prompt(format!("expanded: {text}").into()),
            _ => Flow::Continue,
        }
    }

    async fn before_turn(&mut self, _agent: &mut Agent, cause: Cause) {
        self.seen.lock().unwrap().before.push(cause);
    }

    async fn finished(&mut self, _agent: &mut Agent, result: Result<Progress, Failure>) -> Flow {
        self.seen
            .lock()
            .unwrap()
            .finished
            .push(result.map_err(|f| f.to_string()));
        self.follow.pop_front().unwrap_or(Flow::Continue)
    }
}

/// Wakes from a script of readiness answers (then quiet).
struct ScriptedWakes(VecDeque<Readiness>);

#[async_trait::async_trait]
impl Wakes for ScriptedWakes {
    async fn check(&mut self) -> Result<Readiness, String> {
        Ok(self.0.pop_front().unwrap_or(Readiness::Quiet))
    }
    async fn changed(&mut self, limit: Duration) {
        tokio::time::sleep(limit.min(Duration::from_millis(20))).await
    }
}

fn agent(ws: &TempWorkspace, server: &FakeServer) -> Agent {
    troupe_test_support::builder(ws.path(), server, "lead")
        .build()
        .unwrap()
}

fn policy(settle: Option<Duration>) -> Policy {
    Policy {
        settle,
        who: "the lead".into(),
        agent: "lead".into(),
    }
}

/// The kinds of events a run emitted, in order (streamed text left out).
#[derive(Debug, Clone, PartialEq)]
enum Kind {
    Started(Cause),
    Reply,
    Ended(bool),
    Note,
    Error,
}

async fn drive(
    agent: &mut Agent,
    wakes: ScriptedWakes,
    policy: Policy,
    first: Flow,
    front: &mut Script,
) -> Vec<Kind> {
    let mut kinds = Vec::new();
    let mut sink = |event: Event<'_>| {
        let kind = match event {
            Event::TurnStarted(cause) => Kind::Started(cause),
            Event::Agent(AgentEvent::Reply { .. }) => Kind::Reply,
            Event::Agent(_) => return,
            Event::TurnEnded(result) => Kind::Ended(result.is_ok()),
            Event::Note(_) => Kind::Note,
            Event::Error(_) => Kind::Error,
        };
        kinds.push(kind);
    };
    let mut driver = Driver::new(agent, Box::new(wakes), policy);
    let run = driver.run(first, front, &mut sink);
    tokio::time::timeout(Duration::from_secs(30), run)
        .await
        .expect("the session ended in time");
    kinds
}

#[tokio::test]
async fn a_prompt_runs_one_turn_and_its_events_come_in_order() {
    let (ws, server) = (TempWorkspace::new(), FakeServer::start());
    server.script("lead", [Step::text("done")]);
    let mut agent = agent(&ws, &server);
    let mut front = Script::new([Op::Prompt("hi".into())]);
    let kinds = drive(
        &mut agent,
        ScriptedWakes(VecDeque::new()),
        policy(None),
        Flow::Continue,
        &mut front,
    )
    .await;
    assert_eq!(
        kinds,
        [Kind::Started(Cause::Prompt), Kind::Reply, Kind::Ended(true)]
    );
    let seen = front.seen.lock().unwrap();
    assert_eq!(seen.finished.len(), 1);
    assert_eq!(seen.finished[0].as_ref().unwrap().text, "done");
    assert_eq!(seen.before, [Cause::Prompt]);
}

#[tokio::test]
async fn an_interrupt_drops_the_turn_and_the_session_goes_on() {
    let (ws, server) = (TempWorkspace::new(), FakeServer::start());
    server.script(
        "lead",
        [
            Step::delay(Duration::from_secs(60), Step::text("too late")),
            Step::text("second answer"),
        ],
    );
    let mut agent = agent(&ws, &server);
    let mut front = Script::new([Op::Prompt("slow".into()), Op::Prompt("again".into())]);
    front
        .during
        .push_back((Duration::from_millis(200), Some(Op::Interrupt)));
    let kinds = drive(
        &mut agent,
        ScriptedWakes(VecDeque::new()),
        policy(None),
        Flow::Continue,
        &mut front,
    )
    .await;
    assert_eq!(
        kinds[..2],
        [Kind::Started(Cause::Prompt), Kind::Ended(false)]
    );
    let seen = front.seen.lock().unwrap();
    assert_eq!(seen.finished[0].as_ref().unwrap_err(), "interrupted");
    assert_eq!(seen.finished[1].as_ref().unwrap().text, "second answer");
    // The conversation was repaired: the second request is well formed and carries both prompts.
    let second = &server.requests_for("lead")[1];
    assert!(second.all_text().contains("slow") && second.all_text().contains("again"));
}

#[tokio::test]
async fn operations_taken_during_a_turn_wait_for_its_end_in_order() {
    let (ws, server) = (TempWorkspace::new(), FakeServer::start());
    server.script(
        "lead",
        [
            Step::delay(Duration::from_millis(500), Step::text("first")),
            Step::text("second"),
        ],
    );
    let mut agent = agent(&ws, &server);
    let mut front = Script::new([Op::Prompt("one".into())]);
    front.during.push_back((
        Duration::from_millis(50),
        Some(Op::SetModel("other".into())),
    ));
    front
        .during
        .push_back((Duration::from_millis(10), Some(Op::Command("two".into()))));
    drive(
        &mut agent,
        ScriptedWakes(VecDeque::new()),
        policy(None),
        Flow::Continue,
        &mut front,
    )
    .await;
    let seen = front.seen.lock().unwrap();
    assert_eq!(
        seen.applied,
        [Op::SetModel("other".into()), Op::Command("two".into())]
    );
    let texts: Vec<_> = seen
        .finished
        .iter()
        .map(|r| r.as_ref().unwrap().text.clone())
        .collect();
    assert_eq!(texts, ["first", "second"]);
    assert!(server.requests_for("lead")[1]
        .all_text()
        .contains("expanded: two"));
}

#[tokio::test]
async fn closed_input_during_a_turn_lets_it_finish_then_ends() {
    let (ws, server) = (TempWorkspace::new(), FakeServer::start());
    server.script(
        "lead",
        [Step::delay(
            Duration::from_millis(300),
            Step::text("finished anyway"),
        )],
    );
    let mut agent = agent(&ws, &server);
    let mut front = Script::new([Op::Prompt("work".into()), Op::Prompt("never".into())]);
    front.during.push_back((Duration::from_millis(20), None));
    drive(
        &mut agent,
        ScriptedWakes(VecDeque::new()),
        policy(None),
        Flow::Continue,
        &mut front,
    )
    .await;
    let seen = front.seen.lock().unwrap();
    assert_eq!(seen.finished.len(), 1);
    assert_eq!(seen.finished[0].as_ref().unwrap().text, "finished anyway");
    assert_eq!(server.requests_for("lead").len(), 1);
}

#[tokio::test]
async fn finished_may_ask_for_another_prompt_or_a_retry() {
    let (ws, server) = (TempWorkspace::new(), FakeServer::start());
    server.script("lead", [Step::text("a"), Step::text("b"), Step::text("c")]);
    let mut agent = agent(&ws, &server);
    let mut front = Script::new([]);
    front.follow = [Flow::Prompt("fix it".into()), Flow::Retry, Flow::End].into();
    let kinds = drive(
        &mut agent,
        ScriptedWakes(VecDeque::new()),
        policy(None),
        Flow::Prompt("go".into()),
        &mut front,
    )
    .await;
    let starts: Vec<_> = kinds
        .iter()
        .filter(|k| matches!(k, Kind::Started(_)))
        .cloned()
        .collect();
    assert_eq!(
        starts,
        [
            Kind::Started(Cause::Prompt),
            Kind::Started(Cause::Prompt),
            Kind::Started(Cause::Follow)
        ]
    );
    assert_eq!(front.seen.lock().unwrap().finished.len(), 3);
}

#[tokio::test]
async fn settling_runs_the_turns_wakes_ask_for_and_adds_them_up() {
    let (ws, server) = (TempWorkspace::new(), FakeServer::start());
    server.script(
        "lead",
        [Step::text("asked alice"), Step::text("alice says hi")],
    );
    let mut agent = agent(&ws, &server);
    let wakes = ScriptedWakes(
        [
            Readiness::Busy(vec!["alice".into()]),
            // What waits for the lead (a task for it, as a prompt).
            Readiness::Ready(Wake::Prompt("alice: hi".into())),
            Readiness::Quiet,
        ]
        .into(),
    );
    let mut front = Script::new([]);
    front.follow = [Flow::End].into();
    let kinds = drive(
        &mut agent,
        wakes,
        policy(Some(Duration::from_secs(10))),
        Flow::Prompt("go".into()),
        &mut front,
    )
    .await;
    assert!(kinds.contains(&Kind::Started(Cause::Follow)), "{kinds:?}");
    let seen = front.seen.lock().unwrap();
    assert_eq!(
        seen.finished.len(),
        1,
        "one result for the prompt's whole work"
    );
    let progress = seen.finished[0].as_ref().unwrap();
    assert_eq!(
        (progress.text.as_str(), progress.model_calls),
        ("alice says hi", 2)
    );
}

#[tokio::test]
async fn settling_past_its_limit_fails_naming_who_still_works() {
    let (ws, server) = (TempWorkspace::new(), FakeServer::start());
    server.script("lead", [Step::text("waiting")]);
    let mut agent = agent(&ws, &server);
    let busy = (0..1000)
        .map(|_| Readiness::Busy(vec!["alice".into()]))
        .collect();
    let mut front = Script::new([]);
    front.follow = [Flow::End].into();
    drive(
        &mut agent,
        ScriptedWakes(busy),
        policy(Some(Duration::from_millis(200))),
        Flow::Prompt("go".into()),
        &mut front,
    )
    .await;
    let seen = front.seen.lock().unwrap();
    let why = seen.finished[0].as_ref().unwrap_err();
    assert!(
        why.contains("did not settle") && why.contains("alice"),
        "{why}"
    );
}

#[tokio::test]
async fn while_idle_a_wake_starts_a_turn_and_a_stop_ends_the_session() {
    let (ws, server) = (TempWorkspace::new(), FakeServer::start());
    let mut agent = agent(&ws, &server);
    let wakes = ScriptedWakes(
        [
            Readiness::Quiet,
            Readiness::Ready(Wake::Turn(Cause::Mail)),
            Readiness::Ready(Wake::Stop),
        ]
        .into(),
    );
    // No input ever comes: only the wakes move the session.
    let mut front = Script::new([]);
    front.idle = VecDeque::new();
    let kinds = drive_idle(&mut agent, wakes, &mut front).await;
    assert_eq!(
        kinds.first(),
        Some(&Kind::Started(Cause::Mail)),
        "{kinds:?}"
    );
    assert_eq!(front.seen.lock().unwrap().finished.len(), 1);
}

/// Like [`drive`], for a front end whose input never closes.
async fn drive_idle(agent: &mut Agent, wakes: ScriptedWakes, front: &mut Script) -> Vec<Kind> {
    struct Silent<'a>(&'a mut Script);
    #[async_trait::async_trait]
    impl Frontend for Silent<'_> {
        async fn next_op(&mut self, turn: Option<Cause>) -> Option<Op> {
            match turn {
                None => std::future::pending().await,
                Some(cause) => self.0.next_op(Some(cause)).await,
            }
        }
        async fn apply(&mut self, agent: &mut Agent, op: Op) -> Flow {
            self.0.apply(agent, op).await
        }
        async fn finished(&mut self, agent: &mut Agent, result: Result<Progress, Failure>) -> Flow {
            self.0.finished(agent, result).await
        }
    }
    let mut kinds = Vec::new();
    let mut sink = |event: Event<'_>| {
        if let Event::TurnStarted(cause) = event {
            kinds.push(Kind::Started(cause));
        }
    };
    let mut silent = Silent(front);
    let mut driver = Driver::new(agent, Box::new(wakes), policy(None));
    let run = driver.run(Flow::Continue, &mut silent, &mut sink);
    tokio::time::timeout(Duration::from_secs(30), run)
        .await
        .expect("the stop ended the session");
    kinds
}
