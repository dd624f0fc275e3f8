//! Counting an `strace -f -yy` trace: the system calls of the traced program's own threads,
//! told apart from those of the processes it starts by the clone flags.

use std::collections::{HashMap, HashSet};

/// System calls whose number depends on scheduling rather than on what the program does.
const NOISY: &[&str] = &[
    "futex",
    "epoll_wait",
    "epoll_pwait",
    "epoll_pwait2",
    "sched_yield",
    "nanosleep",
    "clock_nanosleep",
    "rt_sigtimedwait",
];

/// The figures the guard compares.
#[derive(Debug, Clone, Default)]
pub struct Counts {
    /// Every system call of the program's threads, less the noisy ones.
    pub syscalls: u64,
    /// Threads, the main one included.
    pub threads: u64,
    /// Processes its threads started.
    pub processes: u64,
    pub openat: u64,
    pub failed_readlink: u64,
    /// `fsync` and `fdatasync`.
    pub syncs: u64,
    /// Those of a team store's shared files (`.troupe/teams/<team>/`, less the agents' own
    /// transcripts): the roster, the event log, mailboxes, requests, tasks.
    pub store_syncs: u64,
    /// `mmap`, `munmap`, `mremap` and `brk`: the allocator's traffic with the kernel.
    pub memory_maps: u64,
}

/// One system call as the trace shows it, unfinished halves joined.
struct Call {
    pid: u32,
    name: String,
    args: String,
    result: String,
}

impl Counts {
    /// The figures in the order the guard reports them.
    pub fn figures(&self) -> [(&'static str, u64); 7] {
        [
            ("syscalls", self.syscalls),
            ("threads", self.threads),
            ("processes", self.processes),
            ("openat", self.openat),
            ("failed_readlink", self.failed_readlink),
            ("syncs", self.syncs),
            ("memory_maps", self.memory_maps),
        ]
    }

    /// Each figure at its smallest over `runs`.
    pub fn floor(runs: &[Counts]) -> Counts {
        let min = |f: fn(&Counts) -> u64| runs.iter().map(f).min().unwrap_or(0);
        Counts {
            syscalls: min(|c| c.syscalls),
            threads: min(|c| c.threads),
            processes: min(|c| c.processes),
            openat: min(|c| c.openat),
            failed_readlink: min(|c| c.failed_readlink),
            syncs: min(|c| c.syncs),
            store_syncs: min(|c| c.store_syncs),
            memory_maps: min(|c| c.memory_maps),
        }
    }

    /// Counts the trace of one run (`strace -f -yy -o FILE`); the first line's process is the
    /// program.
    pub fn of_trace(text: &str) -> Counts {
        let calls = calls(text);
        let Some(main) = calls.first().map(|c| c.pid) else {
            return Counts::default();
        };
        // First the family tree: a thread's first calls may come before its creator's clone
        // returns in the trace.
        let mut own: HashSet<u32> = HashSet::from([main]);
        let mut counts = Counts {
            threads: 1,
            ..Counts::default()
        };
        for call in &calls {
            if !own.contains(&call.pid) || !call.name.starts_with("clone") && call.name != "vfork" {
                continue;
            }
            let Ok(new) = call.result.trim().parse::<u32>() else {
                continue;
            };
            match call.args.contains("CLONE_THREAD") {
                true => {
                    own.insert(new);
                    counts.threads += 1;
                }
                false => counts.processes += 1,
            }
        }
        for call in calls.iter().filter(|c| own.contains(&c.pid)) {
            let failed = call.result.trim_start().starts_with('-');
            let eventfd = call.args.contains("anon_inode:[eventfd]");
            if NOISY.contains(&call.name.as_str()) || eventfd {
                continue;
            }
            counts.syscalls += 1;
            match call.name.as_str() {
                "openat" | "open" => counts.openat += 1,
                "readlink" | "readlinkat" if failed => counts.failed_readlink += 1,
                "fsync" | "fdatasync" => {
                    counts.syncs += 1;
                    let fd = call.args.split(',').next().unwrap_or_default();
                    if fd.contains("/.troupe/teams/") && !fd.contains("/transcripts/") {
                        counts.store_syncs += 1;
                    }
                }
                "mmap" | "munmap" | "mremap" | "brk" => counts.memory_maps += 1,
                _ => {}
            }
        }
        counts
    }
}

/// The trace's system calls, each once, with its arguments and result.
fn calls(text: &str) -> Vec<Call> {
    let mut pending: HashMap<u32, (String, String)> = HashMap::new();
    let mut out = Vec::new();
    for line in text.lines() {
        let Some((pid, rest)) = line.split_once(' ') else {
            continue;
        };
        let Ok(pid) = pid.parse::<u32>() else {
            continue;
        };
        let rest = rest.trim_start();
        if rest.starts_with("+++") || rest.starts_with("---") {
            continue;
        }
        if let Some(resumed) = rest.strip_prefix("<... ") {
            let Some((name, tail)) = resumed.split_once(" resumed>") else {
                continue;
            };
            let (_, args) = pending.remove(&pid).unwrap_or_default();
            out.push(Call {
                pid,
                name: name.to_string(),
                args: format!("{args}{tail}"),
                result: result_of(tail),
            });
            continue;
        }
        let Some((name, args)) = rest.split_once('(') else {
            continue;
        };
        if let Some(args) = args.strip_suffix(" <unfinished ...>") {
            pending.insert(pid, (name.to_string(), args.to_string()));
            continue;
        }
        out.push(Call {
            pid,
            name: name.to_string(),
            args: args.to_string(),
            result: result_of(args),
        });
    }
    out
}

/// What follows the last ` = ` of a call's line.
fn result_of(tail: &str) -> String {
    tail.rsplit_once(" = ")
        .map(|(_, r)| r.to_string())
        .unwrap_or_default()
}

#[test]
fn a_trace_is_counted_by_thread_and_process() {
    let trace = "\
100 execve(\"/bin/troupe\", [\"troupe\"], 0x1 /* 3 vars */) = 0
100 clone3({flags=CLONE_VM|CLONE_THREAD|CLONE_SIGHAND, child_tid=0x1}, 88 <unfinished ...>
101 openat(AT_FDCWD</w>, \"/w/a\", O_RDONLY) = 3</w/a>
100 <... clone3 resumed> => {parent_tid=[101]}, 88) = 101
101 futex(0x1, FUTEX_WAIT, 0) = 0
101 write(8<anon_inode:[eventfd]>, \"\", 8) = 8
100 clone3({flags=CLONE_VM|CLONE_VFORK, exit_signal=SIGCHLD}, 88) = 102
102 openat(AT_FDCWD</w>, \"/lib/libc.so\", O_RDONLY) = 3
100 readlink(\"/w\", 0x1, 1023) = -1 EINVAL (Invalid argument)
100 fdatasync(3</w/a>) = 0
100 mmap(NULL, 4096, PROT_READ, MAP_PRIVATE, -1, 0) = 0x7f
102 +++ exited with 0 +++
";
    let c = Counts::of_trace(trace);
    assert_eq!(c.threads, 2);
    assert_eq!(c.processes, 1);
    assert_eq!(c.openat, 1, "the child's openat is not troupe's");
    assert_eq!(c.failed_readlink, 1);
    assert_eq!(c.syncs, 1);
    assert_eq!(c.memory_maps, 1);
    // execve, clone3 ×2, openat, readlink, fdatasync, mmap: no futex, no eventfd write.
    assert_eq!(c.syscalls, 7);
}

/// How far a figure may grow past its baseline before a guard fails.
pub const TOLERANCE: f64 = 1.25;

/// Compares `measured` (what `what` costs) with the baseline in `fixtures/<file>`, failing on
/// any figure more than 25 % over it with `hint` on where to look; with
/// `TROUPE_WRITE_BASELINE` set, writes them as the new baseline.
pub fn within_budget(file: &str, measured: &[(&'static str, u64)], what: &str, hint: &str) {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(file);
    if std::env::var_os("TROUPE_WRITE_BASELINE").is_some() {
        let json: serde_json::Map<String, serde_json::Value> = measured
            .iter()
            .map(|(k, v)| (k.to_string(), (*v).into()))
            .collect();
        let text = serde_json::to_string_pretty(&json).unwrap();
        std::fs::write(&path, text + "\n").unwrap();
        eprintln!("wrote {}", path.display());
        return;
    }
    let baseline: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let mut over = Vec::new();
    let mut table = String::new();
    for &(name, value) in measured {
        let base = baseline[name]
            .as_u64()
            .unwrap_or_else(|| panic!("the baseline has no figure {name}"));
        let limit = (base as f64 * TOLERANCE).ceil() as u64;
        table.push_str(&format!(
            "{name:<24} {value:>9} (baseline {base}, limit {limit})\n"
        ));
        if value > limit {
            over.push(name);
        }
    }
    eprintln!("{what}:\n{table}");
    assert!(
        over.is_empty(),
        "{what} costs more than 25 % over its baseline in {over:?}:\n{table}\
         Find what made it ({hint}); if the cost is meant, write the new baseline \
         (TROUPE_WRITE_BASELINE=1) and commit it with the change."
    );
}

/// Gives `cmd` (a wrapper running `inner`'s program) the environment `inner` was given.
pub fn same_env(cmd: &mut std::process::Command, inner: &std::process::Command) {
    for (key, value) in inner.get_envs() {
        match value {
            Some(v) => cmd.env(key, v),
            None => cmd.env_remove(key),
        };
    }
}
