//! troupe's REPL in a real terminal (tmux), for what only a live screen shows: the status
//! line, running calls' progress, keys.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;
use troupe_testkit::FakeServer;

/// Whether this machine can run the tmux tests (under `CI=true` a missing tmux fails them).
pub fn available() -> bool {
    let tmux = Command::new("tmux").arg("-V").output().is_ok();
    troupe_testkit::requirement("tmux (scripts/test-deps.sh installs it)", tmux)
}

/// troupe's REPL in a tmux session of its own.
pub struct Tmux {
    socket: PathBuf,
    _dir: tempfile::TempDir,
}

impl Tmux {
    pub fn start(ws: &Path, server: &FakeServer, args: &[&str]) -> Tmux {
        let dir = tempfile::tempdir().unwrap();
        let socket = dir.path().join("tmux.sock");
        let script = dir.path().join("run.sh");
        let quoted: Vec<String> = args.iter().map(|a| format!("'{a}'")).collect();
        std::fs::write(
            &script,
            format!(
                "unset ANTHROPIC_API_KEY OPENAI_API_KEY OPENAI_BASE_URL TROUPE_MODEL\n\
                 cd '{ws}'\n\
                 export HOME='{ws}/.home' ANTHROPIC_BASE_URL='{url}' ANTHROPIC_API_KEY=test-key TROUPE_AGENT_HEADER=1 TROUPE_RETRY_BASE_MS=5\n\
                 exec '{exe}' {args}\n",
                ws = ws.display(),
                url = server.url(),
                exe = env!("CARGO_BIN_EXE_troupe"),
                args = quoted.join(" "),
            ),
        )
        .unwrap();
        let tmux = Tmux { socket, _dir: dir };
        let started = tmux
            .run(&[
                "new-session",
                "-d",
                "-s",
                "t",
                "-x",
                "160",
                "-y",
                "50",
                "sh",
            ])
            .arg(&script)
            .output()
            .unwrap();
        assert!(
            started.status.success(),
            "tmux did not start: {}",
            String::from_utf8_lossy(&started.stderr)
        );
        tmux
    }

    fn cmd(&self) -> Command {
        let mut cmd = Command::new("tmux");
        cmd.arg("-S").arg(&self.socket);
        cmd
    }

    fn run(&self, args: &[&str]) -> Command {
        let mut cmd = self.cmd();
        cmd.args(args);
        cmd
    }

    pub fn screen(&self) -> String {
        let out = self
            .run(&["capture-pane", "-p", "-J", "-t", "t", "-S", "-2000"])
            .output()
            .unwrap();
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    }

    pub fn wait_for(&self, text: &str) {
        let mut screen = String::new();
        let seen = troupe_testkit::eventually(Duration::from_secs(40), || {
            screen = self.screen();
            screen.contains(text)
        });
        assert!(seen, "never showed {text:?}; the screen:\n{screen}");
    }

    /// Types `line` at the prompt and presses Enter once the prompt shows it. The line editor
    /// redraws only on its next input, so a no-op key (Ctrl-E, end of line) nudges it; keys
    /// typed while it is between lines may be dropped, so the line is typed again (after
    /// Ctrl-U clears what part of it arrived).
    pub fn type_line(&self, line: &str) {
        let shown = format!("> {line}");
        let keys = |args: &[&str]| assert!(self.run(args).status().unwrap().success());
        for _ in 0..5 {
            keys(&["send-keys", "-t", "t", "C-u"]);
            keys(&["send-keys", "-t", "t", "-l", line]);
            for _ in 0..20 {
                keys(&["send-keys", "-t", "t", "C-e"]);
                std::thread::sleep(Duration::from_millis(100));
                if self.screen().lines().any(|l| l.trim_end() == shown) {
                    keys(&["send-keys", "-t", "t", "Enter"]);
                    return;
                }
            }
        }
        panic!("the prompt never showed {shown:?}:\n{}", self.screen());
    }

    pub fn gone(&self) -> bool {
        !self
            .run(&["has-session", "-t", "t"])
            .stderr(Stdio::null())
            .status()
            .unwrap()
            .success()
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.run(&["kill-server"]).stderr(Stdio::null()).status();
    }
}
