//! `/model [name]` in the REPL: shows the lead's model, or switches it from the next model call
//! on — the way the SDK's `set_model` control request does, on the same provider and endpoint.

use crate::render::sanitize::outln;
use troupe_agent::{Agent, Recipe};
use troupe_model::ModelConfig;

/// Shows the model (`name` empty) or switches to `name`: the lead's, and the run's `recipe`'s
/// for the teammates and subagents made from now on.
pub fn switch(agent: &mut Agent, recipe: &Recipe, base: &ModelConfig, name: &str) {
    let current = agent.config().model.clone();
    if name.is_empty() {
        outln!(
            "model: {current} ({} at {}); /model <name> switches from the next request on",
            base.provider,
            base.base_url
        );
        return;
    }
    if name.split_whitespace().count() != 1 {
        outln!("(usage: /model <name>, one word)");
        return;
    }
    let full = base.named(name, &troupe_tools::child_env::var);
    if full == current {
        outln!("(already on {current})");
        return;
    }
    // The same client (its bound on concurrent calls, its shared prefixes): the model's name
    // goes with each request.
    agent.set_model(agent.model_client(), full.clone());
    let mut run = recipe.model();
    run.model = full.clone();
    recipe.set_model(run, agent.model_client());
    let shown = match full == name {
        true => full,
        false => format!("{full} ({name})"),
    };
    outln!("(model: {current} → {shown}, from the next request on)");
}

/// The model id `name` stands for with `agent`'s client: Claude Code's aliases become
/// Anthropic ids on the Anthropic provider; any other name, or any name on an
/// OpenAI-compatible server, is sent as given.
pub fn full_name(agent: &Agent, name: &str) -> String {
    match agent.model_client().provider() {
        "openai" => name.trim().to_string(),
        _ => troupe_model::alias::resolve(name, &troupe_tools::child_env::var),
    }
}
