//! `troupe sandbox check`: what this machine's sandbox can do, proven by a confined child that
//! tries to write where it must not.

use crate::args::{SandboxArgs, SandboxCommand};
use anyhow::{Context, Result};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use troupe_tools::process::setup_child;
use troupe_tools::sandbox::{
    kernel_abi, namespaces, seccomp_support, support, writable_paths, Confinement, Protected,
    Scratch, Support,
};
use troupe_tools::{Sandbox, SandboxConfig};

/// Runs `troupe sandbox …` and returns the exit code.
pub fn run(args: &SandboxArgs) -> Result<i32> {
    match &args.command {
        SandboxCommand::Check { json, cwd } => check(*json, cwd.as_deref()),
    }
}

/// One thing a confined child tried, and whether the sandbox behaved.
struct Proof {
    what: &'static str,
    ok: bool,
}

fn check(as_json: bool, cwd: Option<&Path>) -> Result<i32> {
    let workspace = crate::workspace::root(cwd)?;
    let workspace = workspace
        .canonicalize()
        .with_context(|| format!("workspace {} is not accessible", workspace.display()))?;
    let config =
        troupe_agent::builder::sandbox_config(&crate::settings::load(&workspace, None)?.settings);
    let proofs = match support() {
        Support::Available { .. } => prove(&config)?,
        Support::Unsupported { .. } => Vec::new(),
    };
    let usable =
        support().is_available() && seccomp_support().is_ok() && proofs.iter().all(|p| p.ok);
    let report = Report {
        workspace: &workspace,
        config: &config,
        proofs: &proofs,
        usable,
    };
    match as_json {
        true => println!("{}", report.json()),
        false => print!("{}", report.text()),
    }
    Ok(if usable { 0 } else { 1 })
}

/// For `troupe doctor`: whether the sandbox works as `settings` configure it (the same proof
/// as `troupe sandbox check`), and what was found in one line. The settings are doctor's own
/// reading, so a file that does not load is reported once, by its configuration check.
pub fn summary(settings: &troupe_settings::Settings) -> Result<(bool, String)> {
    let config = troupe_agent::builder::sandbox_config(settings);
    match support() {
        Support::Unsupported { why } => Ok((false, format!("Landlock is not usable: {why}"))),
        Support::Available { abi } => {
            let failed: Vec<&str> = prove(&config)?
                .iter()
                .filter(|p| !p.ok)
                .map(|p| p.what)
                .collect();
            Ok(match failed.as_slice() {
                [] if seccomp_support().is_err() => (
                    false,
                    format!("Landlock ABI {abi}, but {}", enforced(&config)),
                ),
                [] => (
                    true,
                    format!(
                        "Landlock ABI {abi}: a confined child was refused where it must be (setting: \
                         {}); {}",
                        config.mode.as_str(),
                        enforced(&config)
                    ),
                ),
                failed => (
                    false,
                    format!("Landlock ABI {abi}, but failed: {}", failed.join("; ")),
                ),
            })
        }
    }
}

/// What the layers beside Landlock enforce here, in one line.
fn enforced(config: &SandboxConfig) -> String {
    let seccomp = match seccomp_support() {
        Ok(()) => format!(
            "sockets: none at read-only, {} at workspace-write",
            match config.network {
                troupe_tools::sandbox::Network::Inet => "internet only (no unix socket)",
                troupe_tools::sandbox::Network::Allow =>
                    "every kind, unix sockets included (\"network\": \"allow\")",
                troupe_tools::sandbox::Network::Deny => "none",
            }
        ),
        Err(why) => format!("no seccomp filter ({why}): confined commands are refused"),
    };
    let mounts = match namespaces() {
        Ok(()) => "protected files read-only and Read-denied paths hidden (mount namespace)".into(),
        Err(why) => format!(
            "no mount namespace ({why}): workspace-write commands are asked about or refused"
        ),
    };
    format!("{seccomp}; {mounts}")
}

/// Runs the confined children: each tries one write and the outcome is compared with the rule.
fn prove(config: &SandboxConfig) -> Result<Vec<Proof>> {
    // A workspace of its own, so the check never writes into the person's.
    let workspace = Scratch::create().context("creating a scratch workspace")?;
    let outside = Scratch::create().context("creating a directory outside the workspace")?;
    let to_file = "echo probe > \"$1\" && test -s \"$1\"";
    let to_tmpdir = "echo probe > \"$TMPDIR/probe\" && test -s \"$TMPDIR/probe\"";
    let target = |name: &str| outside.path().join(name);
    let in_workspace = workspace.path().join("written");
    let attempt =
        |level, script: &str, arg: &Path| attempt(level, workspace.path(), config, script, arg);
    let mut proofs = vec![
        Proof {
            what: "read-only refuses a write outside the workspace",
            ok: !attempt(Sandbox::ReadOnly, to_file, &target("ro"))? && !target("ro").exists(),
        },
        Proof {
            what: "read-only refuses a write in the workspace",
            ok: !attempt(Sandbox::ReadOnly, to_file, &in_workspace)? && !in_workspace.exists(),
        },
        Proof {
            what: "read-only allows its private $TMPDIR",
            ok: attempt(Sandbox::ReadOnly, to_tmpdir, Path::new(""))?,
        },
        Proof {
            what: "workspace-write allows the workspace",
            ok: attempt(Sandbox::WorkspaceWrite, to_file, &in_workspace)? && in_workspace.exists(),
        },
        Proof {
            what: "workspace-write refuses a write outside the workspace",
            ok: !attempt(Sandbox::WorkspaceWrite, to_file, &target("ww"))?
                && !target("ww").exists(),
        },
    ];
    if namespaces().is_ok() {
        let config_file = workspace.path().join(".git/config");
        std::fs::create_dir_all(workspace.path().join(".git"))
            .context("creating a scratch .git")?;
        std::fs::write(&config_file, "").context("creating a scratch .git/config")?;
        proofs.push(Proof {
            what: "workspace-write refuses a write to a protected file (.git/config)",
            ok: !attempt(Sandbox::WorkspaceWrite, to_file, &config_file)?
                && std::fs::read(&config_file).is_ok_and(|c| c.is_empty()),
        });
    }
    Ok(proofs)
}

/// Runs `sh -c script sh arg` confined to `level` (settings' mode ignored: this tests the
/// sandbox itself); true when it exits 0.
fn attempt(
    level: Sandbox,
    workspace: &Path,
    config: &SandboxConfig,
    script: &str,
    arg: &Path,
) -> Result<bool> {
    let config = SandboxConfig {
        mode: troupe_tools::SandboxMode::Auto,
        ..config.clone()
    };
    let confinement = Confinement::prepare(level, workspace, &config)
        .with_context(|| format!("preparing the {level} sandbox"))?;
    let mut cmd = Command::new("sh");
    cmd.args(["-c", script, "sh"])
        .arg(arg)
        .current_dir(workspace)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    if let Some(tmp) = confinement.scratch_dir() {
        cmd.env("TMPDIR", tmp);
    }
    setup_child(&mut cmd, Some(&confinement));
    let status = cmd
        .status()
        .with_context(|| format!("running a child in the {level} sandbox"))?;
    Ok(status.success())
}

/// Everything the check found.
struct Report<'a> {
    workspace: &'a Path,
    config: &'a SandboxConfig,
    proofs: &'a [Proof],
    usable: bool,
}

impl Report<'_> {
    /// The writable paths of `level`, besides the private `$TMPDIR`.
    fn writable(&self, level: Sandbox) -> Vec<(PathBuf, &'static str)> {
        writable_paths(level, self.workspace, None, self.config)
            .into_iter()
            .map(|w| (w.path, w.kind.as_str()))
            .collect()
    }

    fn json(&self) -> Value {
        let (available, abi, reason) = match support() {
            Support::Available { abi } => (true, Some(*abi), None),
            Support::Unsupported { why } => (false, kernel_abi().ok(), Some(why.clone())),
        };
        let list = |level| {
            let mut paths: Vec<Value> = self
                .writable(level)
                .into_iter()
                .map(|(path, kind)| json!({"path": path, "kind": kind}))
                .collect();
            paths.push(json!({"path": "$TMPDIR", "kind": "private temporary directory"}));
            paths
        };
        let layer = |result: &Result<(), String>| match result {
            Ok(()) => json!({"available": true}),
            Err(why) => json!({"available": false, "reason": why}),
        };
        let mut namespaces = layer(namespaces());
        namespaces["userNamespace"] = json!(troupe_tools::sandbox::mounts::uses_userns());
        let protected = Protected::survey(self.workspace, &self.config.protected);
        json!({
            "landlock": {"available": available, "abi": abi, "reason": reason},
            "seccomp": layer(seccomp_support()),
            "namespaces": namespaces,
            "mode": self.config.mode.as_str(),
            "workspace": self.workspace,
            "readOnly": {"writable": list(Sandbox::ReadOnly), "network": "deny"},
            "workspaceWrite": {
                "writable": list(Sandbox::WorkspaceWrite),
                "network": self.config.network.as_str(),
                "protected": protected.present(),
            },
            "checks": self.proofs.iter().map(|p| json!({"check": p.what, "ok": p.ok})).collect::<Vec<_>>(),
            "usable": self.usable,
        })
    }

    fn text(&self) -> String {
        let mut out = match support() {
            Support::Available { abi } => format!("Landlock: available (ABI {abi})\n"),
            Support::Unsupported { why } => format!("Landlock: not usable: {why}\n"),
        };
        out.push_str(&match seccomp_support() {
            Ok(()) => "seccomp: available\n".to_string(),
            Err(why) => format!("seccomp: not usable: {why}\n"),
        });
        out.push_str(&match namespaces() {
            Ok(()) => "mount namespaces: available\n".to_string(),
            Err(why) => format!("mount namespaces: not usable: {why}\n"),
        });
        out.push_str(&format!("Sandbox setting: {}", self.config.mode.as_str()));
        if self.config.mode == troupe_tools::SandboxMode::Off {
            out.push_str(" (commands run unconfined)");
        }
        out.push_str("\n\nread-only commands may write only:\n");
        let read_only = self.writable(Sandbox::ReadOnly);
        for (path, kind) in &read_only {
            out.push_str(&format!("  {}  ({kind})\n", path.display()));
        }
        out.push_str("  $TMPDIR  (a private directory per call, deleted after it)\n");
        out.push_str("workspace-write commands may also write:\n");
        for (path, kind) in self.writable(Sandbox::WorkspaceWrite) {
            if !read_only.iter().any(|(p, _)| *p == path) {
                out.push_str(&format!("  {}  ({kind})\n", path.display()));
            }
        }
        out.push_str(
            "read-only commands may open no socket (socketpair only); workspace-write commands ",
        );
        out.push_str(match self.config.network {
            troupe_tools::sandbox::Network::Inet => {
                "may open internet sockets but no unix socket (\"network\": \"inet\", the default)\n"
            }
            troupe_tools::sandbox::Network::Allow => {
                "may open every kind, unix sockets included (\"network\": \"allow\")\n"
            }
            troupe_tools::sandbox::Network::Deny => "may not either (\"network\": \"deny\")\n",
        });
        let protected = Protected::survey(self.workspace, &self.config.protected);
        out.push_str("workspace-write commands may not write these protected paths:\n");
        for path in protected.present() {
            out.push_str(&format!("  {}\n", path.display()));
        }
        out.push_str(
            "  (and one a command creates — .mcp.json, a .claude folder — is removed after it)\n",
        );
        if !self.proofs.is_empty() {
            out.push_str("\nProof (a sandboxed child tried each):\n");
            for proof in self.proofs {
                let mark = if proof.ok { "ok    " } else { "FAILED" };
                out.push_str(&format!("  {mark}  {}\n", proof.what));
            }
        }
        out.push_str(match self.usable {
            true => "\nThe sandbox works on this machine.\n",
            false => {
                "\nThe sandbox does not work here: commands that need it are asked about \
                      (REPL) or refused (headless) unless the sandbox is off in settings.\n"
            }
        });
        out
    }
}
