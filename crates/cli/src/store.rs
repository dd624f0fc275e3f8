//! Which backend holds a team, decided in one place for every command: `--store`, else
//! `TROUPE_STORE` (clap reads both), else the settings' `"store"`, else the file store in the
//! workspace's `.troupe/`. A NATS server is `nats://[user:password@]host:4222[?creds=FILE]`, a
//! cluster `nats://a:4222,nats://b:4222` (or `nats://a:4222,b:4222`); the copies it keeps are
//! `?replicas=N`, else the settings' `"storeReplicas"`, else `min(3, servers in the cluster)`.

use crate::nats::NatsUrl;
use anyhow::{Context, Result};
use std::path::Path;
use troupe_settings::Settings;
use troupe_store::SharedStore;

pub use crate::secrets::STORE_VAR;

/// Where a team's state lives.
#[derive(Debug, Clone)]
pub enum StoreChoice {
    /// `.troupe/teams/<team>/` in the workspace.
    File,
    /// A NATS JetStream server; the text as given (credentials included) and parsed.
    Nats(String, NatsUrl),
}

impl StoreChoice {
    /// The store as a `--store` value (credentials included: for the environment of teammate
    /// processes, never for display).
    pub fn spec(&self) -> &str {
        match self {
            StoreChoice::File => "file",
            StoreChoice::Nats(text, _) => text,
        }
    }

    /// Where, for people (no credentials).
    pub fn describe(&self, troupe_dir: &Path) -> String {
        match self {
            StoreChoice::File => troupe_dir.display().to_string(),
            StoreChoice::Nats(_, url) => url.display(),
        }
    }
}

/// Decides the backend from the flag (or `TROUPE_STORE`) and the settings.
pub fn choose(flag: Option<&str>, settings: Option<&Settings>) -> Result<StoreChoice> {
    let text = flag
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .or_else(|| settings.and_then(|s| s.store.clone()));
    match text.as_deref() {
        None | Some("file") => Ok(StoreChoice::File),
        Some(text) => Ok(StoreChoice::Nats(
            text.to_string(),
            crate::nats::store_url(text, settings)?,
        )),
    }
}

/// Opens (creating as needed) `team`'s store; `troupe_dir` is the workspace's `.troupe`.
pub async fn open(choice: &StoreChoice, troupe_dir: &Path, team: &str) -> Result<SharedStore> {
    let store = match choice {
        StoreChoice::File => troupe_store::file::open(troupe_dir, team)?,
        StoreChoice::Nats(_, url) => crate::nats::open(url, troupe_dir, team).await?,
    };
    Ok(store)
}

/// Opens `team`'s store only if a lead (or `troupe task create`) started it; `None` otherwise.
pub async fn open_existing(
    choice: &StoreChoice,
    troupe_dir: &Path,
    team: &str,
) -> Result<Option<SharedStore>> {
    match choice {
        StoreChoice::File => Ok(troupe_store::file::exists(troupe_dir, team)
            .then(|| troupe_store::file::open(troupe_dir, team))
            .transpose()?),
        StoreChoice::Nats(_, url) => Ok(crate::nats::open_existing(url, troupe_dir, team).await?),
    }
}

/// The store of a workspace command (`troupe team`, `task`, `worktree`): its flag, else the
/// workspace's settings, as its trust leaves them (a folder's own `store` needs trust).
pub fn choose_for(flag: Option<&str>, workspace: &Path) -> Result<StoreChoice> {
    if flag.is_some_and(|f| !f.is_empty()) {
        return choose(flag, None);
    }
    let mut loaded = crate::settings::load(workspace, None)
        .context("reading the workspace's settings (for its \"store\")")?;
    let root = workspace
        .canonicalize()
        .unwrap_or_else(|_| workspace.to_path_buf());
    crate::trust::apply(&root, &mut loaded, false, crate::trust::Asking::Script)?;
    choose(None, Some(&loaded.settings))
}

#[cfg(all(test, feature = "nats"))]
mod tests {
    use super::*;

    #[test]
    fn the_flag_wins_over_the_settings_and_file_is_the_default() {
        let settings = Settings {
            store: Some("nats://from-settings:4222".into()),
            ..Settings::default()
        };
        assert!(matches!(choose(None, None).unwrap(), StoreChoice::File));
        assert!(matches!(choose(Some(""), None).unwrap(), StoreChoice::File));
        let from_settings = choose(None, Some(&settings)).unwrap();
        assert_eq!(from_settings.spec(), "nats://from-settings:4222");
        let flag = choose(Some("nats://u:secret@flag:1"), Some(&settings)).unwrap();
        assert_eq!(flag.spec(), "nats://u:secret@flag:1");
        assert_eq!(flag.describe(Path::new("/w/.troupe")), "nats://flag:1");
        assert!(matches!(
            choose(Some("file"), Some(&settings)).unwrap(),
            StoreChoice::File
        ));
        let replicated = Settings {
            store_replicas: Some(2),
            ..settings.clone()
        };
        let chosen = choose(None, Some(&replicated)).unwrap();
        assert!(matches!(chosen, StoreChoice::Nats(_, ref u) if u.replicas == Some(2)));
        let url_wins = choose(Some("nats://a,b?replicas=1"), Some(&replicated)).unwrap();
        assert!(matches!(url_wins, StoreChoice::Nats(_, ref u) if u.replicas == Some(1)));
        let bad = choose(Some("redis://x"), None).unwrap_err().to_string();
        assert!(bad.contains("nats://"), "{bad}");
    }
}
