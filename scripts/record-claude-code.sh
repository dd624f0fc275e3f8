#!/usr/bin/env bash
# Records Claude Code's headless output on the contract session (crates/testkit/src/contract.rs)
# into crates/cli/tests/fixtures/claude-code/, which crates/cli/tests/contract.rs compares
# troupe's output with field by field. Run it again when moving to a newer Claude Code.
# Needs npm (the registry) and cargo; touches nothing outside a temporary folder.
set -euo pipefail
cd "$(dirname "$0")/.."
VERSION="${CLAUDE_CODE_VERSION:-2.1.328}"
out="crates/cli/tests/fixtures/claude-code"
tmp="$(mktemp -d)"
trap 'kill "${server_pid:-0}" 2>/dev/null || true; rm -rf "$tmp"' EXIT

npm install --prefix "$tmp/npm" --no-audit --no-fund "@anthropic-ai/claude-code@$VERSION" >/dev/null
cargo build -q -p troupe-testkit --example contract_model
target="$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')"
"$target/debug/examples/contract_model" > "$tmp/server.env" &
server_pid=$!
until grep -q ANTHROPIC_BASE_URL "$tmp/server.env" 2>/dev/null; do sleep 0.1; done
eval "$(grep ^export "$tmp/server.env")"

mkdir -p "$tmp/ws" "$tmp/home"
claude() {
  (cd "$tmp/ws" && env HOME="$tmp/home" CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 DISABLE_AUTOUPDATER=1 \
    "$tmp/npm/node_modules/.bin/claude" "$@")
}
claude -p --output-format stream-json --verbose --allowedTools Bash -- "Run echo contract" > "$out/stream-json.jsonl"
claude -p --output-format json --verbose --allowedTools Bash -- "Run echo contract" > "$out/json-verbose.json"
claude -p --output-format json --allowedTools Bash -- "Run echo contract" > "$out/json.json"
echo "$VERSION" > "$out/VERSION"
echo "recorded Claude Code $VERSION into $out"
