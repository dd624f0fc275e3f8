//! Which of the workspace's `.mcp.json` servers start, as Claude Code's settings choose them:
//! `disabledMcpjsonServers` are never started; when `enabledMcpjsonServers` lists servers, only
//! those start, unless `enableAllProjectMcpServers` is `true`. Without any of them every server
//! of a trusted workspace starts (troupe's workspace trust is the approval Claude Code asks
//! for one server at a time).

use serde_json::Value;
use troupe_settings::Settings;

/// The settings' choice of `.mcp.json` servers.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct McpJsonChoice {
    /// `enableAllProjectMcpServers`.
    all: bool,
    /// `enabledMcpjsonServers`.
    enabled: Vec<String>,
    /// `disabledMcpjsonServers`.
    disabled: Vec<String>,
}

impl McpJsonChoice {
    /// The choice `settings` make.
    pub fn of(settings: &Settings) -> McpJsonChoice {
        let names = |key: &str| -> Vec<String> {
            settings
                .other
                .get(key)
                .and_then(Value::as_array)
                .map(|list| {
                    list.iter()
                        .filter_map(Value::as_str)
                        .map(str::to_string)
                        .collect()
                })
                .unwrap_or_default()
        };
        McpJsonChoice {
            all: settings
                .other
                .get("enableAllProjectMcpServers")
                .and_then(Value::as_bool)
                .unwrap_or(false),
            enabled: names("enabledMcpjsonServers"),
            disabled: names("disabledMcpjsonServers"),
        }
    }

    /// Whether the `.mcp.json` server `name` starts.
    pub fn starts(&self, name: &str) -> bool {
        if self.disabled.iter().any(|n| n == name) {
            return false;
        }
        self.all || self.enabled.is_empty() || self.enabled.iter().any(|n| n == name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn choice(json: serde_json::Value) -> McpJsonChoice {
        let settings: Settings = serde_json::from_value(json).unwrap();
        McpJsonChoice::of(&settings)
    }

    #[test]
    fn disabled_wins_and_an_enabled_list_narrows_unless_all_are_enabled() {
        let none = choice(serde_json::json!({}));
        assert!(none.starts("any"));
        let listed = choice(serde_json::json!({
            "enabledMcpjsonServers": ["docs", "db"],
            "disabledMcpjsonServers": ["db"],
        }));
        assert!(listed.starts("docs"));
        assert!(!listed.starts("db"));
        assert!(!listed.starts("other"));
        let all = choice(serde_json::json!({
            "enableAllProjectMcpServers": true,
            "enabledMcpjsonServers": ["docs"],
            "disabledMcpjsonServers": ["db"],
        }));
        assert!(all.starts("other"));
        assert!(!all.starts("db"));
    }
}
