//! Memory: the instruction files an agent reads into its system prompt, in the places Claude
//! Code and Codex users keep them — the user's (`~/.troupe/AGENTS.md`, `~/.claude/CLAUDE.md`),
//! the project's in every folder from the repository root down to the workspace (`AGENTS.md`,
//! `CLAUDE.md`, `.claude/CLAUDE.md`, `CLAUDE.local.md`), and troupe's notes
//! (`.troupe/memory/MEMORY.md`) — with Claude Code's `@path` imports.
//!
//! An import is followed only to a file inside the project (the repository root, or the
//! workspace when it is not in a repository) or the user's home, after symlinks are resolved,
//! at most [`MAX_IMPORT_DEPTH`] hops deep; anything else is skipped and reported, never read.
//! A file reached twice (a `CLAUDE.md` symlinked to `AGENTS.md`, two imports of one file) is
//! read once. A file a path-specific `Read` deny rule covers (as named or where it leads) is
//! not read either: an import of it is skipped and reported. Everything together is cut at [`MEMORY_BUDGET`] bytes so memory cannot crowd out
//! the conversation.

use crate::memory_excludes::Excludes;
use std::collections::HashSet;
use std::fs;
use std::path::{Path, PathBuf};
use troupe_tools::Concealed;

/// Memory text larger than this (all files together) is cut.
pub const MEMORY_BUDGET: usize = 40_000;
/// How many `@path` hops are followed from a memory file.
pub const MAX_IMPORT_DEPTH: usize = 5;

/// The project memory files looked for in each folder, in this order.
const PROJECT_FILES: [&str; 4] = [
    "AGENTS.md",
    "CLAUDE.md",
    ".claude/CLAUDE.md",
    "CLAUDE.local.md",
];
/// The user memory files, relative to the home directory.
const USER_FILES: [&str; 2] = [".troupe/AGENTS.md", ".claude/CLAUDE.md"];
/// troupe's own notes file, relative to the workspace.
pub const NOTES_FILE: &str = ".troupe/memory/MEMORY.md";

/// Whose memory a file is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// The user's, for every project.
    User,
    /// The project's (the repository root down to the workspace).
    Project,
    /// troupe's notes file.
    Notes,
}

/// One file that was read into memory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadedFile {
    /// Where it is.
    pub path: PathBuf,
    /// How people see it: relative to the workspace or `~`.
    pub shown: String,
    /// Whose it is.
    pub scope: Scope,
    /// The file whose `@path` brought it in, as shown; `None` for a file found in its place.
    pub imported_by: Option<String>,
    /// Bytes that went into the prompt.
    pub bytes: usize,
    /// True when the budget cut it (or left it out entirely).
    pub truncated: bool,
}

/// An import that was not followed, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkippedImport {
    /// The `@path` as written.
    pub import: String,
    /// The file it was written in, as shown.
    pub from: String,
    /// Why it was not read.
    pub why: String,
}

/// What was loaded, and the text for the system prompt.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Memory {
    /// The files read, in prompt order.
    pub files: Vec<LoadedFile>,
    /// Imports that were not followed.
    pub skipped: Vec<SkippedImport>,
    user_text: String,
    project_text: String,
}

impl Memory {
    /// The user memory as a prompt section body (empty when there is none).
    pub fn user_text(&self) -> &str {
        &self.user_text
    }

    /// The project memory (and notes) as a prompt section body (empty when there is none).
    pub fn project_text(&self) -> &str {
        &self.project_text
    }

    /// A readable listing of what was loaded and skipped (for `/memory`).
    pub fn describe(&self) -> String {
        if self.files.is_empty() && self.skipped.is_empty() {
            return "no memory files (AGENTS.md, CLAUDE.md, .troupe/memory/MEMORY.md) were found"
                .to_string();
        }
        let mut out = String::new();
        for f in &self.files {
            let scope = match f.scope {
                Scope::User => "user",
                Scope::Project => "project",
                Scope::Notes => "notes",
            };
            out.push_str(&format!("{:<8} {} ({} bytes", scope, f.shown, f.bytes));
            if f.truncated {
                out.push_str(", cut at the memory budget");
            }
            if let Some(by) = &f.imported_by {
                out.push_str(&format!(", imported by {by}"));
            }
            out.push_str(")\n");
        }
        for s in &self.skipped {
            out.push_str(&format!("skipped  {} in {}: {}\n", s.import, s.from, s.why));
        }
        out
    }
}

/// The files `memory` read, as the lifecycle tells them (Claude Code's memory types:
/// `CLAUDE.local.md` is `Local`, the user's `User`, the rest `Project`).
pub fn instruction_files(memory: &Memory) -> Vec<crate::lifecycle::InstructionFile> {
    memory
        .files
        .iter()
        .map(|f| crate::lifecycle::InstructionFile {
            path: f.path.clone(),
            memory_type: match f.scope {
                Scope::User => "User",
                _ if f.path.ends_with("CLAUDE.local.md") => "Local",
                Scope::Project | Scope::Notes => "Project",
            },
            imported_by: f.imported_by.as_ref().and_then(|by| {
                let parent = memory.files.iter().find(|p| &p.shown == by)?;
                Some(parent.path.clone())
            }),
        })
        .collect()
}

/// Which memory files are read, by Claude Code's setting sources (`--setting-sources`, the
/// SDK's `setting_sources`): the user's, the project's, `CLAUDE.local.md`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemorySources {
    /// `~/.claude/CLAUDE.md`, `~/.troupe/AGENTS.md`.
    pub user: bool,
    /// `AGENTS.md`, `CLAUDE.md`, `.claude/CLAUDE.md`, troupe's notes.
    pub project: bool,
    /// `CLAUDE.local.md`.
    pub local: bool,
}

impl Default for MemorySources {
    fn default() -> MemorySources {
        MemorySources {
            user: true,
            project: true,
            local: true,
        }
    }
}

/// Reads every memory file for an agent working in `workspace`; `home` is the user's home
/// directory (`None`: no user memory). Unreadable files are skipped: memory is advice, and a
/// missing file is the common case.
pub fn load(workspace: &Path, home: Option<&Path>) -> Memory {
    load_sources(
        workspace,
        home,
        MemorySources::default(),
        &Concealed::default(),
    )
}

/// Like [`load`], reading only the files of `sources`, and none that `concealed` hides (the
/// files `Read` deny rules cover).
pub fn load_sources(
    workspace: &Path,
    home: Option<&Path>,
    sources: MemorySources,
    concealed: &Concealed,
) -> Memory {
    load_excluding(workspace, home, sources, concealed, &Excludes::default())
}

/// Like [`load_sources`], leaving out the files `excludes` names (`claudeMdExcludes`).
pub fn load_excluding(
    workspace: &Path,
    home: Option<&Path>,
    sources: MemorySources,
    concealed: &Concealed,
    excludes: &Excludes,
) -> Memory {
    let home = home.filter(|_| sources.user);
    let project_root = repository_root(workspace).unwrap_or_else(|| workspace.to_path_buf());
    let mut loader = Loader {
        workspace,
        home,
        allowed: [Some(project_root.as_path()), home]
            .into_iter()
            .flatten()
            .filter_map(|p| fs::canonicalize(p).ok())
            .collect(),
        seen: HashSet::new(),
        concealed,
        excludes,
        budget: MEMORY_BUDGET,
        memory: Memory::default(),
    };
    if let Some(home) = home {
        let mut text = String::new();
        for name in USER_FILES {
            loader.file(&home.join(name), Scope::User, None, 0, &mut text);
        }
        loader.memory.user_text = text;
    }
    let mut text = String::new();
    for dir in folders_down_to(&project_root, workspace) {
        for name in PROJECT_FILES {
            let wanted = match name {
                "CLAUDE.local.md" => sources.local,
                _ => sources.project,
            };
            if wanted {
                loader.file(&dir.join(name), Scope::Project, None, 0, &mut text);
            }
        }
    }
    if sources.project {
        loader.file(
            &workspace.join(NOTES_FILE),
            Scope::Notes,
            None,
            0,
            &mut text,
        );
    }
    loader.memory.project_text = text;
    loader.memory
}

/// The project memory file a `#` note is appended to: the workspace's `AGENTS.md` or
/// `CLAUDE.md`, whichever exists first, else a new `CLAUDE.md`.
pub fn note_file(workspace: &Path) -> PathBuf {
    ["AGENTS.md", "CLAUDE.md"]
        .iter()
        .map(|n| workspace.join(n))
        .find(|p| p.is_file())
        .unwrap_or_else(|| workspace.join("CLAUDE.md"))
}

/// Appends a note (a `# remember this` line typed in the REPL) to the project memory file as
/// a list item, and returns the file.
pub fn append_note(workspace: &Path, note: &str) -> std::io::Result<PathBuf> {
    use std::io::Write;
    let path = note_file(workspace);
    let existing = fs::read(&path).unwrap_or_default();
    let mut file = fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)?;
    let mut line = String::new();
    if !existing.is_empty() && !existing.ends_with(b"\n") {
        line.push('\n');
    }
    line.push_str(&format!("- {}\n", note.trim()));
    file.write_all(line.as_bytes())?;
    file.sync_all()?;
    // The person wrote it: the next agent reads the file with the note.
    crate::memory_snapshot::forget(&path);
    if let Ok(real) = fs::canonicalize(&path) {
        crate::memory_snapshot::forget(&real);
    }
    Ok(path)
}

struct Loader<'a> {
    workspace: &'a Path,
    home: Option<&'a Path>,
    /// Canonical folders imports may reach.
    allowed: Vec<PathBuf>,
    /// Canonical paths already read.
    seen: HashSet<PathBuf>,
    /// What `Read` deny rules keep from being read.
    concealed: &'a Concealed,
    /// What `claudeMdExcludes` leaves out.
    excludes: &'a Excludes,
    budget: usize,
    memory: Memory,
}

impl Loader<'_> {
    /// Reads one memory file (if it exists and was not read yet) into `out`, then its imports.
    fn file(
        &mut self,
        path: &Path,
        scope: Scope,
        imported_by: Option<&str>,
        depth: usize,
        out: &mut String,
    ) {
        // As this process first found it (see `memory_snapshot`).
        let Some((canonical, text)) = crate::memory_snapshot::read(path) else {
            return;
        };
        if !self.seen.insert(canonical.clone()) {
            return;
        }
        if self.excludes.excludes(path, &canonical) {
            return;
        }
        // An import was checked with a note; a file found in its place is left out quietly.
        if imported_by.is_none() && self.denied(path, &canonical) {
            return;
        }
        let text = text.trim();
        if text.is_empty() {
            return;
        }
        let shown = self.show(path);
        let (kept, truncated) = cut(text, self.budget);
        self.budget -= kept.len();
        if !kept.is_empty() {
            match imported_by {
                None => out.push_str(&format!("From {shown}:\n")),
                Some(by) => out.push_str(&format!("From {shown} (imported by {by}):\n")),
            }
            out.push_str(kept);
            if truncated {
                out.push_str("\n[… memory cut at its budget]");
            }
            out.push_str("\n\n");
        }
        self.memory.files.push(LoadedFile {
            path: path.to_path_buf(),
            shown: shown.clone(),
            scope,
            imported_by: imported_by.map(str::to_string),
            bytes: kept.len(),
            truncated,
        });
        let base = canonical
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_default();
        for import in imports(text) {
            if depth + 1 > MAX_IMPORT_DEPTH {
                self.skip(&import, &shown, "imports nest too deep");
                continue;
            }
            let target = match (import.strip_prefix("~/"), self.home) {
                (Some(rest), Some(home)) => home.join(rest),
                (Some(_), None) => {
                    self.skip(&import, &shown, "no home directory is known");
                    continue;
                }
                (None, _) => base.join(&import),
            };
            let Ok(resolved) = fs::canonicalize(&target) else {
                self.skip(&import, &shown, "no such file");
                continue;
            };
            if !self.allowed.iter().any(|root| resolved.starts_with(root)) {
                self.skip(
                    &import,
                    &shown,
                    "outside the project and the home directory",
                );
                continue;
            }
            if self.denied(&target, &resolved) {
                self.skip(
                    &import,
                    &shown,
                    "a Read deny rule keeps the file from being read",
                );
                continue;
            }
            self.file(&target, scope, Some(&shown), depth + 1, out);
        }
    }

    /// Whether a `Read` deny rule covers a file, as named or where it really leads.
    fn denied(&self, named: &Path, canonical: &Path) -> bool {
        self.concealed.hides(named, self.workspace)
            || self.concealed.hides(canonical, self.workspace)
    }

    fn skip(&mut self, import: &str, from: &str, why: &str) {
        self.memory.skipped.push(SkippedImport {
            import: format!("@{import}"),
            from: from.to_string(),
            why: why.to_string(),
        });
    }

    /// A path as people see it: relative to the workspace, or under `~`.
    fn show(&self, path: &Path) -> String {
        if let Ok(rel) = path.strip_prefix(self.workspace) {
            return rel.display().to_string();
        }
        if let Some(Ok(rel)) = self.home.map(|h| path.strip_prefix(h)) {
            return format!("~/{}", rel.display());
        }
        path.display().to_string()
    }
}

/// `text` cut to at most `budget` bytes on a character boundary, and whether it was cut.
fn cut(text: &str, budget: usize) -> (&str, bool) {
    if text.len() <= budget {
        return (text, false);
    }
    let mut end = budget;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    (&text[..end], true)
}

/// The `@path` imports in a memory file: words starting with `@` at the start of a line or
/// after whitespace, that look like paths (contain `/` or `.`, or start with `~/`), outside
/// code fences and inline code spans. Trailing punctuation is not part of the path.
fn imports(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        let mut in_code = false;
        let mut prev = ' ';
        let mut chars = line.char_indices().peekable();
        while let Some((i, c)) = chars.next() {
            if c == '`' {
                in_code = !in_code;
            } else if c == '@' && !in_code && prev.is_whitespace() {
                let rest = &line[i + 1..];
                let end = rest
                    .find(|ch: char| ch.is_whitespace() || ch == '`')
                    .unwrap_or(rest.len());
                let word = rest[..end].trim_end_matches(['.', ',', ';', ':', ')', '!', '?']);
                if !word.is_empty() && (word.contains('/') || word.contains('.')) {
                    found.push(word.to_string());
                }
                while chars.peek().is_some_and(|(j, _)| *j < i + 1 + end) {
                    chars.next();
                }
                prev = 'x';
                continue;
            }
            prev = c;
        }
    }
    found
}

/// The nearest folder at or above `dir` that holds a `.git` (a repository or a worktree).
fn repository_root(dir: &Path) -> Option<PathBuf> {
    dir.ancestors()
        .find(|d| d.join(".git").exists())
        .map(Path::to_path_buf)
}

/// The folders from `root` down to `dir` (both included); just `dir` when it is not under
/// `root`.
fn folders_down_to(root: &Path, dir: &Path) -> Vec<PathBuf> {
    let mut chain: Vec<PathBuf> = dir
        .ancestors()
        .take_while(|d| d.starts_with(root))
        .map(Path::to_path_buf)
        .collect();
    if chain.is_empty() {
        chain.push(dir.to_path_buf());
    }
    chain.reverse();
    chain
}

#[cfg(test)]
#[path = "memory_tests.rs"]
mod tests;
