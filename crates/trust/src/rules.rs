//! Which permission settings of a folder loosen: modes that ask less than the default, and
//! allow rules that grant a whole tool, name the control plane (what makes git or troupe run
//! programs or grant permissions: `.git`, `.claude`, `.troupe`, `.mcp.json`, the hook scripts
//! the settings name) or reach outside the workspace.

use troupe_agent::permissions::{rule_name, ProtectedPaths};
use troupe_settings::Loaded;

/// Directory and file names whose contents are troupe's or git's control plane.
const CONTROL_NAMES: [&str; 4] = [".git", ".claude", ".troupe", ".mcp.json"];

/// The hook scripts the settings of a run name (every layer's: a user's hook may run a
/// workspace script), relative to the workspace root as written.
#[derive(Debug, Clone, Default)]
pub struct ControlPlane {
    scripts: Vec<String>,
}

impl ControlPlane {
    /// The control plane `loaded` defines.
    pub fn of(loaded: &Loaded) -> ControlPlane {
        let mut scripts: Vec<String> = Vec::new();
        for layer in &loaded.layers {
            for path in ProtectedPaths::from_hooks(&layer.settings.hooks).paths() {
                let path = normal(&path.display().to_string());
                if !path.is_empty() && !scripts.contains(&path) {
                    scripts.push(path);
                }
            }
        }
        ControlPlane { scripts }
    }

    /// Whether `word` (a path as a rule spells it) is one of the hook scripts.
    fn is_script(&self, word: &str) -> bool {
        let word = normal(word);
        !word.is_empty()
            && self
                .scripts
                .iter()
                .any(|s| word == *s || word.ends_with(&format!("/{s}")))
    }
}

/// Modes that ask less than the default.
pub fn loosening_mode(mode: &str) -> bool {
    matches!(
        mode,
        "bypassPermissions" | "acceptEdits" | "dontAsk" | "auto"
    )
}

/// Whether an allow rule needs trust: it grants a whole tool, names a control-plane path, or
/// (for the file tools) reaches outside the workspace (`~/…`, `//abs`, `..`).
pub fn loosening_allow(rule: &str, plane: &ControlPlane) -> bool {
    if whole_tool(rule) {
        return true;
    }
    let Some((tool, spec)) = rule
        .trim()
        .split_once('(')
        .map(|(tool, rest)| (tool.trim(), rest.trim_end().trim_end_matches(')').trim()))
    else {
        return true;
    };
    let file_tool = matches!(rule_name(tool), "Read" | "Edit" | "Glob" | "Grep");
    if file_tool {
        let outside =
            spec.starts_with('~') || spec.starts_with("//") || spec.split('/').any(|c| c == "..");
        return outside || names_control_path(spec, true) || plane.is_script(spec);
    }
    // A command or anything else: any word that spells a control-plane path.
    spec.split(|c: char| c.is_whitespace() || "\"'`:;|&()<>=,".contains(c))
        .filter(|w| !w.is_empty())
        .any(|w| names_control_path(w, false) || plane.is_script(w))
}

/// An allow rule for a whole tool (`Bash`, `Edit`, `Bash(*)`, `mcp__server`): no specifier,
/// or one that matches everything.
pub fn whole_tool(rule: &str) -> bool {
    match rule.trim().split_once('(') {
        None => true,
        Some((_, rest)) => {
            let spec = rest.trim_end().trim_end_matches(')').trim();
            matches!(spec, "" | "*" | ":*" | "**" | "/**" | "//**")
        }
    }
}

/// Whether a path spells a control-plane name as one of its components. With `globs` (a file
/// rule's pattern), a wildcard component that could match such a name counts too where it
/// could reach the workspace root (the first component: `**/config`, `*.json`, `.*`) or is
/// more than a bare `*`/`**` further down (`src/.g*`).
fn names_control_path(path: &str, globs: bool) -> bool {
    let path = path.trim_start_matches("./").trim_start_matches('/');
    path.split('/')
        .filter(|c| !c.is_empty() && *c != ".")
        .enumerate()
        .any(|(at, component)| {
            if CONTROL_NAMES.contains(&component) {
                return true;
            }
            let wild = component.contains(['*', '?', '[', '{']);
            let bare = matches!(component, "*" | "**");
            globs && wild && (at == 0 || !bare) && CONTROL_NAMES.iter().any(|n| glob(component, n))
        })
}

/// Whether the glob `pattern` (`*`, `?`; a `[` or `{` matches anything, to be safe) can match
/// the whole of `name`.
fn glob(pattern: &str, name: &str) -> bool {
    if pattern.contains(['[', '{']) {
        return true;
    }
    fn go(p: &[u8], n: &[u8]) -> bool {
        match (p.first(), n.first()) {
            (None, None) => true,
            (Some(b'*'), _) => go(&p[1..], n) || (!n.is_empty() && go(p, &n[1..])),
            (Some(b'?'), Some(_)) => go(&p[1..], &n[1..]),
            (Some(a), Some(b)) if a == b => go(&p[1..], &n[1..]),
            _ => false,
        }
    }
    go(pattern.as_bytes(), name.as_bytes())
}

/// A path as compared: without quotes, `./` and a leading `/`, and without the project-dir
/// variables a hook command may start it with.
fn normal(path: &str) -> String {
    let unquoted = path.replace(['"', '\''], "");
    let mut path = unquoted.as_str();
    for var in [
        "${CLAUDE_PROJECT_DIR}",
        "$CLAUDE_PROJECT_DIR",
        "${TROUPE_PROJECT_DIR}",
        "$TROUPE_PROJECT_DIR",
    ] {
        path = path.strip_prefix(var).unwrap_or(path);
    }
    while let Some(rest) = path.strip_prefix("./").or_else(|| path.strip_prefix('/')) {
        path = rest;
    }
    path.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plane(scripts: &[&str]) -> ControlPlane {
        ControlPlane {
            scripts: scripts.iter().map(|s| s.to_string()).collect(),
        }
    }

    #[test]
    fn whole_tool_allows_are_the_ones_without_a_narrowing_specifier() {
        for rule in [
            "Bash",
            "Edit",
            "Bash(*)",
            "Bash(:*)",
            "mcp__files",
            "Write()",
        ] {
            assert!(whole_tool(rule), "{rule}");
        }
        for rule in ["Bash(cargo test:*)", "Edit(src/**)", "Read(./docs/**)"] {
            assert!(!whole_tool(rule), "{rule}");
        }
    }

    #[test]
    fn rules_naming_the_control_plane_or_leaving_the_workspace_loosen() {
        let plane = plane(&["scripts/check.sh"]);
        for rule in [
            "Edit(.git/config)",
            "Edit(./.git/hooks/pre-commit)",
            "Write(/.claude/settings.json)",
            "Edit(.mcp.json)",
            "Edit(sub/.troupe/settings.local.json)",
            "Edit(**/config)",
            "Edit(*.json)",
            "Edit(.*)",
            "Edit(src/.g*/config)",
            "Edit(scripts/check.sh)",
            "Edit(//home/me/.config/troupe/trust.json)",
            "Read(~/.ssh/**)",
            "Read(../other/**)",
            "Bash(cat .git/config)",
            "Bash(sh scripts/check.sh:*)",
            "Bash(cp x .claude/settings.json)",
        ] {
            assert!(loosening_allow(rule, &plane), "{rule}");
        }
        for rule in [
            "Edit(src/**)",
            "Edit(docs/*.md)",
            "Read(./docs/**)",
            "Edit(*.rs)",
            "Bash(cargo test:*)",
            "Bash(git status)",
            "Bash(npm run *)",
            "WebFetch(domain:docs.rs)",
            "Edit(scripts/other.sh)",
        ] {
            assert!(!loosening_allow(rule, &plane), "{rule}");
        }
    }

    #[test]
    fn hook_scripts_are_found_in_every_layer_spelling() {
        let plane = plane(&["tools/gate.py"]);
        assert!(plane.is_script("./tools/gate.py"));
        assert!(plane.is_script("/work/ws/tools/gate.py"));
        assert!(!plane.is_script("tools/gate.pyc"));
        assert_eq!(normal("\"$CLAUDE_PROJECT_DIR\"/x.sh"), "x.sh");
    }
}
