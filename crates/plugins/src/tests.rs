#![allow(clippy::unwrap_used)]

use super::marketplace::{self, SettingsView};
use super::*;
use serde_json::json;

fn write(root: &Path, rel: &str, text: &str) {
    let path = root.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// A plugin with one of each part.
fn plugin_at(root: &Path) {
    write(
        root,
        ".claude-plugin/plugin.json",
        r#"{"name": "kit", "version": "1.2.0", "description": "A kit", "commands": ["./extra/more.md"]}"#,
    );
    write(
        root,
        "commands/commit.md",
        "---\ndescription: Commit\n---\nCommit $ARGUMENTS\n",
    );
    write(root, "commands/git/push.md", "Push\n");
    write(root, "extra/more.md", "More\n");
    write(
        root,
        "agents/reviewer.md",
        "---\nname: reviewer\ndescription: Reviews\n---\nYou review.\n",
    );
    write(
        root,
        "skills/style/SKILL.md",
        "---\nname: style\ndescription: House style\n---\nUse it.\n",
    );
    write(
        root,
        "hooks/hooks.json",
        r#"{"hooks": {"SessionStart": [{"hooks": [{"type": "command", "command": "${CLAUDE_PLUGIN_ROOT}/start.sh"}]}]}}"#,
    );
    write(
        root,
        ".mcp.json",
        r#"{"mcpServers": {"kit-db": {"command": "${CLAUDE_PLUGIN_ROOT}/server", "args": ["--root", "$CLAUDE_PLUGIN_ROOT"]}}}"#,
    );
}

#[test]
fn a_plugin_folder_gives_namespaced_parts_and_expanded_paths() {
    let dir = tempfile::tempdir().unwrap();
    plugin_at(dir.path());
    let plugin = load(dir.path(), Origin::CommandLine, None).unwrap();
    let root = dir.path().canonicalize().unwrap();
    let root_text = root.display().to_string();
    assert_eq!(plugin.name(), "kit");
    assert_eq!(plugin.manifest.version.as_deref(), Some("1.2.0"));
    let mut names = plugin.commands.names();
    names.sort();
    assert_eq!(names, ["kit:commit", "kit:git:push", "kit:more"]);
    assert_eq!(plugin.agents.agents[0].name, "kit:reviewer");
    assert_eq!(plugin.skills.skills[0].name, "kit:style");
    let command = plugin.hooks["SessionStart"][0]["hooks"][0]["command"]
        .as_str()
        .unwrap();
    assert_eq!(
        command,
        format!("export CLAUDE_PLUGIN_ROOT='{root_text}'; {root_text}/start.sh")
    );
    assert_eq!(
        expand::without_export(command),
        format!("{root_text}/start.sh")
    );
    let server = &plugin.mcp_servers["kit-db"];
    assert_eq!(server["command"], json!(format!("{root_text}/server")));
    assert_eq!(server["args"][1], json!(root_text));
    assert_eq!(server["env"]["CLAUDE_PLUGIN_ROOT"], json!(root_text));
    assert!(plugin.skipped.is_empty(), "{:?}", plugin.skipped);
}

#[test]
fn a_folder_without_a_manifest_is_not_a_plugin() {
    let dir = tempfile::tempdir().unwrap();
    let err = load(dir.path(), Origin::CommandLine, None).unwrap_err();
    assert!(err.contains("no .claude-plugin/plugin.json"), "{err}");
}

#[test]
fn enabled_plugins_load_from_a_local_marketplace_and_remote_ones_warn() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    plugin_at(&ws.join("market/plugins/kit"));
    write(
        &ws.join("market"),
        marketplace::MARKETPLACE_FILE,
        r#"{"name": "mine", "plugins": [{"name": "kit", "source": "./plugins/kit"}]}"#,
    );
    let user = json!({
        "extraKnownMarketplaces": {
            "mine": {"source": {"source": "directory", "path": "./market"}},
            "far": {"source": {"source": "github", "repo": "someone/plugins"}}
        },
        "enabledPlugins": {"kit@mine": true, "other@far": true, "gone@mine": false}
    });
    let project = json!({"enabledPlugins": {"kit@mine": true}});
    let layers = [
        SettingsView {
            keys: user.as_object().unwrap(),
            project: false,
        },
        SettingsView {
            keys: project.as_object().unwrap(),
            project: true,
        },
    ];
    let (plugins, warnings) = marketplace::load_enabled(&ws, None, &layers);
    assert_eq!(plugins.len(), 1);
    assert_eq!(plugins[0].id, "kit@mine");
    assert_eq!(plugins[0].origin, Origin::Project, "the project enabled it");
    assert_eq!(warnings.len(), 2, "{warnings:?}");
    assert!(
        warnings
            .iter()
            .any(|w| w.contains("extraKnownMarketplaces.far: a github source")),
        "{warnings:?}"
    );
    assert!(
        warnings.iter().any(|w| w.contains("other@far")),
        "{warnings:?}"
    );
}
