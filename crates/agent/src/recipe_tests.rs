//! A role takes what the run resolved and changes only its own part.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code may panic on a broken fixture

use super::*;
use crate::extension::ExtensionContext;
use crate::permissions::PermissionMode;
use troupe_model::Provider;

fn recipe(mode: PermissionMode) -> Recipe {
    let env = |key: &str| match key {
        "ANTHROPIC_BASE_URL" => Some("http://127.0.0.1:9".to_string()),
        "ANTHROPIC_API_KEY" => Some("test".to_string()),
        _ => None,
    };
    let model =
        ModelConfig::resolve(Some(Provider::Anthropic), Some("run-model".into()), &env).unwrap();
    let client = model.build();
    let shared: SharedExtensions = Arc::new(|kind: &AgentKind| {
        vec![Arc::new(Marked(match kind {
            AgentKind::Main => "MAIN-SECTION".to_string(),
            AgentKind::Member { group } => format!("MEMBER-OF-{group}"),
            AgentKind::Subagent => "SUBAGENT-SECTION".to_string(),
        })) as Arc<dyn Extension>]
    });
    Recipe {
        max_tokens: 1234,
        policy: Policy::new(mode, Default::default()),
        shared,
        ..Recipe::new(model, client)
    }
}

/// An extension adding one prompt section.
struct Marked(String);

impl Extension for Marked {
    fn name(&self) -> &str {
        "marked"
    }
    fn prompt_sections(&self, _cx: &ExtensionContext<'_>) -> Vec<String> {
        vec![self.0.clone()]
    }
}

fn root(dir: &std::path::Path) -> Place {
    Place::Root {
        dir: dir.to_path_buf(),
        start: None,
    }
}

#[test]
fn a_role_gets_the_runs_model_limit_and_the_shared_extensions_in_its_kinds_form() {
    let ws = tempfile::tempdir().unwrap();
    let recipe = recipe(PermissionMode::AcceptEdits);
    let kinds = [
        (AgentKind::Main, "MAIN-SECTION"),
        (
            AgentKind::Member {
                group: "t".to_string(),
            },
            "MEMBER-OF-t",
        ),
        (AgentKind::Subagent, "SUBAGENT-SECTION"),
    ];
    for (kind, section) in kinds {
        let agent = recipe.build(Role::new(kind, "a", root(ws.path()))).unwrap();
        assert_eq!(agent.config().model, "run-model");
        assert_eq!(agent.config().max_tokens, 1234);
        assert_eq!(agent.policy().mode, PermissionMode::AcceptEdits);
        assert!(agent.system().contains(section), "{}", agent.system());
    }
    let own = recipe
        .build(
            Role::new(AgentKind::Subagent, "a", root(ws.path()))
                .model(Some("own-model".to_string()))
                .max_rounds(Some(7)),
        )
        .unwrap();
    assert_eq!(own.config().model, "own-model");
    assert_eq!(own.config().max_rounds, Some(7));
    assert_eq!(own.config().max_tokens, 1234, "the run's limit stays");
}

#[test]
fn a_role_may_tighten_the_runs_mode_never_loosen_it() {
    let ws = tempfile::tempdir().unwrap();
    let recipe = recipe(PermissionMode::AcceptEdits);
    let build = |asked| {
        recipe
            .build(Role::new(AgentKind::Subagent, "a", root(ws.path())).stricter_mode(Some(asked)))
            .unwrap()
            .policy()
            .mode
    };
    assert_eq!(build(PermissionMode::Plan), PermissionMode::Plan);
    assert_eq!(
        build(PermissionMode::BypassPermissions),
        PermissionMode::AcceptEdits
    );
}

#[test]
fn every_role_at_a_root_opens_the_runs_added_directories() {
    let ws = tempfile::tempdir().unwrap();
    let added = tempfile::tempdir().unwrap();
    let gone = added.path().canonicalize().unwrap().join("gone");
    let run = Recipe {
        added_dirs: vec![gone],
        ..recipe(PermissionMode::Default)
    };
    let kinds = [
        AgentKind::Main,
        AgentKind::Member {
            group: "t".to_string(),
        },
        AgentKind::Subagent,
    ];
    for kind in kinds {
        let err = run
            .build(Role::new(kind.clone(), "a", root(ws.path())))
            .err()
            .expect("an added directory that is gone refuses the build");
        assert!(
            matches!(err, BuildError::Workspace { .. }),
            "{kind:?}: {err}"
        );
    }
}

#[test]
fn a_model_switch_reaches_every_clone_and_only_agents_made_afterwards() {
    let ws = tempfile::tempdir().unwrap();
    let recipe = recipe(PermissionMode::Default);
    let team_copy = recipe.clone();
    let before = team_copy
        .build(Role::new(AgentKind::Subagent, "a", root(ws.path())))
        .unwrap();
    let mut switched = recipe.model();
    switched.model = "next-model".to_string();
    recipe.set_model(switched, recipe.client());
    assert_eq!(team_copy.model().model, "next-model");
    let after = team_copy
        .build(Role::new(AgentKind::Subagent, "b", root(ws.path())))
        .unwrap();
    assert_eq!(after.config().model, "next-model");
    assert_eq!(before.config().model, "run-model", "made before: unchanged");
}
