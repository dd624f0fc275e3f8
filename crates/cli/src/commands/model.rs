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
    if name == current {
        outln!("(already on {current})");
        return;
    }
    // The same client (its bound on concurrent calls, its shared prefixes): the model's name
    // goes with each request.
    agent.set_model(agent.model_client(), name);
    let mut run = recipe.model();
    run.model = name.to_string();
    recipe.set_model(run, agent.model_client());
    outln!("(model: {current} → {name}, from the next request on)");
}
