//! What a bash call changed in a git workspace, found cheaply: `git status` before and after
//! the call. A file git calls clean before was as the index has it; a file it lists before is
//! read then (kept from one call to the next while its size and time stay the same). Only the
//! files git lists are ever read, and only around bash calls.

use std::collections::HashMap;
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::SystemTime;

/// Files larger than this are not kept: a change to one cannot be put back.
const MAX_KEPT: u64 = 4 << 20;

/// A file git listed as changed or untracked, as it was.
#[derive(Debug, Clone, PartialEq)]
struct Seen {
    /// Size and modification time (`None`: the file did not exist).
    stamp: Option<(u64, SystemTime)>,
    /// Its content (`None` when it did not exist or was too large).
    content: Option<Vec<u8>>,
}

/// The listed files of a workspace at one moment.
#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    top: PathBuf,
    files: HashMap<PathBuf, Seen>,
}

/// A file a bash call changed: its path and content before the call (`None`: it did not exist).
pub type Change = (PathBuf, Option<Vec<u8>>);

fn stamp(path: &Path) -> Option<(u64, SystemTime)> {
    let meta = std::fs::symlink_metadata(path).ok()?;
    Some((meta.len(), meta.modified().ok()?))
}

fn git<S: AsRef<std::ffi::OsStr>>(dir: &Path, args: &[S]) -> Option<Vec<u8>> {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .ok()?;
    out.status.success().then_some(out.stdout)
}

/// The files `git status` lists under `workspace` (paths from the repository's top).
fn listed(workspace: &Path) -> Option<(PathBuf, Vec<PathBuf>)> {
    let top = git(workspace, &["rev-parse", "--show-toplevel"])?;
    let top = PathBuf::from(OsStr::from_bytes(top.trim_ascii_end()));
    let out = git(
        workspace,
        &[
            "status",
            "--porcelain=v1",
            "-z",
            "--untracked-files=all",
            "--",
            ".",
        ],
    )?;
    let mut files = Vec::new();
    let mut parts = out.split(|b| *b == 0).filter(|p| !p.is_empty());
    while let Some(entry) = parts.next() {
        if entry.len() < 4 {
            continue;
        }
        files.push(top.join(OsStr::from_bytes(&entry[3..])));
        // A rename or copy names its source next; it is listed too.
        if matches!(entry[0], b'R' | b'C') {
            if let Some(from) = parts.next() {
                files.push(top.join(OsStr::from_bytes(from)));
            }
        }
    }
    Some((top, files))
}

impl Snapshot {
    /// The workspace's listed files now, reusing `previous`'s contents for files unchanged
    /// since. `None`: not a git workspace (or git is missing).
    pub fn take(workspace: &Path, previous: Option<&Snapshot>) -> Option<Snapshot> {
        let (top, paths) = listed(workspace)?;
        let mut files = HashMap::with_capacity(paths.len());
        for path in paths {
            let stamp = stamp(&path);
            let kept = previous
                .and_then(|p| p.files.get(&path))
                .filter(|seen| seen.stamp == stamp);
            let seen = match kept {
                Some(seen) => seen.clone(),
                None => Seen {
                    stamp,
                    content: stamp
                        .filter(|(len, _)| *len <= MAX_KEPT)
                        .and_then(|_| std::fs::read(&path).ok()),
                },
            };
            files.insert(path, seen);
        }
        Some(Snapshot { top, files })
    }

    /// What changed between `self` (before a call) and `after`, each with its content before.
    pub fn changes(&self, after: &Snapshot) -> Vec<Change> {
        let mut out = Vec::new();
        for (path, now) in &after.files {
            match self.files.get(path) {
                // Listed before: changed when its size or time moved.
                Some(was) if was.stamp != now.stamp => {
                    if let Some(before) = was.before() {
                        out.push((path.clone(), before));
                    }
                }
                Some(_) => {}
                // Clean before: as the index had it (untracked: absent).
                None => out.push((path.clone(), self.index_content(path))),
            }
        }
        for (path, was) in &self.files {
            // Listed before, clean now: put back to the index's content by the call.
            if !after.files.contains_key(path) {
                if let Some(before) = was.before() {
                    out.push((path.clone(), before));
                }
            }
        }
        out
    }

    /// The index's content of a file git called clean (`None` when it is not tracked).
    fn index_content(&self, path: &Path) -> Option<Vec<u8>> {
        let rel = path.strip_prefix(&self.top).ok()?;
        let mut spec = std::ffi::OsString::from(":");
        spec.push(rel.as_os_str());
        git(&self.top, &[std::ffi::OsString::from("show"), spec])
    }
}

impl Seen {
    /// What a restore should put back: the content, or absence; `None` when it was not kept.
    fn before(&self) -> Option<Option<Vec<u8>>> {
        match (&self.stamp, &self.content) {
            (None, _) => Some(None),
            (Some(_), Some(content)) => Some(Some(content.clone())),
            (Some(_), None) => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_what_a_command_changed_with_the_content_before() {
        let ws = tempfile::tempdir().unwrap();
        let root = ws.path();
        let sh = |cmd: &str| {
            let ok = Command::new("sh")
                .arg("-c")
                .arg(cmd)
                .current_dir(root)
                .status()
                .unwrap()
                .success();
            assert!(ok, "{cmd}");
        };
        sh("git init -q && git -c user.email=t@t -c user.name=t commit -q --allow-empty -m 0");
        sh("echo clean > clean.txt && echo dirty > dirty.txt && git add . && git -c user.email=t@t -c user.name=t commit -q -m 1 && echo dirty2 > dirty.txt && echo new > untracked.txt");
        let before = Snapshot::take(root, None).unwrap();
        sh("echo changed > clean.txt && echo dirty3 > dirty.txt && echo made > made.txt && rm untracked.txt");
        let after = Snapshot::take(root, Some(&before)).unwrap();
        let mut changes = before.changes(&after);
        changes.sort();
        let name = |c: &Change| c.0.file_name().unwrap().to_string_lossy().into_owned();
        let got: Vec<(String, Option<Vec<u8>>)> =
            changes.iter().map(|c| (name(c), c.1.clone())).collect();
        assert_eq!(
            got,
            vec![
                ("clean.txt".into(), Some(b"clean\n".to_vec())),
                ("dirty.txt".into(), Some(b"dirty2\n".to_vec())),
                ("made.txt".into(), None),
                ("untracked.txt".into(), Some(b"new\n".to_vec())),
            ]
        );
        let not_git = tempfile::tempdir().unwrap();
        assert!(Snapshot::take(not_git.path(), None).is_none());
    }
}
