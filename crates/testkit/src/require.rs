//! What a test needs from the machine (Landlock, tmux, python3): locally a missing requirement
//! skips the test, loudly; in CI (`CI=true`) it fails it, so a feature is never "tested" by a
//! run that skipped it.

/// Whether CI runs these tests (`CI=true`), where nothing may be skipped.
pub fn in_ci() -> bool {
    std::env::var("CI").as_deref() == Ok("true")
}

/// Whether the test may go on: `met` says whether the machine has `what`. When it has not, the
/// test fails under CI and is skipped (with a note on stderr naming `what`) elsewhere.
#[track_caller]
pub fn requirement(what: &str, met: bool) -> bool {
    if !met {
        assert!(!in_ci(), "CI must run this test, but it lacks {what}");
        eprintln!("skipping: this machine lacks {what}");
    }
    met
}
