//! The model's side of scheduled prompts: `schedule_cron`, `list_crons`, `cancel_cron`, and
//! the extension that gives them to an agent.

use crate::file::{CronError, CronFile};
use crate::job::{CronJob, ScheduleKind};
use crate::scheduler::Deliver;
use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use std::sync::Arc;
use troupe_agent::{Extension, ExtensionContext};
use troupe_tools::background::describe_age;
use troupe_tools::{parse_input, schema_of, DynTool, Effect, Tool, ToolContext, ToolOutput};

/// What the cron tools share: the file, the team they schedule for, and the delivery that
/// checks targets.
#[derive(Clone)]
struct Cron {
    file: CronFile,
    team: String,
    deliver: Arc<dyn Deliver>,
}

impl Cron {
    /// Runs file work off the async workers (it may wait on the lock).
    async fn blocking<R: Send + 'static>(
        &self,
        f: impl FnOnce(&Cron) -> R + Send + 'static,
    ) -> Result<R, ToolOutput> {
        let this = self.clone();
        tokio::task::spawn_blocking(move || f(&this))
            .await
            .map_err(|e| ToolOutput::error(format!("scheduled prompts: {e}")))
    }
}

/// Gives an agent `schedule_cron`, `list_crons` and `cancel_cron` for its team.
pub struct CronExtension {
    cron: Cron,
}

impl CronExtension {
    /// The cron tools over `file`, scheduling for `team`; `deliver` checks targets.
    pub fn new(file: CronFile, team: &str, deliver: Arc<dyn Deliver>) -> CronExtension {
        CronExtension {
            cron: Cron {
                file,
                team: team.to_string(),
                deliver,
            },
        }
    }

    /// The three tools.
    pub fn tools(&self) -> Vec<DynTool> {
        vec![
            Arc::new(ScheduleCronTool(self.cron.clone())),
            Arc::new(ListCronsTool(self.cron.clone())),
            Arc::new(CancelCronTool(self.cron.clone())),
        ]
    }
}

impl Extension for CronExtension {
    fn name(&self) -> &str {
        "cron"
    }

    fn tools(&self, _cx: &ExtensionContext<'_>) -> Vec<DynTool> {
        CronExtension::tools(self)
    }
}

/// Input of `schedule_cron`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ScheduleInput {
    /// When: a five-field cron expression in local time ("*/10 * * * *", "0 9 * * MON-FRI"),
    /// a delay ("in 90s", "in 3m", "in 2h"), or an RFC 3339 time ("2026-05-01T09:00:00Z").
    pub schedule: String,
    /// What the agent is told then; it arrives as "[Scheduled] <prompt>".
    pub prompt: String,
    /// The agent to tell (a teammate's name, or "lead"); default: yourself.
    pub to: Option<String>,
}

/// `schedule_cron`: adds a durable scheduled prompt.
pub struct ScheduleCronTool(Cron);

#[async_trait]
impl Tool for ScheduleCronTool {
    fn name(&self) -> &str {
        "schedule_cron"
    }

    fn description(&self) -> &str {
        "Schedules a prompt: at that time \"[Scheduled] <prompt>\" is delivered like mail to \
`to` (default: you), waking it if idle. Jobs survive restarts; one missed while troupe was not \
running fires at the next start, marked late. list_crons shows jobs, cancel_cron removes one."
    }

    fn input_schema(&self) -> Value {
        schema_of::<ScheduleInput>()
    }

    fn built_schema(&self) -> Option<&'static str> {
        Some(crate::tool_schemas::SCHEDULE)
    }

    fn effect(&self, _input: &Value) -> Effect {
        // Harness state under .troupe, not the workspace's files.
        Effect::Coordinate
    }

    async fn call(&self, input: Value, ctx: &ToolContext) -> ToolOutput {
        let input: ScheduleInput = match parse_input(self.name(), input) {
            Ok(input) => input,
            Err(output) => return output,
        };
        if input.prompt.trim().is_empty() {
            return ToolOutput::error("schedule_cron: the prompt is empty");
        }
        let to = input.to.clone().unwrap_or_else(|| ctx.agent.clone());
        let agent = ctx.agent.clone();
        let done = self
            .0
            .blocking(move |cron| -> Result<CronJob, String> {
                cron.deliver.check(&cron.team, &to)?;
                let now = crate::now_ms();
                let job =
                    CronJob::new(&input.schedule, &input.prompt, &cron.team, &to, &agent, now)
                        .map_err(|e| e.to_string())?;
                cron.file.add(job).map_err(|e| e.to_string())
            })
            .await;
        match done {
            Ok(Ok(job)) => ToolOutput::ok(format!(
                "Scheduled {id} for {to}: {when}, next at {next} (in {wait}). It will arrive as \
                 \"[Scheduled] {prompt}\". cancel_cron{{\"id\": \"{id}\"}} removes it.",
                id = job.id,
                to = job.to,
                when = describe_kind(&job),
                next = job.next_shown(),
                wait = describe_age(job.next_ms.saturating_sub(crate::now_ms())),
                prompt = job.prompt,
            )),
            Ok(Err(why)) => ToolOutput::error(why),
            Err(output) => output,
        }
    }
}

fn describe_kind(job: &CronJob) -> String {
    match job.kind {
        ScheduleKind::Once => format!("once ({})", job.schedule),
        ScheduleKind::Recurring => format!("recurring '{}'", job.schedule),
    }
}

/// Input of `list_crons`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ListInput {}

/// `list_crons`: the team's scheduled prompts.
pub struct ListCronsTool(Cron);

#[async_trait]
impl Tool for ListCronsTool {
    fn name(&self) -> &str {
        "list_crons"
    }

    fn description(&self) -> &str {
        "Lists the team's scheduled prompts: id, schedule, target, next time, prompt."
    }

    fn input_schema(&self) -> Value {
        schema_of::<ListInput>()
    }

    fn built_schema(&self) -> Option<&'static str> {
        Some(crate::tool_schemas::LIST)
    }

    fn effect(&self, _input: &Value) -> Effect {
        Effect::ReadOnly
    }

    async fn call(&self, _input: Value, _ctx: &ToolContext) -> ToolOutput {
        let listed = self
            .0
            .blocking(|cron| -> Result<Vec<CronJob>, CronError> {
                let team = cron.team.clone();
                Ok(cron
                    .file
                    .list()?
                    .into_iter()
                    .filter(|j| j.team == team)
                    .collect())
            })
            .await;
        match listed {
            Ok(Ok(jobs)) if jobs.is_empty() => ToolOutput::ok("No scheduled prompts."),
            Ok(Ok(jobs)) => {
                let lines: Vec<String> = jobs
                    .iter()
                    .map(|j| {
                        format!(
                            "{} · {} · to {} · next {} · {}",
                            j.id,
                            describe_kind(j),
                            j.to,
                            j.next_shown(),
                            j.prompt
                        )
                    })
                    .collect();
                ToolOutput::ok(lines.join("\n"))
            }
            Ok(Err(e)) => ToolOutput::error(e.to_string()),
            Err(output) => output,
        }
    }
}

/// Input of `cancel_cron`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct CancelInput {
    /// The id schedule_cron returned (`cron-…`).
    pub id: String,
}

/// `cancel_cron`: removes a scheduled prompt.
pub struct CancelCronTool(Cron);

#[async_trait]
impl Tool for CancelCronTool {
    fn name(&self) -> &str {
        "cancel_cron"
    }

    fn description(&self) -> &str {
        "Removes a scheduled prompt by its id; it will not fire again."
    }

    fn input_schema(&self) -> Value {
        schema_of::<CancelInput>()
    }

    fn built_schema(&self) -> Option<&'static str> {
        Some(crate::tool_schemas::CANCEL)
    }

    fn effect(&self, _input: &Value) -> Effect {
        Effect::Coordinate
    }

    async fn call(&self, input: Value, _ctx: &ToolContext) -> ToolOutput {
        let input: CancelInput = match parse_input(self.name(), input) {
            Ok(input) => input,
            Err(output) => return output,
        };
        let removed = self
            .0
            .blocking(move |cron| cron.file.remove(&input.id))
            .await;
        match removed {
            Ok(Ok(job)) => ToolOutput::ok(format!(
                "Cancelled {} ({}, to {}: {}).",
                job.id,
                describe_kind(&job),
                job.to,
                job.prompt
            )),
            Ok(Err(e)) => ToolOutput::error(e.to_string()),
            Err(output) => output,
        }
    }
}
