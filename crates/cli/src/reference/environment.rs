//! docs/reference/environment.md: the environment variables troupe reads, from one list,
//! [`VARIABLES`]. A test reads every crate's sources for variable names in string literals
//! (`"TROUPE_…"`, `"ANTHROPIC_…"`, …) and fails on one the list does not hold, so a variable
//! added to the code without a line here fails CI.

use std::fmt::Write;

/// Who a variable is for.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Audience {
    /// troupe's own variables.
    Troupe,
    /// Claude Code's (or the providers' SDKs') variables, read as Claude Code reads them.
    Claude,
    /// Variables troupe sets for the processes it starts.
    Set,
    /// The machine's usual variables.
    System,
    /// For troupe's own tests, benches and CI.
    Tests,
}

impl Audience {
    const ALL: [Audience; 5] = [
        Audience::Troupe,
        Audience::Claude,
        Audience::Set,
        Audience::System,
        Audience::Tests,
    ];

    fn heading(self) -> &'static str {
        match self {
            Audience::Troupe => "troupe's variables",
            Audience::Claude => "Claude Code's and the providers' variables",
            Audience::Set => "Variables troupe sets for the processes it starts",
            Audience::System => "The machine's variables",
            Audience::Tests => "Tests, benches and CI",
        }
    }
}

/// One variable: its name, who it is for, what it does.
pub struct Variable {
    pub name: &'static str,
    pub audience: Audience,
    pub what: &'static str,
}

const fn var(name: &'static str, audience: Audience, what: &'static str) -> Variable {
    Variable {
        name,
        audience,
        what,
    }
}

use Audience::{Claude, Set, System, Tests, Troupe};

/// Every variable troupe reads or sets, with what it does.
pub const VARIABLES: &[Variable] = &[
    var("TROUPE_MODEL", Troupe, "The model when `--model` is not given."),
    var("TROUPE_TEAM", Troupe, "The team to join or act on when `--team` is not given."),
    var("TROUPE_STORE", Troupe, "Where the team's state lives when `--store` is not given: `file`, or `nats://…` (credentials are taken out of the environment at start; children see the URL without them)."),
    var("TROUPE_STREAM_IDLE_TIMEOUT_MS", Troupe, "The stream idle deadline in milliseconds (default 90 000): a model stream with no content that long is abandoned and retried."),
    var("TROUPE_RETRY_BASE_MS", Troupe, "The first retry wait of the model clients, in milliseconds."),
    var("TROUPE_OPENAI_TOOL_CHOICE", Troupe, "`required` sends `tool_choice: \"required\"` to an OpenAI-compatible server (a small model that never calls a tool by itself); default `auto`."),
    var("TROUPE_REQUIRE_TRUST", Troupe, "`1`: a script run (`-p`, the SDK) in a folder not trusted is refused with exit 3 instead of running the folder's hooks and servers."),
    var("TROUPE_WORKSPACE_TRUST", Set, "The lead's trust decision handed to teammate processes (`untrusted`, or `trusted:<hash>`, honoured only for the same hash)."),
    var("TROUPE_HOST_NAME", Troupe, "Names this machine for NATS leases instead of its host name (containers that all call themselves `localhost`)."),
    var("TROUPE_WEB_SEARCH_URL", Troupe, "The search endpoint `web_search` calls (docs/guide/tools.md)."),
    var("TROUPE_LOG", Troupe, "The log filter (`debug`, `troupe_team=trace`, …) for `.troupe/logs/troupe.log`; `--debug` shows it on stderr."),
    var("TROUPE_WAIT_NOTICE_MS", Troupe, "How long a pending request (a plan, a permission) waits before the lead's run mentions it, in milliseconds."),
    var("TROUPE_AGENT_HEADER", Tests, "`1` sends the `x-troupe-agent` header naming the agent on every model call (the fake model routes its scripts by it; a real provider never learns agent names)."),
    var("TROUPE_PROJECT_DIR", Set, "The workspace, for hooks (beside Claude Code's `CLAUDE_PROJECT_DIR`)."),
    var("TROUPE_TOOL_CALL", Set, "The marker every process of a tool call carries, by which troupe finds and ends them all."),
    var("ANTHROPIC_API_KEY", Claude, "The Anthropic API key (picks the Anthropic provider)."),
    var("ANTHROPIC_AUTH_TOKEN", Claude, "A bearer token for an Anthropic gateway, sent when no API key is set."),
    var("ANTHROPIC_BASE_URL", Claude, "The Anthropic endpoint (a gateway, or the try-it fake model)."),
    var("ANTHROPIC_CUSTOM_HEADERS", Claude, "Extra request headers, one `Name: value` a line."),
    var("ANTHROPIC_MODEL", Claude, "The model, after `--model`, `TROUPE_MODEL` and the settings."),
    var("ANTHROPIC_DEFAULT_OPUS_MODEL", Claude, "The model the alias `opus` (and `opusplan`) stands for."),
    var("ANTHROPIC_DEFAULT_SONNET_MODEL", Claude, "The model the alias `sonnet` (and `default`) stands for."),
    var("ANTHROPIC_DEFAULT_HAIKU_MODEL", Claude, "The model the alias `haiku` stands for."),
    var("ANTHROPIC_SMALL_FAST_MODEL", Claude, "The older name of `ANTHROPIC_DEFAULT_HAIKU_MODEL`, read after it."),
    var("OPENAI_API_KEY", Claude, "Sent as a bearer token to an OpenAI-compatible server (api.openai.com needs it; local servers do not)."),
    var("OPENAI_BASE_URL", Claude, "An OpenAI-compatible Chat Completions endpoint (Ollama, vLLM, llama.cpp, LM Studio); picks the OpenAI provider."),
    var("OPENAI_ADMIN_API_KEY", Claude, "Never handed to a child process (taken out of the environment with the other keys)."),
    var("DISABLE_PROMPT_CACHING", Claude, "Set to anything but `0` or `false`: prompt caching off."),
    var("CLAUDE_CODE_MAX_OUTPUT_TOKENS", Claude, "The output token limit of one model call when `--max-tokens` is not given."),
    var("MAX_THINKING_TOKENS", Claude, "A thinking budget when no flag sets one."),
    var("CLAUDE_CODE_EFFORT_LEVEL", Claude, "The effort when `--effort` is not given."),
    var("CLAUDE_CONFIG_DIR", Claude, "Where `~/.claude.json` is looked for (user-scope MCP servers)."),
    var("MCP_TIMEOUT", Claude, "An MCP server's start-up timeout in milliseconds, when the settings give none."),
    var("MCP_TOOL_TIMEOUT", Claude, "An MCP call's timeout in milliseconds, when the settings give none."),
    var("CLAUDE_PROJECT_DIR", Set, "The workspace, for hooks, as Claude Code sets it."),
    var("CLAUDE_ENV_FILE", Set, "For SessionStart hooks: a file whose `export NAME=value` lines join the environment of every later command."),
    var("CLAUDE_PLUGIN_ROOT", Set, "A plugin's folder, expanded in its hooks and MCP servers and exported to them."),
    var("CLAUDE_CODE_ENABLE_TELEMETRY", Claude, "`1`: telemetry on, exported where the `OTEL_*` variables say (docs/guide/telemetry.md). Honoured from the environment, user settings and `--settings`, never a project's settings."),
    var("OTEL_METRICS_EXPORTER", Claude, "`otlp`: Claude Code's metrics are exported (`none`: not)."),
    var("OTEL_LOGS_EXPORTER", Claude, "`otlp`: Claude Code's events are exported as log records."),
    var("OTEL_TRACES_EXPORTER", Claude, "`otlp`: a trace per turn, a span per model call and tool call, joined across teammates."),
    var("OTEL_EXPORTER_OTLP_PROTOCOL", Claude, "`http/protobuf` (default) or `http/json`; `grpc` is warned about and sent as `http/protobuf`."),
    var("OTEL_EXPORTER_OTLP_ENDPOINT", Claude, "The collector's base URL (default `http://localhost:4318`); `/v1/metrics`, `/v1/logs` and `/v1/traces` are added."),
    var("OTEL_EXPORTER_OTLP_HEADERS", Claude, "Headers for every export, `Name=value,…` (percent-encoded values)."),
    var("OTEL_EXPORTER_OTLP_METRICS_PROTOCOL", Claude, "The metrics' protocol, over the general one."),
    var("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", Claude, "The metrics' full URL, over the general endpoint."),
    var("OTEL_EXPORTER_OTLP_METRICS_HEADERS", Claude, "Headers for the metrics, added to the general ones."),
    var("OTEL_EXPORTER_OTLP_LOGS_PROTOCOL", Claude, "The events' protocol, over the general one."),
    var("OTEL_EXPORTER_OTLP_LOGS_ENDPOINT", Claude, "The events' full URL, over the general endpoint."),
    var("OTEL_EXPORTER_OTLP_LOGS_HEADERS", Claude, "Headers for the events, added to the general ones."),
    var("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", Claude, "The traces' protocol, over the general one."),
    var("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", Claude, "The traces' full URL, over the general endpoint."),
    var("OTEL_EXPORTER_OTLP_TRACES_HEADERS", Claude, "Headers for the traces, added to the general ones."),
    var("OTEL_METRIC_EXPORT_INTERVAL", Claude, "Milliseconds between metric exports (default 60 000); the run's end exports what is left."),
    var("OTEL_LOGS_EXPORT_INTERVAL", Claude, "Milliseconds between event (and span) exports (default 5 000)."),
    var("OTEL_LOG_USER_PROMPTS", Claude, "`1`: a prompt's text goes into its `user_prompt` event (otherwise `<REDACTED>`)."),
    var("OTEL_LOG_TOOL_DETAILS", Claude, "`1`: a tool call's input goes into its `tool_result` event as `tool_parameters`."),
    var("OTEL_METRICS_INCLUDE_SESSION_ID", Claude, "`false`: metrics without `session.id`."),
    var("OTEL_METRICS_INCLUDE_VERSION", Claude, "`true`: metrics with `app.version`."),
    var("OTEL_RESOURCE_ATTRIBUTES", Claude, "Extra resource attributes on everything exported, `key=value,…`."),
    var("NATS_USER", Troupe, "With `NATS_PASSWORD`: the NATS store's user, when the URL names none."),
    var("NATS_PASSWORD", Troupe, "The NATS store's password (taken out of the environment at start)."),
    var("NATS_TOKEN", Troupe, "The NATS store's token (taken out of the environment at start)."),
    var("NATS_CREDS", Troupe, "A NATS credentials file for JWT accounts."),
    var("HOME", System, "Where `~/.troupe` and `~/.claude` are."),
    var("USER", System, "Who a person's answers and tasks are recorded as (`user:$USER`)."),
    var("XDG_CONFIG_HOME", System, "Where `troupe/trust.json` keeps the trust answers (default `~/.config`)."),
    var("NO_COLOR", System, "Plain output on a terminal."),
    var("MALLOC_ARENA_MAX", System, "Left alone when set; otherwise troupe caps glibc's malloc arenas itself."),
    var("GLIBC_TUNABLES", System, "As `MALLOC_ARENA_MAX`: an `arena_max` here is left alone."),
    var("CI", Tests, "`true`: a test whose machine lacks a requirement (Landlock, tmux, node) fails instead of skipping."),
    var("TROUPE_REGENERATE_DOCS", Tests, "Rewrites the generated pages (compatibility and docs/reference/) instead of checking them."),
    var("TROUPE_TEST_NATS_URL", Tests, "A running NATS server for the NATS store's tests (else they start one)."),
    var("TROUPE_TEST_LLAMA_URL", Tests, "A running llama.cpp server for the local-model test (else it starts one)."),
    var("TROUPE_TEST_VENV", Tests, "The virtual environment the tests' PyPI packages are in (default `.ci/venv`)."),
    var("TROUPE_MCP_NODE_DIR", Tests, "Where the tests' npm MCP servers are installed (default `.ci/node`)."),
    var("TROUPE_TEST_TEAMMATE_LOG", Tests, "A file the NATS tests' teammate processes write their stderr to, for debugging a failure."),
    var("TROUPE_WRITE_BASELINE", Tests, "Rewrites the system-call and allocation baselines of `crates/cli/tests/syscall_budget.rs`."),
    var("TROUPE_WRITE_SCHEMAS", Tests, "Rewrites the built-in tools' input schemas (each crate's `src/tool_schemas.rs`) instead of checking them."),
    var("README_CHECK_SHOW", Tests, "The README check prints what every command printed."),
    var("TROUPE_SANDBOX_FORCE_UNSUPPORTED", Tests, "`1`: the sandbox probe reports Landlock missing, to exercise the fail-closed paths."),
    var("TROUPE_SANDBOX_FORCE_NO_NAMESPACE", Tests, "`1`: the namespace probe fails, to exercise the fail-closed path."),
    var("TROUPE_SANDBOX_FORCE_USERNS", Tests, "`1`: the user-namespace path is taken even with `CAP_SYS_ADMIN` (tests run as root)."),
];

/// Names in string literals of the sources that are not variables troupe reads: test
/// fixtures' own names and prefixes the secrets scrubber matches on.
const NOT_VARIABLES: &[&str] = &[
    "ANTHROPIC_",
    "OPENAI_",
    "TROUPE_OVERLAY_TEST",
    "TROUPE_SECRETS_TEST_KEY",
    "TROUPE_HOOK_TEST_TOKEN",
    "MCP_SDK_DIR",
];

/// The prefixes of the names the sources are searched for.
const PREFIXES: &[&str] = &[
    "TROUPE_",
    "ANTHROPIC_",
    "OPENAI_",
    "CLAUDE_",
    "NATS_",
    "MCP_",
    "DISABLE_",
    "MAX_THINKING",
    "OTEL_",
];

/// The page.
pub fn markdown() -> String {
    let mut page = format!(
        "# Environment variables\n\n\
         Generated from `VARIABLES` in `crates/cli/src/reference/environment.rs`, which a test\n\
         checks against every variable name the sources mention; do not edit by hand. Regenerate\n\
         with `{}`.\n\n\
         A settings file's `env` sets variables for troupe and everything it starts, as if they\n\
         were in its environment. Provider keys and store credentials are taken out of the\n\
         environment at start: commands, hooks and MCP servers never see them unless\n\
         `commandEnv.passthrough` in user settings names one ([../security.md](../security.md)).\n",
        super::REGENERATE
    );
    for audience in Audience::ALL {
        let _ = writeln!(page, "\n## {}\n", audience.heading());
        page.push_str("| Variable | What it does |\n|---|---|\n");
        for v in VARIABLES.iter().filter(|v| v.audience == audience) {
            let _ = writeln!(page, "| `{}` | {} |", v.name, v.what);
        }
    }
    page
}

/// Every name with one of [`PREFIXES`] in a string literal of `text`.
fn names_in(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for (i, _) in text.match_indices('"') {
        let rest = &text[i + 1..];
        if !PREFIXES.iter().any(|p| rest.starts_with(p)) {
            continue;
        }
        let name: String = rest
            .chars()
            .take_while(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || *c == '_')
            .collect();
        if rest[name.len()..].starts_with('"') {
            out.push(name);
        }
    }
    out
}

#[test]
fn every_variable_the_sources_name_is_listed() {
    let mut missing = Vec::new();
    let crates = super::root().join("crates");
    let entries =
        std::fs::read_dir(&crates).unwrap_or_else(|e| panic!("{}: {e}", crates.display()));
    for entry in entries.flatten() {
        for (path, text) in super::sources(&entry.path().join("src")) {
            if path.ends_with("reference/environment.rs") {
                continue;
            }
            for name in names_in(&text) {
                let known = VARIABLES.iter().any(|v| v.name == name)
                    || NOT_VARIABLES.contains(&name.as_str());
                if !known {
                    missing.push(format!("{name} ({})", path.display()));
                }
            }
        }
    }
    missing.sort();
    missing.dedup();
    assert!(
        missing.is_empty(),
        "variables the sources name but VARIABLES (crates/cli/src/reference/environment.rs) \
         does not list:\n{}",
        missing.join("\n")
    );
}

#[test]
fn environment_page_is_up_to_date() {
    super::check_page("docs/reference/environment.md", &markdown());
}
