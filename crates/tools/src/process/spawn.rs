//! The one way troupe starts a marked child (a bash call, a background command, a hook): its
//! own process group, troupe's call marker in its environment, the parent-death signal, and the
//! call's sandbox — started by [`clone`](super::clone) rather than a fork, so starting it costs
//! the same whatever troupe's size.
//!
//! The command line, environment and directory are described on a plain
//! [`std::process::Command`] (so `child_env::scrub` and `GitEnv::apply` work on it as they do on
//! any command); its standard streams and confinement are set here.

use super::clone::{c_string, spawn, Prepared};
use super::live::LiveCall;
use super::marked_child::MarkedChild;
use crate::sandbox::Confinement;
use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use tokio::net::unix::pipe;

/// Where one of the child's standard streams goes.
#[derive(Debug, Default)]
pub enum ChildIo {
    /// `/dev/null`.
    #[default]
    Null,
    /// This descriptor (a pipe's end, a log file).
    Fd(OwnedFd),
    /// A new pipe whose other end troupe reads or writes ([`MarkedChild`]'s `stdin`,
    /// `stdout`, `stderr`).
    Piped,
}

/// A marked child to start.
#[derive(Debug)]
pub struct MarkedCommand {
    command: std::process::Command,
    stdio: [ChildIo; 3],
    confinement: Option<std::sync::Arc<crate::sandbox::ChildPlan>>,
    /// The program stands in for `bash -c` running it: the environment gets bash's changes.
    in_place_of_bash: bool,
    /// A descriptor the child also gets, as this number.
    side: Option<(OwnedFd, RawFd)>,
}

impl MarkedCommand {
    /// `program` in its own process group, marked as `live`'s (its processes are ended with
    /// the call), with the parent-death signal; stdio on `/dev/null` until set.
    pub fn new(program: impl AsRef<OsStr>, live: &LiveCall) -> MarkedCommand {
        let mut command = std::process::Command::new(program);
        let (marker, id) = live.env();
        command.env(marker, id);
        MarkedCommand {
            command,
            stdio: [ChildIo::Null, ChildIo::Null, ChildIo::Null],
            confinement: None,
            in_place_of_bash: false,
            side: None,
        }
    }

    /// Runs the program as `bash -c` would execute it (see [`plain`](super::plain)): with the
    /// environment bash would hand it. The spawn fails with `Unsupported` when only bash can
    /// run it that way.
    pub fn in_place_of_bash(&mut self) -> &mut MarkedCommand {
        self.in_place_of_bash = true;
        self
    }

    /// The command line, environment and directory.
    pub fn command(&mut self) -> &mut std::process::Command {
        &mut self.command
    }

    pub fn stdin(&mut self, io: ChildIo) -> &mut MarkedCommand {
        self.stdio[0] = io;
        self
    }

    pub fn stdout(&mut self, io: ChildIo) -> &mut MarkedCommand {
        self.stdio[1] = io;
        self
    }

    pub fn stderr(&mut self, io: ChildIo) -> &mut MarkedCommand {
        self.stdio[2] = io;
        self
    }

    /// Gives the child `fd` as descriptor `target` (above 2) besides its standard streams.
    pub fn side(&mut self, fd: OwnedFd, target: RawFd) -> &mut MarkedCommand {
        self.side = Some((fd, target));
        self
    }

    /// Confines the child as `confinement` says (nothing for an unconfined call).
    pub fn confine(&mut self, confinement: &Confinement) -> &mut MarkedCommand {
        self.confinement = confinement.child_plan();
        self
    }

    /// Starts the child. `NotFound` when the program is nowhere on the child's `PATH`.
    pub fn spawn(self) -> io::Result<MarkedChild> {
        let MarkedCommand {
            command,
            stdio,
            confinement,
            in_place_of_bash,
            side,
        } = self;
        let mut env = environment(&command);
        let path = find_program(command.get_program(), env.get(OsStr::new("PATH")))?;
        if in_place_of_bash {
            super::plain::as_bash_execs(&mut env, &path, command.get_current_dir())
                .map_err(|why| io::Error::new(io::ErrorKind::Unsupported, why))?;
        }
        let args: Vec<_> = std::iter::once(command.get_program())
            .chain(command.get_args())
            .map(c_string)
            .collect::<io::Result<_>>()?;
        let env: Vec<_> = env
            .iter()
            .map(|(k, v)| {
                let mut pair = k.clone();
                pair.push("=");
                pair.push(v);
                c_string(&pair)
            })
            .collect::<io::Result<_>>()?;
        let cwd = command.get_current_dir().map(|d| c_string(d.as_os_str()));
        let cwd = cwd.transpose()?;
        // The child's ends stay open here until the spawn returned; troupe's ends go to the child.
        let mut child_ends = Vec::with_capacity(3);
        let mut ours: [Option<OwnedFd>; 3] = [None, None, None];
        for (index, io) in stdio.into_iter().enumerate() {
            let end = match io {
                ChildIo::Null => std::fs::OpenOptions::new()
                    .read(index == 0)
                    .write(index != 0)
                    .open("/dev/null")?
                    .into(),
                ChildIo::Fd(fd) => fd,
                ChildIo::Piped => {
                    let (reader, writer) = io::pipe()?;
                    match index {
                        0 => {
                            ours[0] = Some(writer.into());
                            reader.into()
                        }
                        _ => {
                            ours[index] = Some(reader.into());
                            writer.into()
                        }
                    }
                }
            };
            child_ends.push(above_stdio(end)?);
        }
        let fds = [
            child_ends[0].as_raw_fd(),
            child_ends[1].as_raw_fd(),
            child_ends[2].as_raw_fd(),
        ];
        let side = side.map(|(fd, target)| above_stdio(fd).map(|fd| (fd, target)));
        let side = side.transpose()?;
        let mut prepared = Prepared::new(
            c_string(path.as_os_str())?,
            args,
            env,
            cwd,
            fds,
            true,
            confinement,
        );
        prepared.side = side.as_ref().map(|(fd, target)| (fd.as_raw_fd(), *target));
        let pid = spawn(&prepared)?;
        drop(child_ends);
        drop(side);
        // From here on a failure drops the child, which reaps it.
        let mut child = MarkedChild::new(pid);
        let [stdin, stdout, stderr] = ours;
        child.stdin = stdin.map(pipe::Sender::from_owned_fd).transpose()?;
        child.stdout = stdout.map(pipe::Receiver::from_owned_fd).transpose()?;
        child.stderr = stderr.map(pipe::Receiver::from_owned_fd).transpose()?;
        Ok(child)
    }
}

/// The child's environment: troupe's, changed as the command says.
fn environment(command: &std::process::Command) -> BTreeMap<OsString, OsString> {
    let mut env: BTreeMap<OsString, OsString> = std::env::vars_os().collect();
    for (key, value) in command.get_envs() {
        match value {
            Some(value) => env.insert(key.to_os_string(), value.to_os_string()),
            None => env.remove(key),
        };
    }
    env
}

/// Where `program` is, searched on `path` (the child's `PATH`) like `execvp` does when it names
/// no directory.
fn find_program(program: &OsStr, path: Option<&OsString>) -> io::Result<PathBuf> {
    if program.as_bytes().contains(&b'/') {
        return Ok(PathBuf::from(program));
    }
    let default = OsString::from("/usr/local/bin:/usr/bin:/bin");
    for dir in std::env::split_paths(path.unwrap_or(&default)) {
        let candidate = match dir.as_os_str().is_empty() {
            true => Path::new(".").join(program),
            false => dir.join(program),
        };
        if is_executable_file(&candidate) {
            return Ok(candidate);
        }
    }
    Err(io::Error::new(
        io::ErrorKind::NotFound,
        format!("{} is not on PATH", program.to_string_lossy()),
    ))
}

fn is_executable_file(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// `fd`, or a copy of it numbered above 2, so the child's `dup2` onto 0, 1 and 2 never
/// overwrites a descriptor it still has to copy.
fn above_stdio(fd: OwnedFd) -> io::Result<OwnedFd> {
    if fd.as_raw_fd() > 2 {
        return Ok(fd);
    }
    Ok(rustix::io::fcntl_dupfd_cloexec(&fd, 3)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    #[tokio::test]
    async fn a_child_gets_its_stdio_directory_environment_and_group() {
        let live = LiveCall::start().unwrap();
        let dir = tempfile::tempdir().unwrap();
        let mut marked = MarkedCommand::new("sh", &live);
        marked
            .command()
            .args([
                "-c",
                "read line; echo \"$line $(pwd) $MARK $(cut -d' ' -f5 /proc/$$/stat) $$\"; exit 3",
            ])
            .current_dir(dir.path())
            .env("MARK", "marked");
        marked.stdin(ChildIo::Piped).stdout(ChildIo::Piped);
        let mut child = marked.spawn().unwrap();
        let mut stdin = child.stdin.take().unwrap();
        stdin.write_all(b"hello\n").await.unwrap();
        drop(stdin);
        let mut out = String::new();
        child
            .stdout
            .take()
            .unwrap()
            .read_to_string(&mut out)
            .await
            .unwrap();
        let status = child.wait().await.unwrap();
        assert_eq!(status.code(), Some(3));
        let words: Vec<&str> = out.split_whitespace().collect();
        let here = dir.path().canonicalize().unwrap();
        assert_eq!(words[..3], ["hello", here.to_str().unwrap(), "marked"]);
        assert_eq!(words[3], words[4], "the child leads its own process group");
    }

    #[tokio::test]
    async fn a_missing_program_is_not_found_and_an_unrunnable_one_fails_the_spawn() {
        let live = LiveCall::start().unwrap();
        let err = MarkedCommand::new("troupe-no-such-program", &live)
            .spawn()
            .unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::NotFound);
        let dir = tempfile::tempdir().unwrap();
        let script = dir.path().join("not-a-program");
        std::fs::write(&script, "\u{7f}ELF garbage").unwrap();
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        // Another test's fork may hold the file open for writing a moment longer (ETXTBSY).
        let mut err = MarkedCommand::new(&script, &live).spawn().unwrap_err();
        for _ in 0..100 {
            if err.raw_os_error() != Some(libc::ETXTBSY) {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            err = MarkedCommand::new(&script, &live).spawn().unwrap_err();
        }
        assert_eq!(err.raw_os_error(), Some(libc::ENOEXEC), "{err}");
    }
}
