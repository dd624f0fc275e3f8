#!/usr/bin/env bash
# Clone to first answer, timed: what a newcomer does following README.md's quick start on a
# fresh clone — the release build of the first command, then the fake model and the first
# `-p` answer of "Try it without an API key". Prints each step's time and the total.
#
#   scripts/first-answer.sh [REPOSITORY]    # default: this checkout (its committed HEAD)
#
# The clone and its build go to a temporary folder that is removed at the end (a release build
# takes a few GB; KEEP=1 keeps it, to run the release benches there next). Crates already in Cargo's download cache are not downloaded again; the
# compilation is all done. Run it on a quiet machine: the figure is the build's.
set -euo pipefail

src="${1:-$(cd "$(dirname "$0")/.." && pwd)}"
work="$(mktemp -d)"
server=""
cleanup() {
    [ -n "$server" ] && kill "$server" 2>/dev/null || true
    if [ "${KEEP:-}" = 1 ]; then echo "kept: $work/troupe"; else rm -rf "$work"; fi
}
trap cleanup EXIT

now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.0f", b - a }'; }

start="$(now)"
git clone -q "$src" "$work/troupe"
cd "$work/troupe"
echo "== cloned in $(since "$start") s"

step="$(now)"
# The README's first command, with a target folder of the clone's own.
CARGO_TARGET_DIR="$work/troupe/target" cargo build --release --bins --example fake_model
./target/release/troupe --help > /dev/null
echo "== release build in $(since "$step") s"

step="$(now)"
./target/release/examples/fake_model > "$work/fake_model.env" &
server=$!
for _ in $(seq 1 100); do
    grep -q ANTHROPIC_BASE_URL "$work/fake_model.env" 2>/dev/null && break
    sleep 0.1
done
# shellcheck disable=SC1091
. "$work/fake_model.env"
mkdir -p "$work/try" && cd "$work/try" && echo "hello" > README.md
answer="$("$work/troupe/target/release/troupe" -p "list the files here")"
echo "$answer"
echo "== first answer in $(since "$step") s"
echo "clone to first answer: $(since "$start") s"
