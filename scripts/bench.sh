#!/usr/bin/env bash
# Runs every troupe benchmark in release mode and prints a summary table of the figures that
# issues 2 and 3 set targets for. Each bench also prints its own detailed table above.
#
#   scripts/bench.sh            # all of them (a few minutes on 2 cores, most of it building)
#   RUNS=50 TEAMMATES=100 scripts/bench.sh
#
# Timing figures depend on what else the machine is doing (other builds, fsync-heavy jobs):
# run it on a quiet machine.
set -euo pipefail
cd "$(dirname "$0")/.."

RUNS="${RUNS:-20}"
TEAM_RUNS="${TEAM_RUNS:-3}"
TEAMMATES="${TEAMMATES:-100}"
SENDS="${SENDS:-1000}"
MAILBOX_N="${MAILBOX_N:-50000}"

out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT

echo "== building (release) =="
cargo build --release -p troupe-store --examples
cargo bench -p troupe-cli --no-run
cargo bench -p troupe-mcp --no-run

echo
echo "== mailbox throughput (troupe-store example mailbox_bench) =="
cargo run --quiet --release -p troupe-store --example mailbox_bench -- "$MAILBOX_N" | tee "$out/mailbox"

echo
echo "== cross-process wake latency (troupe-store example wake_latency) =="
cargo run --quiet --release -p troupe-store --example wake_latency -- "$SENDS" | tee "$out/wake"

echo
echo "== headless round trip (troupe-cli bench headless) =="
cargo bench --quiet -p troupe-cli --bench headless -- --runs "$RUNS" | tee "$out/headless"

echo
echo "== compaction pipeline per model call, 200 rounds (troupe-agent bench compaction) =="
cargo bench --quiet -p troupe-agent --bench compaction | tee "$out/compaction"

echo
echo "== one MCP tool call over the server's own time (troupe-mcp bench call_overhead) =="
cargo bench --quiet -p troupe-mcp --bench call_overhead | tee "$out/mcp_call"

echo
echo "== headless loop with three MCP servers configured (troupe-cli bench mcp_startup) =="
cargo bench --quiet -p troupe-cli --bench mcp_startup -- --runs "$RUNS" | tee "$out/mcp_loop"

echo
echo "== $TEAMMATES teammates in one process (troupe-cli bench team_rss) =="
cargo bench --quiet -p troupe-cli --bench team_rss -- --runs "$TEAM_RUNS" --teammates "$TEAMMATES" | tee "$out/team"

echo
echo "== the team dashboard: latency, CPU, memory (troupe-cli bench watch) =="
cargo bench --quiet -p troupe-cli --bench watch | tee "$out/watch"

# The value of key=value on a bench's SUMMARY line.
val() { awk -v k="$2" '/^SUMMARY/ { for (i = 2; i <= NF; i++) if (index($i, k "=") == 1) print substr($i, length(k) + 2) }' "$1"; }
# msg/s (last column) of a mailbox_bench row.
rate() { awk -v c="$1" 'index($0, c " ") == 1 { print $NF }' "$out/mailbox"; }
# PASS/MISS for "value < target" (or ">= target" with ge).
check() { awk -v v="$1" -v t="$2" -v op="${3:-lt}" 'BEGIN { ok = (op == "ge") ? (v >= t) : (v < t); print (ok ? "PASS" : "MISS") }'; }

row() { printf '%-44s %14s %14s %6s\n' "$@"; }
echo
echo "== summary =="
row "figure" "measured" "target" ""
row "--------------------------------------------" "--------------" "--------------" "------"
m=$(val "$out/headless" headless_median_ms); row "headless -p round trip, median wall (ms)" "$m" "< 50" "$(check "$m" 50)"
m=$(val "$out/headless" headless_p90_ms);    row "headless -p round trip, p90 wall (ms)" "$m" "" ""
m=$(val "$out/headless" headless_peak_rss_mib); row "headless -p round trip, peak RSS (MiB)" "$m" "< 20" "$(check "$m" 20)"
m=$(val "$out/compaction" compaction_steady_us); row "compaction pipeline per call, steady (µs)" "$m" "< 1000" "$(check "$m" 1000)"
m=$(val "$out/compaction" compaction_cold_us);   row "compaction pipeline per call, cold (µs)" "$m" "< 1000" "$(check "$m" 1000)"
m=$(rate "append_many(1000), fsync"); row "mailbox append_many+deliver, fsync (msg/s)" "$m" ">= 50000" "$(check "$m" 50000 ge)"
m=$(rate "append, fsync");                row "mailbox single append+deliver, fsync (msg/s)" "$m" "" ""
m=$(rate "append, os-buffered");          row "mailbox single append, os-buffered (msg/s)" "$m" "" ""
m=$(val "$out/wake" wake_fsync_p50_ms); row "wake latency p50, fsync (ms)" "$m" "< 5" "$(check "$m" 5)"
m=$(val "$out/wake" wake_fsync_p99_ms); row "wake latency p99, fsync (ms)" "$m" "< 50" "$(check "$m" 50)"
m=$(val "$out/wake" wake_os_buffered_p50_ms); row "wake latency p50, os-buffered (ms)" "$m" "< 5" "$(check "$m" 5)"
m=$(val "$out/wake" wake_os_buffered_p99_ms); row "wake latency p99, os-buffered (ms)" "$m" "< 50" "$(check "$m" 50)"
m=$(val "$out/mcp_call" mcp_call_overhead_p50_ms); row "MCP call overhead over the server, p50 (ms)" "$m" "< 1" "$(check "$m" 1)"
m=$(val "$out/mcp_loop" mcp_loop_idle_delta_p50_ms); row "loop + 3 idle MCP servers, delta p50 (ms)" "$m" "< 2" "$(check "$m" 2)"
m=$(val "$out/mcp_loop" mcp_loop_delta_p50_ms); row "loop + 3 real MCP servers, delta p50 (ms)" "$m" "< 2" "$(check "$m" 2)"
m=$(val "$out/team" team_peak_rss_mib); row "$TEAMMATES teammates, peak RSS (MiB)" "$m" "< 100" "$(check "$m" 100)"
m=$(val "$out/team" team_wall_median_ms); row "$TEAMMATES teammates, median wall (ms)" "$m" "" ""
m=$(val "$out/watch" quiet_p99_ms); row "dashboard event -> screen p99, quiet (ms)" "$m" "< 50" "$(check "$m" 50)"
m=$(val "$out/watch" load_p99_ms); row "dashboard event -> screen p99, 1k ev/s (ms)" "$m" "< 50" "$(check "$m" 50)"
m=$(val "$out/watch" idle_cpu_pct); row "dashboard CPU, idle team (% of a core)" "$m" "< 1" "$(check "$m" 1)"
m=$(val "$out/watch" rss_100k_mib); row "dashboard peak RSS, 100k events (MiB)" "$m" "< 30" "$(check "$m" 30)"
