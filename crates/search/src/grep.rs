//! The grep tool's walk: every file a walker yields, opened in its directory's handle without
//! following a link, searched by `grep-searcher`; what matched comes back per file, sorted by
//! path.

use crate::walk::{self, DirHandle, Visit};
use crate::Tree;
use grep_regex::RegexMatcher;
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder, Sink, SinkContext, SinkMatch};
use ignore::WalkBuilder;
use rustix::fs::{Mode as FileMode, OFlags};
use std::io;
use std::os::fd::AsFd;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};

/// What a search keeps of a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Its matching lines, with `context` lines around each.
    Lines { context: usize },
    /// Whether it matches (the search of a file stops at its first match).
    Files,
    /// How many lines match.
    Count,
}

/// One line kept of a file, or a break between groups of context.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Piece {
    /// A matching line (`separator` `:`) or a context line (`-`), without its line end.
    Line {
        separator: char,
        number: u64,
        text: String,
    },
    /// `--` between groups of context lines.
    Break,
}

/// What matched in one file.
#[derive(Debug)]
pub struct FileMatches {
    /// The path as [`Tree::display`] shows it.
    pub shown: String,
    /// The lines kept (in [`Mode::Lines`]).
    pub pieces: Vec<Piece>,
    /// Matching lines.
    pub matches: usize,
}

/// Searches every file `builder` yields in `tree` for `matcher`: the files that match, sorted
/// by path, and whether the walk stopped early because the threads held more than `held_limit`
/// bytes of results. In [`Mode::Lines`] a file keeps at most `room` pieces.
pub fn search_tree(
    builder: WalkBuilder,
    tree: &dyn Tree,
    matcher: &RegexMatcher,
    mode: Mode,
    room: usize,
    held_limit: usize,
) -> (Vec<(PathBuf, FileMatches)>, bool) {
    let context = match mode {
        Mode::Lines { context } => context,
        Mode::Files | Mode::Count => 0,
    };
    let held = AtomicUsize::new(0);
    let (mut found, stopped) = walk::files(builder, || {
        let mut searcher = SearcherBuilder::new()
            .line_number(true)
            .before_context(context)
            .after_context(context)
            .binary_detection(BinaryDetection::quit(0))
            .build();
        let held = &held;
        // Each directory is opened beneath the root handle once (the walker hands a thread a
        // directory's files together), and its files in that handle without following a link:
        // a file the walker reached through a directory swapped for a symlink meanwhile is
        // refused, never read.
        let mut dirs = DirHandle::default();
        move |entry: ignore::DirEntry| {
            let path: PathBuf = entry.into_path();
            let (Some(dir), Some(name)) = (path.parent(), path.file_name()) else {
                return Visit::Skip;
            };
            let Some(handle) = dirs.open(tree, dir) else {
                return Visit::Skip;
            };
            let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC | OFlags::NOCTTY;
            let opened = rustix::fs::openat(handle.as_fd(), name, flags, FileMode::empty())
                .map(std::fs::File::from)
                .map_err(io::Error::from);
            let mut sink = FileSink {
                kept: FileMatches {
                    shown: tree.display(&path),
                    pieces: Vec::new(),
                    matches: 0,
                },
                mode,
                room,
            };
            let searched = opened.and_then(|file| searcher.search_file(matcher, &file, &mut sink));
            if let Err(err) = searched {
                tracing::debug!(path = %path.display(), error = %err, "grep skipped a file");
                return Visit::Skip;
            }
            let kept = sink.kept;
            if kept.matches == 0 {
                return Visit::Skip;
            }
            let shown = kept.shown.len();
            let lines = kept.pieces.iter().map(|p| piece_len(shown, p));
            let bytes = shown + lines.sum::<usize>();
            match held.fetch_add(bytes, Ordering::Relaxed) + bytes > held_limit {
                true => Visit::KeepAndStop((path, kept)),
                false => Visit::Keep((path, kept)),
            }
        }
    });
    found.sort_by(|a, b| a.0.cmp(&b.0));
    (found, stopped)
}

/// The bytes a piece takes in the answer (`path:number:text` and a newline) before long lines
/// are cut.
fn piece_len(shown: usize, piece: &Piece) -> usize {
    match piece {
        Piece::Line { number, text, .. } => {
            let digits = number.checked_ilog10().unwrap_or(0) as usize + 1;
            shown + digits + text.len() + 3
        }
        Piece::Break => 3,
    }
}

/// Receives one file's matches from the searcher.
struct FileSink {
    kept: FileMatches,
    mode: Mode,
    /// Pieces allowed.
    room: usize,
}

impl FileSink {
    /// Keeps one line; false once the room is used up.
    fn push_line(&mut self, separator: char, number: Option<u64>, bytes: &[u8]) -> bool {
        let text = String::from_utf8_lossy(bytes);
        let text = text.trim_end_matches('\n').trim_end_matches('\r');
        self.kept.pieces.push(Piece::Line {
            separator,
            number: number.unwrap_or(0),
            text: text.to_owned(),
        });
        self.kept.pieces.len() < self.room
    }
}

impl Sink for FileSink {
    type Error = io::Error;

    fn matched(&mut self, _searcher: &Searcher, mat: &SinkMatch<'_>) -> Result<bool, io::Error> {
        self.kept.matches += 1;
        match self.mode {
            // One match is enough to list the file.
            Mode::Files => Ok(false),
            Mode::Count => Ok(true),
            Mode::Lines { .. } => Ok(self.push_line(':', mat.line_number(), mat.bytes())),
        }
    }

    fn context(&mut self, _searcher: &Searcher, ctx: &SinkContext<'_>) -> Result<bool, io::Error> {
        Ok(self.push_line('-', ctx.line_number(), ctx.bytes()))
    }

    fn context_break(&mut self, _searcher: &Searcher) -> Result<bool, io::Error> {
        self.kept.pieces.push(Piece::Break);
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use grep_regex::RegexMatcherBuilder;
    use std::os::fd::OwnedFd;
    use std::path::Path;

    /// Any directory, paths shown as they are.
    struct Plain;

    impl Tree for Plain {
        fn open_dir(&self, dir: &Path) -> io::Result<OwnedFd> {
            Ok(OwnedFd::from(std::fs::File::open(dir)?))
        }

        fn display(&self, path: &Path) -> String {
            path.display().to_string()
        }
    }

    #[test]
    fn matching_files_come_back_sorted_with_their_lines_and_context() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        std::fs::write(dir.path().join("sub/b.txt"), "one\nneedle two\nthree\n").unwrap();
        std::fs::write(dir.path().join("a.txt"), "needle\n").unwrap();
        std::fs::write(dir.path().join("c.txt"), "nothing\n").unwrap();
        let matcher = RegexMatcherBuilder::new()
            .line_terminator(Some(b'\n'))
            .build("needle")
            .unwrap();
        let walk = || ignore::WalkBuilder::new(dir.path());
        let mode = Mode::Lines { context: 1 };
        let (found, stopped) = search_tree(walk(), &Plain, &matcher, mode, 100, usize::MAX);
        assert!(!stopped);
        let names: Vec<_> = found
            .iter()
            .map(|(p, _)| p.strip_prefix(dir.path()).unwrap())
            .collect();
        assert_eq!(names, [Path::new("a.txt"), Path::new("sub/b.txt")]);
        let line = |separator, number, text: &str| Piece::Line {
            separator,
            number,
            text: text.to_string(),
        };
        assert_eq!(
            found[1].1.pieces,
            [
                line('-', 1, "one"),
                line(':', 2, "needle two"),
                line('-', 3, "three")
            ]
        );
        // Past the held limit the walk stops and says so.
        let (found, stopped) = search_tree(walk(), &Plain, &matcher, Mode::Count, 100, 1);
        assert!(stopped);
        assert!(!found.is_empty() && found.iter().all(|(_, f)| f.matches == 1));
    }
}
