//! A session's checkpoints on disk, beside its transcript: `<session>/checkpoints/log.jsonl`
//! says which prompts ran and which files each changed first, `blobs/` holds those files'
//! contents before the change. Everything is appended, so a killed run loses at most the
//! line being written; `--resume` finds the checkpoints where the session left them.

use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::fs::{self, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

/// One line of the checkpoint log.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "t", rename_all = "snake_case")]
enum Entry {
    /// A prompt started (numbered from 1 within the session).
    Prompt { seq: u64, text: String, ts: u64 },
    /// A file's content before prompt `seq` first changed it; `blob` `None`: it did not exist.
    File {
        seq: u64,
        path: PathBuf,
        blob: Option<String>,
    },
    /// The conversation was rewound to before prompt `from`: it and later ones are gone from it.
    Dropped { from: u64 },
    /// What the person typed for prompt `seq`, when the model got more (attachments, `!`
    /// output) or something else (a command's expansion).
    Typed { seq: u64, text: String },
}

/// A prompt the session ran, as the rewind menu lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PromptMark {
    /// Its number in the session.
    pub seq: u64,
    /// The prompt's text as the model got it.
    pub text: String,
    /// What the person typed for it, when that differs.
    pub typed: Option<String>,
    /// When it started (ms since the epoch).
    pub ts: u64,
    /// Files changed from this prompt on (as far as the checkpoints know).
    pub changed_since: usize,
}

/// A session's checkpoints.
#[derive(Debug, Clone)]
pub struct Store {
    dir: PathBuf,
}

impl Store {
    /// The checkpoints of the session whose transcript is `transcript`.
    pub fn of_transcript(transcript: &Path) -> Store {
        Store {
            dir: transcript.with_extension("").join("checkpoints"),
        }
    }

    /// The log's path.
    fn log(&self) -> PathBuf {
        self.dir.join("log.jsonl")
    }

    fn entries(&self) -> Vec<Entry> {
        let Ok(text) = fs::read_to_string(self.log()) else {
            return Vec::new();
        };
        text.lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    }

    fn append(&self, entry: &Entry) -> std::io::Result<()> {
        fs::create_dir_all(&self.dir)?;
        let mut line = serde_json::to_string(entry).map_err(std::io::Error::other)?;
        line.push('\n');
        OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.log())?
            .write_all(line.as_bytes())
    }

    /// Records that a prompt starts; returns its number.
    pub fn begin_prompt(&self, text: &str) -> std::io::Result<u64> {
        let seq = self
            .entries()
            .iter()
            .filter_map(|e| match e {
                Entry::Prompt { seq, .. } => Some(*seq),
                _ => None,
            })
            .max()
            .unwrap_or(0)
            + 1;
        self.append(&Entry::Prompt {
            seq,
            text: text.to_string(),
            ts: troupe_protocol::now_ms(),
        })?;
        Ok(seq)
    }

    /// Records `path`'s content before prompt `seq` changed it (`None`: it did not exist).
    pub fn save_before(&self, seq: u64, path: &Path, before: Option<&[u8]>) -> std::io::Result<()> {
        let blob = match before {
            Some(bytes) => {
                let blobs = self.dir.join("blobs");
                fs::create_dir_all(&blobs)?;
                let name = format!("{seq}-{}", uuid::Uuid::new_v4().simple());
                fs::write(blobs.join(&name), bytes)?;
                Some(name)
            }
            None => None,
        };
        self.append(&Entry::File {
            seq,
            path: path.to_path_buf(),
            blob,
        })
    }

    /// Records that the person typed `typed` for the latest prompt, when the model got `sent`.
    pub fn name_latest(&self, sent: &str, typed: &str) -> std::io::Result<()> {
        let latest = self.entries().into_iter().rev().find_map(|e| match e {
            Entry::Prompt { seq, text, .. } => Some((seq, text)),
            _ => None,
        });
        match latest {
            Some((seq, text)) if text == sent && typed != sent => self.append(&Entry::Typed {
                seq,
                text: typed.to_string(),
            }),
            _ => Ok(()),
        }
    }

    /// Records that the conversation no longer holds prompt `from` and those after it.
    pub fn drop_from(&self, from: u64) -> std::io::Result<()> {
        self.append(&Entry::Dropped { from })
    }

    /// The prompts still in the conversation, newest first.
    pub fn prompts(&self) -> Vec<PromptMark> {
        let entries = self.entries();
        let mut prompts: Vec<PromptMark> = Vec::new();
        for entry in &entries {
            match entry {
                Entry::Prompt { seq, text, ts } => prompts.push(PromptMark {
                    seq: *seq,
                    text: text.clone(),
                    typed: None,
                    ts: *ts,
                    changed_since: 0,
                }),
                Entry::Typed { seq, text } => {
                    if let Some(p) = prompts.iter_mut().find(|p| p.seq == *seq) {
                        p.typed = Some(text.clone());
                    }
                }
                Entry::Dropped { from } => prompts.retain(|p| p.seq < *from),
                Entry::File { .. } => {}
            }
        }
        for p in &mut prompts {
            p.changed_since = self.first_images(&entries, p.seq).len();
        }
        prompts.reverse();
        prompts
    }

    /// Each file changed from prompt `from` on, with its content before that prompt.
    fn first_images(&self, entries: &[Entry], from: u64) -> Vec<(PathBuf, Option<String>)> {
        let mut first: HashMap<&Path, (u64, usize)> = HashMap::new();
        let mut out: Vec<(PathBuf, Option<String>)> = Vec::new();
        for entry in entries {
            let Entry::File { seq, path, blob } = entry else {
                continue;
            };
            if *seq < from {
                continue;
            }
            match first.get(path.as_path()) {
                Some((earlier, _)) if earlier <= seq => {}
                Some((_, at)) => {
                    let at = *at;
                    out[at].1 = blob.clone();
                    first.insert(path, (*seq, at));
                }
                None => {
                    first.insert(path, (*seq, out.len()));
                    out.push((path.clone(), blob.clone()));
                }
            }
        }
        out
    }

    /// Puts every file changed from prompt `from` on back as it was before it: rewritten, or
    /// removed when it did not exist. Returns the files put back and those that could not be.
    pub fn restore(&self, from: u64) -> (Vec<PathBuf>, Vec<(PathBuf, String)>) {
        let entries = self.entries();
        let (mut done, mut failed) = (Vec::new(), Vec::new());
        for (path, blob) in self.first_images(&entries, from) {
            let result = match &blob {
                Some(name) => fs::read(self.dir.join("blobs").join(name)).and_then(|bytes| {
                    if fs::read(&path).ok().as_deref() == Some(bytes.as_slice()) {
                        return Ok(false);
                    }
                    if let Some(parent) = path.parent() {
                        fs::create_dir_all(parent)?;
                    }
                    fs::write(&path, bytes).map(|()| true)
                }),
                None => match fs::remove_file(&path) {
                    Ok(()) => Ok(true),
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
                    Err(e) => Err(e),
                },
            };
            match result {
                Ok(true) => done.push(path),
                Ok(false) => {}
                Err(e) => failed.push((path, e.to_string())),
            }
        }
        (done, failed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn restores_each_file_as_it_was_before_the_chosen_prompt() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::of_transcript(&dir.path().join("s.jsonl"));
        let (a, b) = (dir.path().join("a.txt"), dir.path().join("b.txt"));
        fs::write(&a, "a0").unwrap();
        let one = store.begin_prompt("one").unwrap();
        store.save_before(one, &a, Some(b"a0")).unwrap();
        fs::write(&a, "a1").unwrap();
        let two = store.begin_prompt("two").unwrap();
        store.save_before(two, &a, Some(b"a1")).unwrap();
        store.save_before(two, &b, None).unwrap();
        fs::write(&a, "a2").unwrap();
        fs::write(&b, "b2").unwrap();
        let listed = store.prompts();
        assert_eq!(listed.len(), 2);
        assert_eq!((listed[0].seq, listed[0].changed_since), (two, 2));
        assert_eq!((listed[1].seq, listed[1].changed_since), (one, 2));
        let (done, failed) = store.restore(two);
        assert!(failed.is_empty());
        assert_eq!(done.len(), 2);
        assert_eq!(fs::read_to_string(&a).unwrap(), "a1");
        assert!(!b.exists());
        store.restore(one);
        assert_eq!(fs::read_to_string(&a).unwrap(), "a0");
        store.name_latest("two", "typed two").unwrap();
        store.name_latest("not sent", "ignored").unwrap();
        assert_eq!(store.prompts()[0].typed.as_deref(), Some("typed two"));
        store.drop_from(two).unwrap();
        assert_eq!(store.prompts().len(), 1);
        assert_eq!(store.begin_prompt("three").unwrap(), 3);
    }
}
