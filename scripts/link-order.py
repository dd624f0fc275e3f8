#!/usr/bin/env python3
"""Writes crates/cli/link/hot-functions.txt: the functions of the release `troupe` binary that
`troupe --version`, headless runs (`troupe -p "list the files here"` against the try-it fake
model: one bash call and two model calls; in the default and the bypass permission modes, text
and JSON output) and a lead spawning a team of in-process teammates (the team_rss bench's
scripted server, `TEAMMATES` of them) execute, in the order they first run. crates/cli/build.rs hands it to the linker
(`--symbol-ordering-file`), which places those functions together at the start of .text. Why:
the kernel maps a binary's code in blocks around each page touched, so code scattered over 20
MB of .text made ~12 MB of it resident in a 30 ms run. Beside it, the digest of
Cargo.lock and the manifests (`hot-functions.inputs`), which tests/link_order.rs checks.

    python3 scripts/link-order.py        # two release builds (map, then ordered) + valgrind

Needs valgrind (lackey records every superblock executed). The list only orders the link: a
stale one (functions renamed or gone) costs memory, never correctness; regenerate it after large
changes to start-up or the headless loop, and after any change to Cargo.lock or a manifest.
"""
import bisect, json, os, re, shutil, socket, subprocess, sys, tempfile, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "crates/cli/link/hot-functions.txt")
INPUTS = os.path.join(ROOT, "crates/cli/link/hot-functions.inputs")


def build_inputs():
    """The digest of what decides the list's names besides the code: a release symbol's hash
    covers its crate's and its dependencies' versions, features and profile, so any change to
    Cargo.lock or a manifest renames functions throughout. The test `link_order` computes the
    same digest (FNV-1a 64 over each file's path and its lines without comments or blanks) and
    fails when it differs from the one written beside the list."""
    paths = ["Cargo.lock", "Cargo.toml"] + sorted(
        os.path.join("crates", d, "Cargo.toml") for d in os.listdir(os.path.join(ROOT, "crates"))
        if os.path.isfile(os.path.join(ROOT, "crates", d, "Cargo.toml")))
    h = 0xcbf29ce484222325
    def feed(data):
        nonlocal h
        for b in data:
            h = ((h ^ b) * 0x100000001b3) & 0xffffffffffffffff
    for rel in paths:
        feed(rel.encode() + b"\n")
        for line in open(os.path.join(ROOT, rel), encoding="utf-8"):
            line = line.strip()
            if line and not line.startswith("#"):
                feed(line.encode() + b"\n")
    return "%016x" % h


def target_dir():
    return os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target"))


def build(env_extra):
    env = dict(os.environ, **env_extra)
    subprocess.run(["cargo", "build", "--release", "--bin", "troupe", "--example", "fake_model",
                    "-p", "troupe-cli", "-p", "troupe-testkit"], cwd=ROOT, env=env, check=True)


def map_symbols(path):
    """(start, end, symbol) of every input section in .text, from an lld map file. The map shows
    symbols demangled; the ordering file wants them as the objects name them, which a Rust
    function's own section (`.text.<mangled>`) spells."""
    sections = []
    in_text = False
    pending = None
    line_re = re.compile(r"^\s*([0-9a-f]+)\s+([0-9a-f]+)\s+([0-9a-f]+)\s+(\d+)\s(.*)$")
    for line in open(path, errors="replace"):
        m = line_re.match(line)
        if not m:
            continue
        vma, size, rest = int(m.group(1), 16), int(m.group(3), 16), m.group(5)
        indent = len(rest) - len(rest.lstrip(" "))
        name = rest.strip()
        if indent == 0:  # an output section
            in_text = name == ".text"
            pending = None
            continue
        if not in_text:
            continue
        if indent < 16:  # an input section: `file:(.text.SYMBOL)`, the symbol mangled
            pending = None
            m = re.search(r":\(\.text\.(?:unlikely\.|hot\.)?([^)]+)\)$", name)
            if m:
                sections.append((vma, vma + size, m.group(1)))
            else:  # a whole `.text` (C or assembly): named by its first symbol
                pending = (vma, vma + size)
        elif pending and name and not name.startswith("$"):
            sections.append((pending[0], pending[1], name))
            pending = None
    sections.sort()
    return sections


def entry_point(binary):
    out = subprocess.run(["readelf", "-hW", binary], capture_output=True, text=True, check=True).stdout
    for line in out.splitlines():
        if "Entry point address:" in line:
            return int(line.split(":")[1], 16)
    raise SystemExit("no entry point in " + binary)


# Enough teammates that a team's code under load runs (the group commit with writers waiting,
# the blocking pool growing, mail arriving while the lead works): three ran too little of it,
# and at a thousand teammates the cold code it left out made 4.8 of the 6.8 MiB of code resident.
TEAMMATES = 30


def team_server():
    """The team_rss bench's scripted server for `TEAMMATES` teammates, kept up by `--serve`."""
    out = subprocess.run(["cargo", "bench", "-p", "troupe-cli", "--bench", "team_rss", "--profile",
                          "dev", "--no-run", "--message-format", "json"], cwd=ROOT,
                         capture_output=True, text=True, check=True).stdout
    bench = None
    for line in out.splitlines():
        if '"executable"' in line and "team_rss" in line:
            bench = json.loads(line).get("executable") or bench
    if not bench:
        raise SystemExit("cargo built no team_rss bench")
    proc = subprocess.Popen([bench, "--teammates", str(TEAMMATES), "--serve", "900"], stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True)
    line = proc.stdout.readline()
    m = re.search(r"ANTHROPIC_BASE_URL=(\S+)", line)
    if not m:
        proc.kill()
        raise SystemExit("the team_rss bench did not say where it serves: " + line)
    return {"url": m.group(1), "process": proc}


def elf_type(binary):
    out = subprocess.run(["readelf", "-hW", binary], capture_output=True, text=True, check=True).stdout
    for line in out.splitlines():
        if line.strip().startswith("Type:"):
            return line.split(":")[1].split()[0]
    raise SystemExit("no ELF type in " + binary)


def superblocks(binary, args, env):
    """Addresses (relative to the binary's load base) of the superblocks a run executes, in
    order of first execution."""
    log = tempfile.mktemp(suffix=".lackey")
    # Without chasing: valgrind otherwise carries a superblock on through a direct call or jump,
    # so a small function called that way (drop glue, a `write_fmt`) never starts a superblock of
    # its own, is left out of the list and costs a 64 KiB block of cold code at run time.
    subprocess.run(["valgrind", "--tool=lackey", "--trace-superblocks=yes", "--vex-guest-chase=no",
                    "--log-file=" + log,
                    binary] + args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   cwd=env["PWD"])
    seen, order = set(), []
    with open(log, errors="replace") as f:
        for line in f:
            if line.startswith("SB "):
                a = int(line.split()[1], 16)
                if a not in seen:
                    seen.add(a)
                    order.append(a)
    os.unlink(log)
    return order


def main():
    td = target_dir()
    binary = os.path.join(td, "release/troupe")
    work = tempfile.mkdtemp(prefix="link-order-")
    link_map = os.path.join(work, "troupe.map")
    build({"TROUPE_LINK_MAP": link_map, "TROUPE_LINK_ORDER": "off"})
    sections = map_symbols(link_map)
    starts = [s[0] for s in sections]
    entry = entry_point(binary)

    port = socket.socket(); port.bind(("127.0.0.1", 0)); p = port.getsockname()[1]; port.close()
    server = subprocess.Popen([os.path.join(td, "release/examples/fake_model"), str(p)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(0.5)
    ws = os.path.join(work, "ws")
    os.makedirs(os.path.join(ws, "src"))
    for name, text in [("Cargo.toml", "[package]\nname = \"demo\"\n"), ("README.md", "# demo\n"),
                       ("src/main.rs", "fn main() {}\n")]:
        open(os.path.join(ws, name), "w").write(text)
    env = {"PATH": os.environ["PATH"], "HOME": os.path.join(ws, ".home"), "PWD": ws,
           "ANTHROPIC_BASE_URL": "http://127.0.0.1:%d" % p, "ANTHROPIC_API_KEY": "fake-key"}
    try:
        # The runs the benches and a person make: the default permission mode and the bypass the
        # benches use, text and JSON output. Each path runs code of its own (the permission
        # check, the result's encoding); a function left out lands among the cold ones and
        # costs a 64 KiB block of resident code.
        runs = [["--version"],
                ["-p", "list the files here"],
                ["-p", "list the files here", "--permission-mode", "bypassPermissions"],
                ["-p", "list the files", "--output-format", "json",
                 "--permission-mode", "bypassPermissions"]]
        addrs = []
        for args in runs:
            addrs += superblocks(binary, args, env)
    finally:
        server.kill()
    # Last, a lead spawning its teammates (the team_rss bench's scripted server):
    # a team's code follows the headless run's, so a plain run's pages do not change and a
    # team's hot code is not scattered over the cold rest.
    team = team_server()
    try:
        team_env = dict(env, ANTHROPIC_BASE_URL=team["url"])
        addrs += superblocks(binary, ["-p", "spawn the team", "--output-format", "json",
                                      "--permission-mode", "bypassPermissions",
                                      "--team-timeout", "120"], team_env)
    finally:
        team["process"].kill()
    # valgrind loads a position-independent executable at 0x108000 and a fixed one (build.rs
    # links without -pie) where it was linked; its entry point must have run.
    base = 0x108000 if elf_type(binary) == "DYN" else 0
    if entry + base not in set(addrs):
        raise SystemExit("the entry point is not among the executed addresses: valgrind's load "
                         "base is not %#x here" % base)
    names, seen = [], set()
    for a in addrs:
        a -= base
        i = bisect.bisect_right(starts, a) - 1
        if i >= 0 and sections[i][0] <= a < sections[i][1]:
            sym = sections[i][2]
            if sym not in seen:
                seen.add(sym)
                names.append(sym)
    size = sum(e - s for s, e, n in sections if n in seen)
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    with open(OUT, "w") as f:
        f.write("\n".join(names) + "\n")
    with open(INPUTS, "w") as f:
        f.write(build_inputs() + "\n")
    shutil.rmtree(work, ignore_errors=True)
    print("%d functions (%d KiB of code) -> %s" % (len(names), size // 1024, OUT))
    build({})


if __name__ == "__main__":
    main()
