//! One tool call in three steps: [`admit`](Agent::admit) it (the tool exists, the gates and
//! permission rules let it through, the sandbox it gets), [`ask`](Agent::ask) whoever answers
//! permission questions when admission left one, and [`execute`](Agent::execute) it. The
//! scheduler in `batch` runs admitted calls side by side; a call with a question is a barrier.

use super::Agent;
use crate::confine::{question, sandbox_for, unconfinable};
use crate::extension::{Approval, Question};
use crate::lifecycle::CallDecision;
use crate::permissions::{CallInfo, DenialSource};
use troupe_tools::{DynTool, Sandbox, ToolOutput};

/// A call its gates and rules let through, ready to run once its question (if any) is answered.
pub(super) struct Admitted {
    tool: DynTool,
    name: String,
    input: serde_json::Value,
    sandbox: Sandbox,
    /// The question to ask first, and the refusal a headless run gives instead.
    question: Option<(String, String)>,
    /// The sandbox cannot confine the call here; a yes runs it unsandboxed.
    cannot_confine: bool,
}

impl Admitted {
    /// Whether a permission question stands between the call and its running.
    pub(super) fn needs_question(&self) -> bool {
        self.question.is_some()
    }
}

impl Agent {
    /// Runs one call through gates, permissions and the approver. `hook` is what a PreToolUse
    /// hook decided short of denying: its allow stands in for the permission mode's question
    /// only; its ask adds a question.
    pub(super) async fn run_one_tool(
        &self,
        id: &str,
        name: &str,
        input: &serde_json::Value,
        hook: Option<&CallDecision>,
    ) -> ToolOutput {
        let admitted = match self.admit(id, name, input, hook).await {
            Ok(admitted) => admitted,
            Err(refused) => return refused,
        };
        match self.ask(id, admitted).await {
            Ok(admitted) => self.execute(id, admitted).await,
            Err(refused) => refused,
        }
    }

    /// Runs one call that no model made (a slash command's ``!`cmd` ``) exactly as the model's
    /// calls run: the tool offered, its gates and permission rules, whoever answers questions
    /// (nobody, headless) and the sandbox its grant gives. `Err` is why it was refused.
    pub async fn run_outside_turn(
        &self,
        id: &str,
        name: &str,
        input: &serde_json::Value,
    ) -> Result<ToolOutput, String> {
        let admitted = self
            .admit(id, name, input, None)
            .await
            .map_err(|out| out.content)?;
        let admitted = self.ask(id, admitted).await.map_err(|out| out.content)?;
        Ok(self.execute(id, admitted).await)
    }

    /// The call past its gates and permission rules, or the error output that refuses it.
    pub(super) async fn admit(
        &self,
        id: &str,
        name: &str,
        input: &serde_json::Value,
        hook: Option<&CallDecision>,
    ) -> Result<Admitted, ToolOutput> {
        let Some(tool) = self.offered.get(name) else {
            let names: Vec<&str> = self.offered.iter().map(|t| t.name()).collect();
            return Err(ToolOutput::error(format!(
                "unknown tool '{name}'. Available tools: {}",
                names.join(", ")
            )));
        };
        if !input.is_object() {
            return Err(ToolOutput::error(format!(
                "invalid input for {name}: expected a JSON object, got {input}"
            )));
        }
        let effect = tool.effect(input);
        for gate in &self.gates {
            if let Some(refusal) = gate.check(name, effect, input).await {
                return Err(ToolOutput::error(refusal));
            }
        }
        let mut gate_confines = false;
        for gate in &self.gates {
            if gate.confines(name, effect, input).await {
                gate_confines = true;
                break;
            }
        }
        let call = CallInfo {
            tool: name,
            effect,
            input,
            workspace_root: self.ctx.workspace.root(),
        };
        let (grant, asked, hook_asks) = match self.judge(&call, hook) {
            Ok(judged) => judged,
            Err(reason) => {
                let source = self.policy.denial_source(&call);
                self.record_denial((id, name, input), source, &reason);
                return Err(ToolOutput::error(reason));
            }
        };
        let mut sandbox = sandbox_for(grant, gate_confines, &self.ctx.sandbox_config);
        // `sandbox.excludedCommands`: only a call a rule or the person allowed (never one that
        // ran unasked because it only reads, which the sandbox is what makes true).
        let excluded = input
            .get("command")
            .and_then(serde_json::Value::as_str)
            .is_some_and(|command| self.ctx.sandbox_config.excludes(command));
        if sandbox == Sandbox::WorkspaceWrite && name == "bash" && excluded {
            sandbox = Sandbox::Unsandboxed;
        }
        let unconfinable = match tool.runs_programs() {
            true => unconfinable(name, input, sandbox, &self.ctx.sandbox_config),
            false => None,
        };
        let cannot_confine = unconfinable.is_some();
        let mut input = input.clone();
        let question = match tool.asks_person(&input) {
            Some(person) => {
                // Only the answer fills these; the model cannot answer its own question.
                if let Some(fields) = input.as_object_mut() {
                    for field in person.answer_fields {
                        fields.remove(*field);
                    }
                }
                Some((person.reason, person.unanswered))
            }
            None => question(asked, unconfinable, || match hook_asks {
                Some(why) => format!("{why}; a headless run cannot ask"),
                None => self.policy.headless_refusal(&call),
            }),
        };
        Ok(Admitted {
            tool,
            name: name.to_string(),
            input,
            sandbox,
            question,
            cannot_confine,
        })
    }

    /// Asks the approver the call's question, if it has one: a no refuses the call, a yes with
    /// a new input has that input judged again.
    pub(super) async fn ask(
        &self,
        id: &str,
        mut admitted: Admitted,
    ) -> Result<Admitted, ToolOutput> {
        let Some((reason, how_to_allow)) = admitted.question.take() else {
            return Ok(admitted);
        };
        let name = admitted.name.as_str();
        let question = Question {
            agent: &self.config.name,
            tool: name,
            input: &admitted.input,
            reason: &reason,
            how_to_allow: &how_to_allow,
            request_id: None,
        };
        let call = crate::lifecycle::ToolCall {
            id,
            name,
            input: &admitted.input,
        };
        let hooked = self.hook_approval(call, &reason).await;
        let by_hook = hooked.is_some();
        let answer = match hooked {
            Some(answer) => answer,
            None => self.approver.approve(question).await,
        };
        match answer {
            Approval::Deny(why) => {
                let nobody = !by_hook && !self.approver.asks_someone();
                let source = nobody.then_some(DenialSource::NoApprover);
                self.record_denial((id, name, &admitted.input), source, &why);
                return Err(ToolOutput::error(why));
            }
            Approval::AllowWith(updated) if updated != admitted.input => {
                if let Err(why) = self.recheck(name, &updated).await {
                    self.record_denial((id, name, &updated), None, &why);
                    return Err(ToolOutput::error(why));
                }
                admitted.input = updated;
            }
            Approval::Allow | Approval::AllowWith(_) => {}
        }
        if admitted.cannot_confine {
            // The person said yes knowing it cannot be confined here.
            admitted.sandbox = Sandbox::Unsandboxed;
        }
        Ok(admitted)
    }

    /// Runs an admitted call whose question (if any) was answered yes.
    pub(super) async fn execute(&self, id: &str, admitted: Admitted) -> ToolOutput {
        let mut ctx = self.ctx.clone();
        ctx.sandbox = admitted.sandbox;
        ctx.progress = self
            .progress
            .as_ref()
            .map(|sink| troupe_tools::Progress::new(id, sink.clone()));
        let started = std::time::Instant::now();
        let output = admitted.tool.call(admitted.input, &ctx).await;
        self.ran(id, started.elapsed());
        output
    }

    /// An input the approver rewrote, judged again: the gates and the deny rules (its question
    /// was answered, so an ask stands as allowed).
    async fn recheck(&self, name: &str, input: &serde_json::Value) -> Result<(), String> {
        if !input.is_object() {
            return Err(format!(
                "the permission answer's input for {name} is not a JSON object: {input}"
            ));
        }
        let Some(tool) = self.offered.get(name) else {
            return Err(format!("unknown tool '{name}'"));
        };
        let effect = tool.effect(input);
        for gate in &self.gates {
            if let Some(refusal) = gate.check(name, effect, input).await {
                return Err(refusal);
            }
        }
        let call = CallInfo {
            tool: name,
            effect,
            input,
            workspace_root: self.ctx.workspace.root(),
        };
        self.judge(&call, None).map(|_| ())
    }
}
