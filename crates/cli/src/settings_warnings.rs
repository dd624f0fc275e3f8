//! Everything the settings say that troupe does not do as written, gathered from the settings
//! themselves, the hooks and the permission rules.

use troupe_settings::Loaded;

/// Everything the settings say that troupe does not do as written, one line each, each once:
/// keys it does not honour or know, hooks it does not run, rules it leaves out.
pub fn warnings(loaded: &Loaded) -> Vec<String> {
    let keys = loaded.warnings.iter().map(|w| w.text.clone());
    let hooks = crate::hooks::warnings(loaded).into_iter().map(|w| w.text);
    let rules = troupe_agent::policy_warnings(&loaded.settings.permissions);
    let mut all: Vec<String> = Vec::new();
    for warning in keys.chain(hooks).chain(rules) {
        if !all.contains(&warning) {
            all.push(warning);
        }
    }
    all
}
