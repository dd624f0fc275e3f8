//! How a later settings layer combines with the earlier ones, as Claude Code does it: single
//! values are replaced, rule lists and hooks accumulate, maps merge key by key.

use crate::{Permissions, Settings};

impl Settings {
    /// Applies `later` on top of `self`.
    pub fn merge(&mut self, later: &Settings) {
        self.permissions.merge(&later.permissions);
        for (event, matchers) in &later.hooks {
            self.hooks
                .entry(event.clone())
                .or_default()
                .extend(matchers.iter().cloned());
        }
        self.env
            .extend(later.env.iter().map(|(k, v)| (k.clone(), v.clone())));
        replace(&mut self.model, &later.model);
        self.mcp_servers.extend(
            later
                .mcp_servers
                .iter()
                .map(|(k, v)| (k.clone(), v.clone())),
        );
        replace(&mut self.mcp_tool_timeout, &later.mcp_tool_timeout);
        replace(&mut self.mcp_startup_timeout, &later.mcp_startup_timeout);
        replace(&mut self.bash_auto_background, &later.bash_auto_background);
        replace(&mut self.sandbox, &later.sandbox);
        replace(&mut self.teammate_mode, &later.teammate_mode);
        replace(&mut self.teammate_permissions, &later.teammate_permissions);
        replace(&mut self.store, &later.store);
        replace(&mut self.store_replicas, &later.store_replicas);
        replace(
            &mut self.max_concurrent_model_calls,
            &later.max_concurrent_model_calls,
        );
        replace(&mut self.context_window, &later.context_window);
        replace(&mut self.prompt_caching, &later.prompt_caching);
        self.pricing
            .extend(later.pricing.iter().map(|(k, v)| (k.clone(), *v)));
        self.other
            .extend(later.other.iter().map(|(k, v)| (k.clone(), v.clone())));
    }
}

impl Permissions {
    fn merge(&mut self, later: &Permissions) {
        append_new(&mut self.allow, &later.allow);
        append_new(&mut self.ask, &later.ask);
        append_new(&mut self.deny, &later.deny);
        replace(&mut self.default_mode, &later.default_mode);
        append_new(
            &mut self.additional_directories,
            &later.additional_directories,
        );
        replace(
            &mut self.disable_bypass_permissions_mode,
            &later.disable_bypass_permissions_mode,
        );
    }
}

/// Takes `later` when it is set.
fn replace<T: Clone>(value: &mut Option<T>, later: &Option<T>) {
    if later.is_some() {
        value.clone_from(later);
    }
}

/// Appends the entries of `later` that `list` does not hold yet.
fn append_new(list: &mut Vec<String>, later: &[String]) {
    for item in later {
        if !list.contains(item) {
            list.push(item.clone());
        }
    }
}
