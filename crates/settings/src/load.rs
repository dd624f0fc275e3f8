//! Which settings files exist for a workspace, in what order they apply, and reading them.

use crate::{Settings, SettingsError, Warning};
use std::path::{Path, PathBuf};

/// Where a settings layer comes from; later scopes win.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Scope {
    /// The person's own settings (`~/.troupe`, `~/.claude`).
    User,
    /// The project's committed settings (`.troupe/settings.json`, `.claude/settings.json`).
    Project,
    /// The project's uncommitted settings (`*.local.json`).
    Local,
    /// `--settings <file-or-json>`.
    CommandLine,
}

impl Scope {
    /// The scope's name as `troupe config` shows it.
    pub fn as_str(self) -> &'static str {
        match self {
            Scope::User => "user",
            Scope::Project => "project",
            Scope::Local => "local",
            Scope::CommandLine => "command line",
        }
    }
}

/// One settings document that was read.
#[derive(Debug, Clone, PartialEq)]
pub struct Layer {
    /// Its scope.
    pub scope: Scope,
    /// The file it was read from, or `--settings` for inline JSON.
    pub origin: String,
    /// What it said.
    pub settings: Settings,
}

/// The effective settings and every layer they were merged from, lowest precedence first.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Loaded {
    /// The merged result.
    pub settings: Settings,
    /// The documents that were read, in the order they were applied.
    pub layers: Vec<Layer>,
    /// What the documents say that troupe does not do as written, each warning once.
    pub warnings: Vec<Warning>,
}

/// The settings files of `workspace`, lowest precedence first: Claude Code's file before
/// troupe's within each scope, so troupe's own file wins where both speak.
pub fn settings_files(workspace: &Path, home: Option<&Path>) -> Vec<(Scope, PathBuf)> {
    let mut files = Vec::with_capacity(6);
    if let Some(home) = home {
        files.push((Scope::User, home.join(".claude/settings.json")));
        files.push((Scope::User, home.join(".troupe/settings.json")));
    }
    files.push((Scope::Project, workspace.join(".claude/settings.json")));
    files.push((Scope::Project, workspace.join(".troupe/settings.json")));
    files.push((Scope::Local, workspace.join(".claude/settings.local.json")));
    files.push((Scope::Local, workspace.join(".troupe/settings.local.json")));
    files
}

/// Reads every settings file of `workspace` that exists, then `--settings` (a path, or JSON when
/// it starts with `{`), and merges them. A missing file is skipped; any other problem is an error
/// naming the file.
pub fn load(
    workspace: &Path,
    home: Option<&Path>,
    command_line: Option<&str>,
) -> Result<Loaded, SettingsError> {
    load_sources(
        workspace,
        home,
        command_line,
        &[Scope::User, Scope::Project, Scope::Local],
    )
}

/// Like [`load`], reading only the files of the scopes in `sources` (Claude Code's
/// `--setting-sources user,project,local`); `--settings` is always read.
pub fn load_sources(
    workspace: &Path,
    home: Option<&Path>,
    command_line: Option<&str>,
    sources: &[Scope],
) -> Result<Loaded, SettingsError> {
    let mut loaded = Loaded::default();
    let files = settings_files(workspace, home)
        .into_iter()
        .filter(|(scope, _)| sources.contains(scope));
    for (scope, path) in files {
        if let Some(checked) = read_file(&path)? {
            loaded.push(scope, path.display().to_string(), checked);
        }
    }
    if let Some(given) = command_line {
        let trimmed = given.trim_start();
        if trimmed.starts_with('{') {
            let checked = Settings::parse_checked(trimmed, "--settings")?;
            loaded.push(Scope::CommandLine, "--settings".to_string(), checked);
        } else {
            let path = PathBuf::from(given);
            match read_file(&path)? {
                Some(checked) => {
                    loaded.push(Scope::CommandLine, path.display().to_string(), checked)
                }
                None => {
                    return Err(SettingsError::Io {
                        path,
                        source: std::io::Error::new(
                            std::io::ErrorKind::NotFound,
                            "no such file (given with --settings)",
                        ),
                    })
                }
            }
        }
    }
    Ok(loaded)
}

impl Loaded {
    fn push(&mut self, scope: Scope, origin: String, checked: (Settings, Vec<Warning>)) {
        let (settings, warnings) = checked;
        for warning in warnings {
            self.warn(warning);
        }
        self.settings.merge(&settings);
        self.layers.push(Layer {
            scope,
            origin,
            settings,
        });
    }

    /// Adds a warning unless the same one is there already (a key troupe does not honour is
    /// said once, however many files set it).
    pub fn warn(&mut self, warning: Warning) {
        if !self.warnings.iter().any(|w| w.text == warning.text) {
            self.warnings.push(warning);
        }
    }
}

/// One file's settings and warnings; `None` when it does not exist.
fn read_file(path: &Path) -> Result<Option<(Settings, Vec<Warning>)>, SettingsError> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(source) => {
            return Err(SettingsError::Io {
                path: path.to_path_buf(),
                source,
            })
        }
    };
    Settings::parse_checked(&text, &path.display().to_string()).map(Some)
}
