//! Permission questions in the REPL — with the diff above them for `edit_file` and
//! `write_file`. On a terminal, Claude Code's menu under `Allow bash "cargo test"?`: `1. Yes`,
//! `2. Yes, and don't ask again this session for "cargo test:*"`, `3. No, and tell the agent
//! what to do differently` (arrows and Enter, or a number at once; `y`/`a`/`n`/`r` and Enter
//! as before the menu; Esc for no). Without a terminal, a line:
//! `… ? [y]es / [N]o / [a]lways "cargo test:*" / [r]emember` where Enter means no.
//! "always" allows that command prefix, that file or that tool for the rest of the session;
//! "remember" also writes the rule to `.troupe/settings.local.json`; a refusal may carry what
//! to do instead, for the model. The approver hands each question to the REPL loop, which
//! prints it and takes the person's next answer, so a question never competes with the line
//! editor for the terminal.

mod answer;
pub mod diff;
mod person;
pub mod remember;
pub mod scope;

use crate::render::sanitize::terminal;
use crate::term::Printer;
use answer::Answer;
use async_trait::async_trait;
use crossterm::style::{ContentStyle, Stylize};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use tokio::sync::{mpsc, oneshot};
use troupe_agent::permissions::Rule;
use troupe_agent::{Approval, Approver, Question};

/// One question waiting for the person.
pub struct Ask {
    /// The question, ready to print (sanitised, perhaps coloured).
    pub text: String,
    /// Where the person's answer goes.
    pub reply: oneshot::Sender<String>,
}

/// Asks the person at the REPL before a tool call that needs permission.
pub struct ReplApprover {
    /// The rules "always" and "remember" added this session.
    session: Mutex<Vec<Rule>>,
    workspace: OnceLock<PathBuf>,
    colour: bool,
    asks: mpsc::UnboundedSender<Ask>,
    printer: Printer,
}

impl ReplApprover {
    /// An approver (notes go through `printer`) and the receiving end the REPL loop answers
    /// from. Call [`set_workspace`](Self::set_workspace) once the workspace is known.
    pub fn new(
        printer: Printer,
        colour: bool,
    ) -> (Arc<ReplApprover>, mpsc::UnboundedReceiver<Ask>) {
        let (asks, rx) = mpsc::unbounded_channel();
        let approver = ReplApprover {
            session: Mutex::new(Vec::new()),
            workspace: OnceLock::new(),
            colour,
            asks,
            printer,
        };
        (Arc::new(approver), rx)
    }

    /// The workspace that file rules are relative to and whose local settings "remember"
    /// writes.
    pub fn set_workspace(&self, workspace: PathBuf) {
        let _ = self.workspace.set(workspace);
    }

    fn workspace(&self) -> PathBuf {
        match self.workspace.get() {
            Some(ws) => ws.clone(),
            None => std::env::current_dir().unwrap_or_default(),
        }
    }

    pub fn session_rules(&self) -> Vec<Rule> {
        self.session.lock().map(|s| s.clone()).unwrap_or_default()
    }

    /// Adds the scope's rules to the session, and to the local settings when remembered.
    fn allow_from_now(&self, scope: &scope::Scope, answer: Answer, workspace: &Path) {
        let parsed: Vec<Rule> = scope
            .rules
            .iter()
            .filter_map(|r| Rule::parse(r).ok())
            .collect();
        if let Ok(mut session) = self.session.lock() {
            session.extend(parsed);
        }
        let rules = scope.rules.join(", ");
        if answer != Answer::Remember {
            self.printer
                .line(&format!("(allowed for this session: {rules})"));
            return;
        }
        let path = remember::local_settings(workspace);
        match remember::allow(&path, &scope.rules) {
            Ok(()) => self
                .printer
                .line(&format!("(remembered in {}: {rules})", path.display())),
            Err(e) => self.printer.line(&format!(
                "error: could not remember {rules}: {e:#} (allowed for this session only)"
            )),
        }
    }
}

/// The question, with the diff or the full command above it when there is one.
fn question_text(
    q: &Question<'_>,
    scope: Option<&scope::Scope>,
    ws: &Path,
    colour: bool,
    menu: bool,
) -> String {
    let mut above: Vec<String> = Vec::new();
    if let Some(diff) = diff::preview(q.tool, q.input, ws, colour) {
        above.push(diff);
    }
    let field = |name: &str| q.input.get(name).and_then(serde_json::Value::as_str);
    let detail = match (q.tool, field("command"), field("path")) {
        ("bash", Some(command), _) if command.trim_end().contains('\n') => {
            let lines: Vec<&str> = command.trim_end().lines().collect();
            above.push(format!("    {}", terminal(&lines.join("\n    "))));
            format!("({} lines above)", lines.len())
        }
        ("bash", Some(command), _) => format!("\"{}\"", terminal(command.trim())),
        ("edit_file" | "write_file" | "notebook_edit", _, Some(path)) => {
            format!("\"{}\"", terminal(path))
        }
        _ => terminal(&troupe_tools::summarize_input(q.tool, q.input)).into_owned(),
    };
    // The usual reason ("bash needs permission in default mode") says nothing the question
    // does not; a rule or a protected file is worth saying.
    if !q.reason.contains("needs permission in") {
        above.push(diff::paint(
            colour,
            ContentStyle::new().dim(),
            &format!("  ({})", terminal(q.reason)),
        ));
    }
    let who = match (q.agent, q.request_id) {
        (troupe_team::LEAD, None) => String::new(),
        (name, None) => format!("{}: ", terminal(name)),
        (name, Some(id)) => format!("{} [{}]: ", terminal(name), terminal(id)),
    };
    let mut question = format!("{who}Allow {} {detail}?", terminal(q.tool));
    if !menu {
        question.push_str(" [y]es / [N]o");
        if let Some(scope) = scope {
            question.push_str(&format!(
                " / [a]lways {} / [r]emember",
                terminal(&scope.label)
            ));
        }
    }
    above.push(diff::paint(colour, ContentStyle::new().bold(), &question));
    above.join("\n")
}

#[async_trait]
impl Approver for ReplApprover {
    async fn approve(&self, question: Question<'_>) -> Approval {
        let tool = question.tool;
        match tool {
            troupe_agent::session_tools::ASK_USER_QUESTION => {
                return self.ask_questions(&question).await
            }
            troupe_agent::session_tools::EXIT_PLAN_MODE => {
                return self.approve_plan(&question).await
            }
            _ => {}
        }
        let workspace = self.workspace();
        if scope::covers(&self.session_rules(), tool, question.input, &workspace) {
            return Approval::Allow;
        }
        let scope = scope::of(tool, question.input, &workspace);
        let menu = self.printer.is_live();
        let text = question_text(&question, scope.as_ref(), &workspace, self.colour, menu);
        if menu {
            self.printer.offer(&text, answer::menu(scope.as_ref()));
        }
        let (reply, answer) = oneshot::channel();
        if self.asks.send(Ask { text, reply }).is_err() {
            return Approval::Deny(format!("nobody is at the prompt to allow this {tool} call"));
        }
        let (answer, instead) = match answer.await {
            Ok(text) => Answer::parse(&text, scope.is_some()),
            Err(_) => (Answer::No, None),
        };
        let refused = match instead {
            Some(instead) => {
                format!("the user refused this {tool} call and said what to do instead: {instead}")
            }
            None => format!("the user refused this {tool} call"),
        };
        match (answer, scope) {
            (Answer::Yes, _) => Approval::Allow,
            (Answer::Always | Answer::Remember, Some(scope)) => {
                self.allow_from_now(&scope, answer, &workspace);
                Approval::Allow
            }
            (Answer::Always | Answer::Remember, None) => {
                self.printer
                    .line("(no rule narrower than the whole tool covers this call: answered no)");
                Approval::Deny(refused)
            }
            (Answer::No, _) => Approval::Deny(refused),
        }
    }
}
