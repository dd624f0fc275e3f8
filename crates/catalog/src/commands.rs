//! Custom slash commands (Claude Code's `.claude/commands/**/*.md`, and the user's
//! `~/.claude/commands`): a Markdown file whose body becomes the prompt when a person (or a
//! script, `troupe -p "/name args"`) types `/name args`. A file in a subfolder is namespaced
//! by it (`frontend/component.md` is `/frontend:component`, also reachable as `/component`
//! when no other command has that name). Front matter is optional: `description`,
//! `argument-hint`, `allowed-tools` (permission rules granted while the command's turn runs)
//! and `model` (the model for that turn). The body's `$ARGUMENTS` is replaced by everything
//! after the name, `$1`…`$9` by the arguments one by one (shell-style quoting).

use crate::frontmatter::{self, Value};
use std::path::{Path, PathBuf};

/// The folders commands are looked for in, relative to the workspace and then to the home
/// directory; the first of a name wins (the project's over the user's).
const DIRS: [&str; 2] = [".claude/commands", ".troupe/commands"];

/// Where a command was defined.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// The workspace's `.claude/commands`.
    Project,
    /// The user's `~/.claude/commands`.
    User,
    /// A plugin's `commands/` (the namespace is the plugin's name).
    Plugin,
    /// A skill, invocable by its name.
    Skill,
}

impl Scope {
    /// `project` or `user`, as Claude Code labels commands.
    pub fn as_str(self) -> &'static str {
        match self {
            Scope::Project => "project",
            Scope::User => "user",
            Scope::Plugin => "plugin",
            Scope::Skill => "skill",
        }
    }
}

/// One custom slash command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SlashCommand {
    /// Its full name without the slash: the subfolders and the file name joined by `:`.
    pub name: String,
    /// The subfolders, joined by `:` (`None` at the top of the folder).
    pub namespace: Option<String>,
    /// Whose it is.
    pub scope: Scope,
    /// What it does: front matter `description`, else the body's first line.
    pub description: String,
    /// What arguments it takes, for help and completion (`argument-hint`).
    pub argument_hint: Option<String>,
    /// Permission rules granted while its turn runs (`allowed-tools`), as written.
    pub allowed_tools: Vec<String>,
    /// The model for its turn (`model`).
    pub model: Option<String>,
    /// The prompt template.
    pub body: String,
    /// The file.
    pub path: PathBuf,
}

impl SlashCommand {
    /// The name after its last `:` (`component` of `frontend:component`).
    pub fn short_name(&self) -> &str {
        self.name.rsplit(':').next().unwrap_or(&self.name)
    }

    /// Claude Code's label: `(project)`, `(user:git)`.
    pub fn label(&self) -> String {
        match &self.namespace {
            Some(ns) => format!("({}:{ns})", self.scope.as_str()),
            None => format!("({})", self.scope.as_str()),
        }
    }

    /// The prompt for `/name args`: `$ARGUMENTS` and `$1`…`$9` replaced; with neither in the
    /// body, arguments given are appended as `ARGUMENTS: …` (as Claude Code does).
    pub fn expand(&self, args: &str) -> String {
        let args = args.trim();
        let positional = split_args(args);
        let mut out = String::with_capacity(self.body.len() + args.len());
        let mut placeholder = false;
        let mut rest = self.body.as_str();
        while let Some(at) = rest.find('$') {
            out.push_str(&rest[..at]);
            let after = &rest[at + 1..];
            if let Some(tail) = after.strip_prefix("ARGUMENTS") {
                out.push_str(args);
                placeholder = true;
                rest = tail;
                continue;
            }
            let digits = after.chars().take_while(char::is_ascii_digit).count();
            match after[..digits].parse::<usize>() {
                Ok(n) if n >= 1 => {
                    out.push_str(positional.get(n - 1).map_or("", String::as_str));
                    placeholder = true;
                    rest = &after[digits..];
                }
                _ => {
                    out.push('$');
                    rest = after;
                }
            }
        }
        out.push_str(rest);
        if !placeholder && !args.is_empty() {
            out.push_str("\n\nARGUMENTS: ");
            out.push_str(args);
        }
        out
    }
}

/// The arguments one by one: shell-style words, or plain whitespace-separated words when the
/// quoting does not close.
fn split_args(args: &str) -> Vec<String> {
    shlex::split(args).unwrap_or_else(|| args.split_whitespace().map(str::to_string).collect())
}

/// A command file that could not be used, and why.
pub type SkippedCommand = crate::SkippedFile;

/// The commands found, and the files skipped.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Commands {
    /// Usable commands: the project's first, each folder sorted.
    pub commands: Vec<SlashCommand>,
    /// Files that were skipped (malformed front matter, a name found earlier).
    pub skipped: Vec<SkippedCommand>,
}

/// What a `/…` line names.
#[derive(Debug, PartialEq, Eq)]
pub enum Lookup<'a> {
    /// One command, and the arguments after its name.
    Found(&'a SlashCommand, &'a str),
    /// A short name several commands share: their full names.
    Ambiguous(Vec<&'a str>),
    /// No custom command of that name (it may be a built-in one).
    Unknown,
}

impl Commands {
    /// The full names, in order.
    pub fn names(&self) -> Vec<String> {
        self.commands.iter().map(|c| c.name.clone()).collect()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.commands.is_empty()
    }

    /// The command a line such as `/frontend:component Button` names: by full name, by
    /// `/frontend/component`, or by its short name when only one command has it.
    pub fn lookup<'a>(&'a self, line: &'a str) -> Lookup<'a> {
        let Some(rest) = line.trim_start().strip_prefix('/') else {
            return Lookup::Unknown;
        };
        let (name, args) = match rest.find(char::is_whitespace) {
            Some(at) => (&rest[..at], rest[at..].trim()),
            None => (rest, ""),
        };
        let name = name.replace('/', ":");
        if let Some(found) = self.commands.iter().find(|c| c.name == name) {
            return Lookup::Found(found, args);
        }
        let short: Vec<&SlashCommand> = self
            .commands
            .iter()
            .filter(|c| c.short_name() == name)
            .collect();
        match short.as_slice() {
            [] => Lookup::Unknown,
            [one] => Lookup::Found(one, args),
            many => Lookup::Ambiguous(many.iter().map(|c| c.name.as_str()).collect()),
        }
    }

    /// Help lines: `/name [hint]  description (label)`.
    pub fn help(&self) -> String {
        let mut out = String::new();
        for c in &self.commands {
            let hint = c
                .argument_hint
                .as_deref()
                .map(|h| format!(" {h}"))
                .unwrap_or_default();
            out.push_str(&format!(
                "  /{}{hint}  {} {}\n",
                c.name,
                c.description,
                c.label()
            ));
        }
        out
    }
}

/// Finds the commands of a workspace and its user (`home`: `None` for none).
pub fn load(workspace: &Path, home: Option<&Path>) -> Commands {
    let mut found = Commands::default();
    let is_md = |p: &Path| p.extension().is_some_and(|e| e == "md") && p.is_file();
    let scopes = [(Some(workspace), Scope::Project), (home, Scope::User)];
    for (base, scope) in scopes {
        let Some(base) = base else { continue };
        for dir in DIRS {
            let root = base.join(dir);
            for path in crate::files_under(&[dir], base, None, is_md) {
                match read_command(&root, &path, scope) {
                    Ok(c) if found.commands.iter().any(|o| o.name == c.name) => {
                        found.skipped.push(SkippedCommand {
                            why: format!("a command named '/{}' was found earlier", c.name),
                            path,
                        })
                    }
                    Ok(c) => found.commands.push(c),
                    Err(why) => found.skipped.push(SkippedCommand { path, why }),
                }
            }
        }
    }
    found
}

/// The commands of one folder or file (a plugin's `commands/`, or a path its manifest names),
/// each name put under `namespace` (`commit-commands:commit`). Missing paths give none.
pub fn load_path(path: &Path, scope: Scope, namespace: &str) -> Commands {
    let mut found = Commands::default();
    let is_md = |p: &Path| p.extension().is_some_and(|e| e == "md") && p.is_file();
    let (root, files) = match path.is_dir() {
        true => (path, crate::files_under(&[""], path, None, is_md)),
        false if is_md(path) => (path.parent().unwrap_or(path), vec![path.to_path_buf()]),
        false => return found,
    };
    for file in files {
        match read_command(root, &file, scope) {
            Ok(mut c) => {
                c.name = format!("{namespace}:{}", c.name);
                c.namespace = Some(match c.namespace {
                    Some(inner) => format!("{namespace}:{inner}"),
                    None => namespace.to_string(),
                });
                found.commands.push(c);
            }
            Err(why) => found.skipped.push(SkippedCommand { path: file, why }),
        }
    }
    found
}

/// A skill as a command: `/name args` runs its instructions, with the arguments after them.
pub fn of_skill(skill: &crate::Skill) -> SlashCommand {
    SlashCommand {
        name: skill.name.clone(),
        namespace: None,
        scope: Scope::Skill,
        description: skill.description.clone(),
        argument_hint: None,
        allowed_tools: skill.allowed_tools.clone(),
        model: None,
        body: format!(
            "Base directory for this skill: {}\n\n{}",
            skill.dir.display(),
            skill.body
        ),
        path: skill.dir.join("SKILL.md"),
    }
}

fn read_command(root: &Path, path: &Path, scope: Scope) -> Result<SlashCommand, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read it: {e}"))?;
    let starts_with_front_matter = text
        .trim_start_matches('\u{feff}')
        .lines()
        .next()
        .is_some_and(|l| l.trim_end() == "---");
    let doc = match starts_with_front_matter {
        true => frontmatter::parse(&text)?,
        false => frontmatter::Document::without_front_matter(&text),
    };
    let rel = path.strip_prefix(root).map_err(|_| "outside its folder")?;
    let mut parts: Vec<String> = rel
        .with_extension("")
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    let stem = parts.pop().ok_or("a file without a name")?;
    if stem.is_empty() || stem.chars().any(|c| c.is_whitespace() || c == ':') {
        return Err(format!(
            "'{stem}' cannot be a command name (no spaces or `:`); rename the file"
        ));
    }
    let namespace = (!parts.is_empty()).then(|| parts.join(":"));
    let name = match &namespace {
        Some(ns) => format!("{ns}:{stem}"),
        None => stem,
    };
    let description = doc
        .text("description")
        .map(str::to_string)
        .unwrap_or_else(|| {
            doc.body
                .lines()
                .map(|l| l.trim_start_matches('#').trim())
                .find(|l| !l.is_empty())
                .unwrap_or("")
                .to_string()
        });
    // As written: `[pr-number] [priority]` is a list (or no YAML at all), and text to a person.
    let argument_hint = doc.raw("argument-hint").map(str::to_string);
    let allowed_tools = match doc.fields.get("allowed-tools") {
        Some(Value::Text(t)) => troupe_agent::permissions::split_rule_list(t),
        Some(list) => list.as_list(),
        None => Vec::new(),
    };
    Ok(SlashCommand {
        name,
        namespace,
        scope,
        description,
        argument_hint,
        allowed_tools,
        model: doc
            .text("model")
            .filter(|m| *m != "inherit")
            .map(str::to_string),
        body: doc.body,
        path: path.to_path_buf(),
    })
}

#[cfg(test)]
#[path = "commands_tests.rs"]
mod tests;
