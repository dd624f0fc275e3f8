//! A plain command runs without bash, and nothing it can see tells the difference.
//!
//! One test in its own binary: it puts a recording `bash` first on troupe's `PATH`, which no
//! other test in the process may see.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code may panic on a broken fixture

mod common;

use common::{err, ok, Fixture};
use serde_json::json;
use std::os::unix::fs::PermissionsExt;
use troupe_tools::process::CALL_MARKER_ENV;
use troupe_tools::Sandbox;

/// The lines of `env`'s output but the call marker (each call has its own) and the exit line.
fn environment(output: &str) -> Vec<String> {
    let mut lines: Vec<String> = output
        .lines()
        .filter(|l| !l.starts_with(&format!("{CALL_MARKER_ENV}=")) && !l.starts_with("exit code:"))
        .map(str::to_owned)
        .collect();
    lines.sort();
    lines
}

#[tokio::test]
async fn a_plain_command_skips_bash_and_sees_what_bash_would_have_handed_it() {
    let shims = tempfile::tempdir().unwrap();
    let log = shims.path().join("bash.log");
    let real = ["/usr/bin/bash", "/bin/bash"]
        .into_iter()
        .find(|p| std::path::Path::new(p).exists())
        .expect("bash is installed");
    let shim = shims.path().join("bash");
    std::fs::write(
        &shim,
        format!(
            "#!/bin/sh\necho \"$*\" >> {}\nexec {real} \"$@\"\n",
            log.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&shim, std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = format!(
        "{}:{}",
        shims.path().display(),
        std::env::var("PATH").unwrap()
    );
    // SAFETY: this binary's only test; nothing else reads the environment meanwhile.
    unsafe {
        std::env::set_var("PATH", &path);
        std::env::set_var("OLDPWD", "/no/such/directory");
        std::env::set_var("SHLVL", "4");
    }
    let bash_runs = || std::fs::read_to_string(&log).unwrap_or_default();

    let f = Fixture::new();
    f.write("b.txt", "");
    f.write("a.txt", "");
    assert_eq!(
        ok(f.call("bash", json!({"command": "ls"})).await),
        "a.txt\nb.txt\nexit code: 0"
    );
    assert_eq!(bash_runs(), "", "ls ran without bash");

    // The same program through bash (a quoted word is not plain): the same environment.
    let direct = ok(f.call("bash", json!({"command": "env"})).await);
    assert_eq!(bash_runs(), "");
    let through_bash = ok(f.call("bash", json!({"command": "'env'"})).await);
    // Behind the EXIT trap that reports where the call ended.
    assert!(
        bash_runs().starts_with("-c trap ") && bash_runs().ends_with("EXIT; 'env'\n"),
        "{}",
        bash_runs()
    );
    // Bash stays to run its EXIT trap rather than exec the program, so its SHLVL is one more.
    let without_level = |text: &str| -> Vec<String> {
        environment(text)
            .into_iter()
            .filter(|l| !l.starts_with("SHLVL="))
            .collect()
    };
    assert_eq!(without_level(&direct), without_level(&through_bash));
    for line in ["SHLVL=4", "_=/usr/bin/env"] {
        assert!(
            environment(&direct).iter().any(|l| l == line),
            "{line} in {direct}"
        );
    }
    assert!(
        !direct.contains("OLDPWD="),
        "bash drops an OLDPWD naming no directory"
    );

    // What only bash can run, or explain, goes to bash: its message and status.
    let missing = err(f
        .call("bash", json!({"command": "troupe-no-such-program --x"}))
        .await);
    assert!(
        missing.contains("troupe-no-such-program: command not found"),
        "{missing}"
    );
    assert!(missing.ends_with("exit code: 127"), "{missing}");
    f.write("script", "echo from a script without a shebang\n");
    let script = f.root().join("script");
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let text = ok(f
        .call("bash", json!({"command": script.display().to_string()}))
        .await);
    assert_eq!(text, "from a script without a shebang\nexit code: 0");
    assert_eq!(bash_runs().lines().count(), 3, "{}", bash_runs());

    // A sandboxed call is confined the same way without bash: the workspace is read-only.
    let f = Fixture::new().sandboxed(Sandbox::ReadOnly);
    f.write("kept", "");
    let before = bash_runs();
    let text = err(f.call("bash", json!({"command": "rm kept"})).await);
    assert!(text.contains("kept"), "{text}");
    assert!(f.root().join("kept").exists(), "the sandbox kept the file");
    assert_eq!(bash_runs(), before, "rm ran without bash");
}
