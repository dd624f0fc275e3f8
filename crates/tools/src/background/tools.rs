//! The tools over an agent's background commands: `bash_output` and `kill_background` (the
//! `bash` tool starts them).

use super::{render, JobError, Jobs};
use crate::bash::BashInput;
use crate::{parse_input, schema_of, Effect, Tool, ToolContext, ToolOutput};
use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use std::time::Duration;

/// The agent's jobs, or the error a tool returns where there are none.
fn jobs_of(ctx: &ToolContext) -> Result<&Jobs, ToolOutput> {
    ctx.background.as_ref().ok_or_else(|| {
        ToolOutput::error(
            "background commands are not available to this agent; run it in the foreground",
        )
    })
}

/// The job a `bash_output` or `kill_background` call names, and the jobs it is among.
fn job_call<'a>(
    tool: &str,
    input: Value,
    ctx: &'a ToolContext,
) -> Result<(JobInput, &'a Jobs), ToolOutput> {
    let input: JobInput = parse_input(tool, input)?;
    Ok((input, jobs_of(ctx)?))
}

/// Starts `input`'s command in the background for the `bash` tool.
pub(crate) async fn start_output(input: &BashInput, ctx: &ToolContext) -> ToolOutput {
    let jobs = match jobs_of(ctx) {
        Ok(jobs) => jobs,
        Err(output) => return output,
    };
    let timeout = match input.timeout_ms {
        None | Some(0) => None,
        Some(ms) => Some(Duration::from_millis(ms)),
    };
    let sandbox = ctx.sandbox_config.effective(ctx.sandbox);
    match jobs.start(&input.command, input.description.clone(), timeout, ctx) {
        Ok(job) => ToolOutput::ok(render::started(&job, sandbox)),
        Err(e @ JobError::Sandbox(_)) => ToolOutput::error(e.to_string()),
        Err(e) => ToolOutput::error(format!("Could not start the command: {e}")),
    }
}

/// Input of `bash_output` and `kill_background`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct JobInput {
    /// The id `bash` returned when it started the command (`bg-1`).
    #[serde(alias = "bash_id", alias = "shell_id")]
    pub id: String,
}

/// Reads a background command's new output and status.
#[derive(Debug, Default, Clone, Copy)]
pub struct BashOutputTool;

#[async_trait]
impl Tool for BashOutputTool {
    fn name(&self) -> &str {
        "bash_output"
    }

    fn description(&self) -> &str {
        "Reads the output a background command (started by bash with run_in_background: true) \
wrote since the last read, and whether it is still running or how it ended. Returns at once; \
you are notified when it finishes, so there is no need to poll in a loop."
    }

    fn input_schema(&self) -> Value {
        schema_of::<JobInput>()
    }

    fn built_schema(&self) -> Option<&'static str> {
        Some(crate::tool_schemas::JOB)
    }

    fn effect(&self, _input: &Value) -> Effect {
        Effect::ReadOnly
    }

    async fn call(&self, input: Value, ctx: &ToolContext) -> ToolOutput {
        let (input, jobs) = match job_call(self.name(), input, ctx) {
            Ok(call) => call,
            Err(output) => return output,
        };
        match jobs.read(&input.id) {
            Ok(read) => ToolOutput::ok(render::read(&read)),
            Err(e) => ToolOutput::error(e.to_string()),
        }
    }
}

/// Ends a background command and its whole process group.
#[derive(Debug, Default, Clone, Copy)]
pub struct KillBackgroundTool;

#[async_trait]
impl Tool for KillBackgroundTool {
    fn name(&self) -> &str {
        "kill_background"
    }

    fn description(&self) -> &str {
        "Ends a background command (started by bash with run_in_background: true) and every \
process it started, and waits until they are gone."
    }

    fn input_schema(&self) -> Value {
        schema_of::<JobInput>()
    }

    fn built_schema(&self) -> Option<&'static str> {
        Some(crate::tool_schemas::JOB)
    }

    fn effect(&self, _input: &Value) -> Effect {
        // It only ends what this agent started; nothing in the workspace changes.
        Effect::Coordinate
    }

    async fn call(&self, input: Value, ctx: &ToolContext) -> ToolOutput {
        let (input, jobs) = match job_call(self.name(), input, ctx) {
            Ok(call) => call,
            Err(output) => return output,
        };
        let was_running = jobs.running().iter().any(|job| job.id == input.id);
        match jobs.kill(&input.id).await {
            Ok(job) => ToolOutput::ok(render::killed(&job, was_running)),
            Err(e) => ToolOutput::error(e.to_string()),
        }
    }
}
