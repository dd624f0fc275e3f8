//! The lead's conversation tools, Claude Code's `AskUserQuestion`, `EnterPlanMode` and
//! `ExitPlanMode`: `ask_user_question` and `exit_plan_mode` are questions to the person
//! ([`Tool::asks_person`]), so they reach whoever answers permission questions — the REPL's
//! menus, the SDK's `can_use_tool`, nobody in a headless run — and the answer comes back in the
//! call's input (`answers`, `mode`); `enter_plan_mode` switches the agent's mode itself.

use crate::extension::{Extension, ExtensionContext};
use crate::permissions::PermissionMode;
use crate::LiveMode;
use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use std::sync::{Arc, Mutex, PoisonError};
use troupe_tools::{
    parse_input, schema_of, DynTool, Effect, PersonQuestion, Tool, ToolContext, ToolOutput,
};

/// The tools' names.
pub const ASK_USER_QUESTION: &str = "ask_user_question";
pub const ENTER_PLAN_MODE: &str = "enter_plan_mode";
pub const EXIT_PLAN_MODE: &str = "exit_plan_mode";

/// One question of `ask_user_question`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct UserQuestion {
    /// The complete question, ending with a question mark.
    pub question: String,
    /// A very short label for it (at most 12 characters), such as "Auth method".
    pub header: String,
    /// The 2 to 4 choices; the person may always type an answer of their own instead.
    pub options: Vec<QuestionOption>,
    /// Whether several options may be chosen together.
    #[serde(rename = "multiSelect", default)]
    pub multi_select: bool,
}

/// One choice of a question.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct QuestionOption {
    /// What the person picks (1 to 5 words).
    pub label: String,
    /// What choosing it means.
    #[serde(default)]
    pub description: String,
}

/// Input of `ask_user_question`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct AskInput {
    /// 1 to 4 questions.
    pub questions: Vec<UserQuestion>,
}

/// The questions of a call, when they are well formed: 1 to 4, each with 2 to 4 options.
pub fn questions_of(input: &Value) -> Result<Vec<UserQuestion>, String> {
    let input: AskInput = serde_json::from_value(input.clone())
        .map_err(|e| format!("Invalid input for {ASK_USER_QUESTION}: {e}"))?;
    if !(1..=4).contains(&input.questions.len()) {
        return Err(format!(
            "{ASK_USER_QUESTION} takes 1 to 4 questions, not {}",
            input.questions.len()
        ));
    }
    if let Some(q) = input
        .questions
        .iter()
        .find(|q| !(2..=4).contains(&q.options.len()))
    {
        return Err(format!(
            "each question takes 2 to 4 options; \"{}\" has {}",
            q.question,
            q.options.len()
        ));
    }
    Ok(input.questions)
}

/// `ask_user_question{questions}`.
struct AskUserQuestion;

#[async_trait]
impl Tool for AskUserQuestion {
    fn name(&self) -> &str {
        ASK_USER_QUESTION
    }
    fn description(&self) -> &str {
        "Asks the user 1 to 4 multiple-choice questions while you work: to settle an ambiguous \
instruction, learn a preference, or choose between approaches. Each question has a short header \
and 2 to 4 options (label and description); multiSelect lets several be chosen. The user may \
always answer in their own words instead. The result gives each question's answer. Do not use \
it to ask whether a plan is ready: that is exit_plan_mode."
    }
    fn input_schema(&self) -> Value {
        schema_of::<AskInput>()
    }

    fn built_schema(&self) -> Option<&'static str> {
        Some(crate::tool_schemas::ASK)
    }
    fn effect(&self, _input: &Value) -> Effect {
        Effect::Coordinate
    }
    fn asks_person(&self, input: &Value) -> Option<PersonQuestion> {
        questions_of(input).ok()?;
        Some(PersonQuestion {
            reason: "the agent asks the user".to_string(),
            unanswered: "No one can answer ask_user_question in a non-interactive run: decide \
                         yourself with the information you have, and say what you assumed."
                .to_string(),
            answer_fields: &["answers"],
        })
    }
    async fn call(&self, input: Value, _ctx: &ToolContext) -> ToolOutput {
        let questions = match questions_of(&input) {
            Ok(questions) => questions,
            Err(e) => return ToolOutput::error(e),
        };
        let Some(answers) = input.get("answers").and_then(Value::as_object) else {
            return ToolOutput::error("The user's answers did not come back; ask again in text.");
        };
        let pairs: Vec<String> = questions
            .iter()
            .filter_map(|q| {
                let answer = answers.get(&q.question)?;
                let answer = match answer {
                    Value::String(s) => s.clone(),
                    Value::Array(items) => items
                        .iter()
                        .filter_map(Value::as_str)
                        .collect::<Vec<_>>()
                        .join(", "),
                    other => other.to_string(),
                };
                Some(format!("\"{}\"=\"{answer}\"", q.question))
            })
            .collect();
        if pairs.is_empty() {
            return ToolOutput::error("The user answered none of the questions.");
        }
        ToolOutput::ok(format!(
            "User has answered your questions: {}. You can now continue with the user's answers in mind.",
            pairs.join(", ")
        ))
    }
}

/// What the plan tools share: the agent's mode and the one it had before plan mode.
#[derive(Clone)]
struct PlanState {
    mode: LiveMode,
    before: Arc<Mutex<Option<PermissionMode>>>,
}

impl PlanState {
    fn before(&self) -> Option<PermissionMode> {
        *self.before.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn remember(&self, mode: Option<PermissionMode>) {
        *self.before.lock().unwrap_or_else(PoisonError::into_inner) = mode;
    }
}

/// Input of `enter_plan_mode` (none).
#[derive(Debug, Deserialize, JsonSchema)]
pub struct EnterInput {}

/// `enter_plan_mode{}`.
struct EnterPlanMode(PlanState);

const PLAN_MODE_TEXT: &str = "Entered plan mode. You should now focus on exploring the codebase \
and designing an implementation approach.\n\nIn plan mode, you should:\n1. Thoroughly explore the \
codebase to understand existing patterns\n2. Identify similar features and architectural \
approaches\n3. Consider multiple approaches and their trade-offs\n4. Use ask_user_question if you \
need to clarify the approach\n5. Design a concrete implementation strategy\n6. When ready, use \
exit_plan_mode to present your plan for approval\n\nRemember: DO NOT write or edit any files yet. \
This is a read-only exploration and planning phase.";

#[async_trait]
impl Tool for EnterPlanMode {
    fn name(&self) -> &str {
        ENTER_PLAN_MODE
    }
    fn description(&self) -> &str {
        "Switches to plan mode before a non-trivial change: only read-only tools run while you \
explore and design; exit_plan_mode then presents the plan to the user for approval."
    }
    fn input_schema(&self) -> Value {
        schema_of::<EnterInput>()
    }

    fn built_schema(&self) -> Option<&'static str> {
        Some(crate::tool_schemas::ENTER)
    }
    fn effect(&self, _input: &Value) -> Effect {
        Effect::Coordinate
    }
    async fn call(&self, _input: Value, _ctx: &ToolContext) -> ToolOutput {
        let now = self.0.mode.get();
        if now == PermissionMode::Plan {
            return ToolOutput::ok("Already in plan mode. Present the plan with exit_plan_mode.");
        }
        self.0.remember(Some(now));
        self.0.mode.switch(PermissionMode::Plan);
        ToolOutput::ok(PLAN_MODE_TEXT)
    }
}

/// Input of `exit_plan_mode`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ExitInput {
    /// The plan, in Markdown: what will change, where, and how it will be checked.
    pub plan: String,
}

/// `exit_plan_mode{plan}`.
struct ExitPlanMode(PlanState);

impl ExitPlanMode {
    /// The mode the plan's approval leads to: the one the answer chose (`default` or
    /// `acceptEdits`), else the one before plan mode.
    fn after(&self, input: &Value) -> PermissionMode {
        let chosen = input
            .get("mode")
            .and_then(Value::as_str)
            .and_then(|m| m.parse::<PermissionMode>().ok())
            .filter(|m| matches!(m, PermissionMode::Default | PermissionMode::AcceptEdits));
        match (chosen, self.0.before()) {
            (Some(mode), _) => mode,
            (None, Some(before)) if before != PermissionMode::Plan => before,
            _ => PermissionMode::Default,
        }
    }
}

#[async_trait]
impl Tool for ExitPlanMode {
    fn name(&self) -> &str {
        EXIT_PLAN_MODE
    }
    fn description(&self) -> &str {
        "In plan mode, presents your plan to the user for approval once it is ready to \
implement. On approval the mode changes and you start; otherwise keep planning with the user's \
feedback. Only for planning the implementation of a change, not for research."
    }
    fn input_schema(&self) -> Value {
        schema_of::<ExitInput>()
    }

    fn built_schema(&self) -> Option<&'static str> {
        Some(crate::tool_schemas::EXIT)
    }
    fn effect(&self, _input: &Value) -> Effect {
        Effect::Coordinate
    }
    fn asks_person(&self, _input: &Value) -> Option<PersonQuestion> {
        let unasked = self.0.mode.get() != PermissionMode::Plan
            || self.0.before() == Some(PermissionMode::BypassPermissions);
        (!unasked).then(|| PersonQuestion {
            reason: "the plan needs the user's approval".to_string(),
            unanswered: "exit_plan_mode needs the user's approval of the plan, and no one can \
                         give it in a non-interactive run: the session stays in plan mode \
                         (only a run with --permission-mode bypassPermissions leaves it unasked). \
                         Report the plan as your answer instead."
                .to_string(),
            answer_fields: &["mode"],
        })
    }
    async fn call(&self, input: Value, _ctx: &ToolContext) -> ToolOutput {
        if self.0.mode.get() != PermissionMode::Plan {
            return ToolOutput::error("You are not in plan mode; there is no plan to approve.");
        }
        let plan: ExitInput = match parse_input(self.name(), input.clone()) {
            Ok(plan) => plan,
            Err(e) => return e,
        };
        let after = self.after(&input);
        self.0.remember(None);
        self.0.mode.switch(after);
        ToolOutput::ok(format!(
            "User has approved your plan. You can now start coding (permission mode {after}). \
             Start with updating your todo list if applicable.\n\n## Approved Plan:\n{}",
            plan.plan.trim()
        ))
    }
}

/// The conversation tools of the agent a person talks to.
pub struct SessionToolsExtension;

impl Extension for SessionToolsExtension {
    fn name(&self) -> &str {
        "session-tools"
    }
    fn tools(&self, cx: &ExtensionContext<'_>) -> Vec<DynTool> {
        let state = PlanState {
            mode: cx.mode.clone(),
            before: Arc::default(),
        };
        vec![
            Arc::new(AskUserQuestion),
            Arc::new(EnterPlanMode(state.clone())),
            Arc::new(ExitPlanMode(state)),
        ]
    }
}
