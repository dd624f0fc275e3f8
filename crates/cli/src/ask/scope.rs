//! What "always" allows when a person answers a permission question with it: the command's
//! prefix (`Bash(cargo test:*)`), that one file (`Edit(./src/main.rs)`), the host fetched
//! (`WebFetch(domain:docs.rs)`, as Claude Code asks), or that one tool —
//! as permission rules, so the session's answers are matched by the same code as the settings'
//! rules. A command line the shell analysis cannot follow, or a path a rule cannot name
//! exactly, gets no "always": nothing narrower than the whole tool would cover it.

use std::path::Path;
use troupe_agent::permissions::{
    rule_name, CallInfo, Decision, PermissionMode, Policy, Rule, Rules,
};
use troupe_tools::shell::{self, Redirect};
use troupe_tools::Effect;

/// The rules "always" would add for a call, with how the question names them; `None` when no
/// rule narrower than the whole tool covers it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scope {
    /// The rules, as written in settings (`Bash(cargo test:*)`).
    pub rules: Vec<String>,
    /// How the question shows them (`"cargo test:*"`).
    pub label: String,
}

/// The scope of "always" for a call of `tool` with `input`, in `workspace`.
pub fn of(tool: &str, input: &serde_json::Value, workspace: &Path) -> Option<Scope> {
    let field = |name: &str| input.get(name).and_then(serde_json::Value::as_str);
    match rule_name(tool) {
        "Bash" => bash(field("command")?),
        "Edit" => file(field("path")?, workspace),
        "WebFetch" => {
            let host = troupe_tools::web_client::host_of(field("url")?)?;
            Some(Scope {
                rules: vec![format!("WebFetch(domain:{host})")],
                label: format!("{host:?}"),
            })
        }
        // Other tools (MCP tools, the web): the tool itself.
        "Read" | "Glob" | "Grep" => None,
        name => Some(Scope {
            rules: vec![name.to_string()],
            label: format!("{name:?}"),
        }),
    }
}

/// Programs whose second word names what they do (`cargo test`, `git push`): "always" covers
/// that subcommand only. For any other program the second word is an argument (`mkdir x`).
const WITH_SUBCOMMANDS: &[&str] = &[
    "apt",
    "apt-get",
    "brew",
    "bun",
    "bundle",
    "cargo",
    "composer",
    "deno",
    "docker",
    "dotnet",
    "gem",
    "gh",
    "git",
    "go",
    "gradle",
    "helm",
    "just",
    "kubectl",
    "make",
    "mix",
    "mvn",
    "nix",
    "npm",
    "npx",
    "pip",
    "pip3",
    "pnpm",
    "podman",
    "poetry",
    "rustup",
    "swift",
    "systemctl",
    "terraform",
    "uv",
    "yarn",
    "zig",
];

/// `Bash(words:*)` per command of the line: the program and, for a program with subcommands
/// (`cargo test`, `git status`), the subcommand too. A command writing a file through a
/// redirection gets its exact line, as a prefix rule never grants a redirection.
fn bash(command: &str) -> Option<Scope> {
    let analysis = shell::analyze(command.trim());
    if !analysis.is_understood() || analysis.commands.is_empty() {
        return None;
    }
    let mut specs: Vec<String> = Vec::new();
    for command in &analysis.commands {
        let spec = match command.redirect {
            Redirect::File => command.line(),
            Redirect::None => {
                let words: Vec<&str> = command.words.iter().map(|w| w.text.as_str()).collect();
                let program = words.first()?;
                match words.get(1) {
                    Some(sub) if WITH_SUBCOMMANDS.contains(program) && is_subcommand(sub) => {
                        format!("{program} {sub}:*")
                    }
                    _ => format!("{program}:*"),
                }
            }
        };
        if !specs.contains(&spec) {
            specs.push(spec);
        }
    }
    // The rule must parse back to what it says (no `:*` inside a word, no parenthesis).
    let rules: Vec<String> = specs.iter().map(|s| format!("Bash({s})")).collect();
    if specs.iter().any(|s| s.contains(['(', ')'])) || rules.iter().any(|r| Rule::parse(r).is_err())
    {
        return None;
    }
    let label = specs
        .iter()
        .map(|s| format!("{s:?}"))
        .collect::<Vec<_>>()
        .join(", ");
    Some(Scope { rules, label })
}

/// A word that names a subcommand rather than an argument: lowercase letters, digits, `-`,
/// not an option, not a path.
fn is_subcommand(word: &str) -> bool {
    !word.starts_with('-')
        && word.len() <= 32
        && word
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_')
        && word.chars().next().is_some_and(|c| c.is_ascii_lowercase())
}

/// `Edit(./path)` for a file inside the workspace, `Edit(//abs/path)` outside; none for a path
/// with glob characters (the rule would cover more than the file).
fn file(path: &str, workspace: &Path) -> Option<Scope> {
    if path.contains(['*', '?', '[', ']', '{', '}', '(', ')', '\\']) || path.trim().is_empty() {
        return None;
    }
    let raw = Path::new(path);
    let absolute = if raw.is_absolute() {
        raw.to_path_buf()
    } else {
        workspace.join(raw)
    };
    let spec = match absolute.strip_prefix(workspace) {
        Ok(rel) if !rel.as_os_str().is_empty() => {
            let rel = rel.to_str()?.trim_start_matches("./").to_string();
            if rel.split('/').any(|part| part == "..") {
                return None;
            }
            format!("./{rel}")
        }
        _ => format!("/{}", absolute.to_str()?),
    };
    let rule = format!("Edit({spec})");
    Rule::parse(&rule).ok()?;
    Some(Scope {
        rules: vec![rule],
        label: format!("{path:?}"),
    })
}

/// Whether `rules` (the session's "always" answers) allow a call of `tool` with `input`, by
/// the policy's own matching: a protected file or an unanalysable line is still asked about.
pub fn covers(rules: &[Rule], tool: &str, input: &serde_json::Value, workspace: &Path) -> bool {
    if rules.is_empty() {
        return false;
    }
    let policy = Policy::new(
        PermissionMode::Default,
        Rules {
            allow: rules.to_vec(),
            ..Rules::default()
        },
    );
    let effect = match rule_name(tool) {
        "Edit" => Effect::Edit,
        _ => Effect::Execute,
    };
    let call = CallInfo {
        tool,
        effect,
        input,
        workspace_root: workspace,
    };
    matches!(policy.decide(&call), Decision::Allow(_))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn rules(scope: &Scope) -> Vec<Rule> {
        scope
            .rules
            .iter()
            .map(|r| Rule::parse(r).unwrap())
            .collect()
    }

    #[test]
    fn always_for_a_command_covers_its_prefix_only() {
        let ws = Path::new("/ws");
        let scope = of("bash", &json!({"command": "cargo test --lib"}), ws).unwrap();
        assert_eq!(scope.rules, ["Bash(cargo test:*)"]);
        assert_eq!(scope.label, "\"cargo test:*\"");
        let rules = rules(&scope);
        let covered = |c: &str| covers(&rules, "bash", &json!({"command": c}), ws);
        assert!(covered("cargo test -p x"));
        assert!(!covered("cargo build"));
        assert!(!covered("cargo test && rm -rf /"));
        assert!(!covered("rm -rf /"));
    }

    #[test]
    fn every_command_of_a_line_is_named_and_unknown_lines_get_none() {
        let ws = Path::new("/ws");
        let scope = of("bash", &json!({"command": "make && mkdir build"}), ws).unwrap();
        assert_eq!(scope.rules, ["Bash(make:*)", "Bash(mkdir:*)"]);
        let scope = of("bash", &json!({"command": "git push origin"}), ws).unwrap();
        assert_eq!(scope.rules, ["Bash(git push:*)"]);
        assert!(of("bash", &json!({"command": "eval \"$X\""}), ws).is_none());
        assert!(of("bash", &json!({"command": "$(curl x)"}), ws).is_none());
    }

    #[test]
    fn always_for_a_file_covers_that_file() {
        let ws = Path::new("/ws");
        let scope = of("write_file", &json!({"path": "src/a.rs"}), ws).unwrap();
        assert_eq!(scope.rules, ["Edit(./src/a.rs)"]);
        let rules = rules(&scope);
        let covered = |p: &str| covers(&rules, "edit_file", &json!({"path": p}), ws);
        assert!(covered("src/a.rs") && covered("/ws/src/a.rs"));
        assert!(!covered("src/b.rs") && !covered("a.rs"));
        assert!(of("write_file", &json!({"path": "src/*.rs"}), ws).is_none());
        let outside = of("write_file", &json!({"path": "/tmp/x"}), ws).unwrap();
        assert_eq!(outside.rules, ["Edit(//tmp/x)"]);
    }

    #[test]
    fn always_for_a_fetch_covers_its_host() {
        let ws = Path::new("/ws");
        let fetch = |url: &str| json!({"url": url, "prompt": "?"});
        let scope = of("web_fetch", &fetch("https://Docs.rs/htmd"), ws).unwrap();
        assert_eq!(scope.rules, ["WebFetch(domain:docs.rs)"]);
        assert_eq!(scope.label, "\"docs.rs\"");
        let rules = rules(&scope);
        assert!(covers(
            &rules,
            "web_fetch",
            &fetch("http://docs.rs/other"),
            ws
        ));
        assert!(!covers(
            &rules,
            "web_fetch",
            &fetch("https://crates.io/"),
            ws
        ));
        assert!(of("web_fetch", &fetch("not a url"), ws).is_none());
    }
}
