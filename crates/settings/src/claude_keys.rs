//! Claude Code's settings keys and what troupe does with each: the schema's key names (kept in
//! `schema/claude-code-settings.keys.json`), the keys troupe honours, and one table of the keys
//! it knows but does not honour, each with the warning a settings file setting it gets.

use serde::Deserialize;
use std::sync::OnceLock;

/// The key names of Claude Code's settings schema.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Schema {
    /// Top-level keys.
    pub keys: Vec<String>,
    /// Keys of the `permissions` object.
    pub permissions: Vec<String>,
    /// The values `permissions.defaultMode` may take.
    pub default_mode: Vec<String>,
    /// Keys of the `sandbox` object.
    pub sandbox: Vec<String>,
    /// Hook events (the keys of `hooks`).
    pub hooks: Vec<String>,
    /// Hook types (`command`, `prompt`, …).
    pub hook_types: Vec<String>,
}

/// Claude Code's schema, as the repository keeps it.
pub fn schema() -> &'static Schema {
    static SCHEMA: OnceLock<Schema> = OnceLock::new();
    SCHEMA.get_or_init(|| {
        serde_json::from_str(include_str!("../schema/claude-code-settings.keys.json"))
            .unwrap_or_else(|e| panic!("schema/claude-code-settings.keys.json: {e}"))
    })
}

/// How far troupe goes with a key it knows but does not honour.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Gap {
    /// Nothing troupe does would change: presentation, accounts, managed deployments.
    Ignored,
    /// It would change what troupe does; troupe does not do it yet.
    NotYet,
}

/// A key troupe knows and does not honour, and why.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Unhonoured {
    /// The key, dotted below the top level (`sandbox.excludedCommands`).
    pub key: &'static str,
    /// Ignored or not yet.
    pub gap: Gap,
    /// What that means, in a few words.
    pub why: &'static str,
}

impl Unhonoured {
    /// The one-line warning a settings file setting the key gets.
    pub fn warning(&self) -> String {
        match self.gap {
            Gap::Ignored => format!("`{}` is ignored: {}", self.key, self.why),
            Gap::NotYet => format!("`{}` is not honoured yet: {}", self.key, self.why),
        }
    }
}

/// Claude Code keys troupe honours, with how (for docs/reference/settings.md).
pub const HONOURED: &[(&str, &str)] = &[
    ("$schema", "nothing to do"),
    ("alwaysThinkingEnabled", "turns extended thinking on, as `--thinking enabled` does"),
    ("env", "set for the session and every tool, hook and MCP process; numbers and booleans become strings"),
    ("hooks", "command and http hooks, for the events troupe fires (see the hook tables); `if`, `once`, `async`"),
    ("enabledPlugins", "plugins of local marketplaces (see docs/plugins.md)"),
    ("extraKnownMarketplaces", "`directory` and `file` sources; a github, git or url source is a warning"),
    ("agent", "the lead runs as that agent definition, as `--agent` (which wins) makes it"),
    ("sandbox.excludedCommands", "commands it names run outside the sandbox when a rule or the person allowed them (one that only reads stays confined)"),
    ("sandbox.network", "troupe's `\"inet\"`/`\"allow\"`/`\"deny\"`; Claude Code's object: `allowUnixSockets` or `allowAllUnixSockets` allow every socket kind (the filter cannot tell one socket path from another), otherwise internet sockets only"),
    ("disableAllHooks", "`true`: no hook of any settings file runs (SDK callbacks still do)"),
    ("allowedHttpHookUrls", "http hooks may post only to URLs these patterns (`*` a wildcard) match; `[]` allows none"),
    ("httpHookAllowedEnvVars", "an http hook's headers may name only variables both this list and its own `allowedEnvVars` allow"),
    ("model", "the model when no `--model` is given"),
    ("apiKeyHelper", "run once at start (`sh -c`, 30 s at most) when no Anthropic key or token is in the environment; its output is the key, sent as `x-api-key` and `Authorization: Bearer` and held from every command; from a project's settings only once the workspace is trusted"),
    ("claudeMdExcludes", "memory files whose absolute path a pattern matches are not read (`*` within a folder, `**` across)"),
    ("enabledMcpjsonServers", "when it lists servers, only those of `.mcp.json` start"),
    ("disabledMcpjsonServers", "these `.mcp.json` servers never start"),
    ("enableAllProjectMcpServers", "`true`: every `.mcp.json` server starts, whatever `enabledMcpjsonServers` lists (after workspace trust, as always)"),
    ("language", "every agent's prompt ends its own section with \"Respond in <language>.\""),
    ("editorMode", "`\"vim\"`: vim keys at the REPL's prompt (normal and insert modes, `h l w b 0 $ x dd dw i a A I`); `/vim` toggles them"),
    ("fileCheckpointingEnabled", "`false`: the REPL saves no file for `/rewind`, which can then rewind only the conversation"),
    ("statusLine", "`type: command`: run with the session as JSON on stdin; its first lines are drawn under the REPL's prompt, after each turn and every 300 ms while working (2 s at most per run); `padding` indents them; from a project's settings only once the workspace is trusted"),
    ("outputStyle", "the styles of `.claude/output-styles/`; an unknown one is a warning"),
    ("permissions", "see the `permissions` table"),
    ("sandbox", "see the `sandbox` table; troupe's own `\"auto\"`/`\"off\"` spelling works too"),
    ("permissions.allow", "as Claude Code; a rule troupe cannot read is a warning and left out"),
    ("permissions.ask", "as Claude Code"),
    ("permissions.deny", "as Claude Code"),
    ("permissions.additionalDirectories", "as `--add-dir`"),
    ("permissions.defaultMode", "default, acceptEdits, plan, bypassPermissions, dontAsk, auto; others are a warning"),
    ("permissions.disableBypassPermissionsMode", "`\"disable\"`: bypassPermissions is refused"),
    ("sandbox.enabled", "`false` turns troupe's sandbox off"),
];

/// What each of troupe's permission modes means, as docs/reference/settings.md says it.
pub const MODES: &[(&str, &str)] = &[
    ("default", "edits and commands ask (headless: refused unless a rule allows them)"),
    ("acceptEdits", "file edits run without asking; commands ask"),
    ("plan", "read-only tools only"),
    ("bypassPermissions", "everything runs; deny rules still hold; refused when `disableBypassPermissionsMode` is `\"disable\"`"),
    ("dontAsk", "what the rules allow runs; what would be asked about is refused without asking"),
    ("auto", "troupe has no classifier model: it decides as acceptEdits"),
];

use Gap::{Ignored, NotYet};

const fn ignored(key: &'static str, why: &'static str) -> Unhonoured {
    Unhonoured {
        key,
        gap: Ignored,
        why,
    }
}

const fn not_yet(key: &'static str, why: &'static str) -> Unhonoured {
    Unhonoured {
        key,
        gap: NotYet,
        why,
    }
}

const UI: &str = "troupe's terminal has no such option";
const ACCOUNT: &str = "troupe has no claude.ai account, login or remote control";
const MANAGED: &str = "troupe reads no managed (enterprise) settings";
const UPDATES: &str = "troupe does not update itself";
const PLUGINS: &str = "plugins get no options from settings yet";
const IDE: &str = "troupe does not connect to an IDE";
const MCP_POLICY: &str = "every configured MCP server is used (after workspace trust)";

/// The keys troupe knows and does not honour: the one table the warnings and
/// docs/reference/settings.md come from.
pub const UNHONOURED: &[Unhonoured] = &[
    not_yet("advisorModel", "troupe has no advisor tool"),
    ignored("agentPushNotifEnabled", ACCOUNT),
    ignored("allowAllClaudeAiMcps", MANAGED),
    ignored("allowManagedHooksOnly", MANAGED),
    ignored("allowManagedMcpServersOnly", MANAGED),
    ignored("allowManagedPermissionRulesOnly", MANAGED),
    ignored("allowedChannelPlugins", MANAGED),
    not_yet("allowedMcpServers", MCP_POLICY),
    not_yet(
        "askUserQuestionTimeout",
        "ask_user_question waits for the answer without a time limit",
    ),
    not_yet(
        "attribution",
        "troupe adds no attribution to commits or pull requests",
    ),
    not_yet(
        "autoCompactEnabled",
        "troupe compacts when the context window fills",
    ),
    ignored("autoConnectIde", IDE),
    ignored("autoInstallIdeExtension", IDE),
    not_yet("autoMemoryDirectory", "troupe writes no automatic memory"),
    not_yet("autoMemoryEnabled", "troupe writes no automatic memory"),
    not_yet(
        "autoMode",
        "troupe's auto mode has no classifier; it decides as acceptEdits",
    ),
    ignored("autoScrollEnabled", UI),
    ignored("autoUpdatesChannel", UPDATES),
    not_yet("availableModels", "any model may be chosen"),
    ignored("awaySummaryEnabled", UI),
    not_yet("awsAuthRefresh", "troupe has no Bedrock provider"),
    not_yet("awsCredentialExport", "troupe has no Bedrock provider"),
    ignored("axScreenReader", UI),
    ignored("blockedMarketplaces", PLUGINS),
    ignored("browserExternalPageTools", MANAGED),
    ignored("channelsEnabled", MANAGED),
    ignored("claudeMd", MANAGED),
    ignored(
        "cleanupPeriodDays",
        "troupe keeps sessions until they are removed",
    ),
    ignored("companyAnnouncements", UI),
    ignored("defaultShell", "`!` commands run in sh"),
    not_yet("deniedMcpServers", MCP_POLICY),
    ignored("diffTool", IDE),
    ignored("disableAgentView", MANAGED),
    ignored("disableArtifact", "troupe has no Artifact tool"),
    not_yet("disableAutoMode", "auto mode may still be chosen"),
    ignored("disableBrowserExternalNavigation", MANAGED),
    ignored("disableBundledSkills", "troupe bundles no skills"),
    ignored("disableClaudeAiConnectors", ACCOUNT),
    ignored(
        "disableDeepLinkRegistration",
        "troupe registers no deep links",
    ),
    ignored("disableMobileSimulatorTools", MANAGED),
    ignored("disableRemoteControl", ACCOUNT),
    ignored("disableSideloadFlags", MANAGED),
    not_yet(
        "disableSkillShellExecution",
        "troupe does not run `!` blocks of skills and commands",
    ),
    ignored("disableWorkflows", "troupe has no dynamic workflows"),
    not_yet("effortLevel", "use `--effort`"),
    ignored("emojiCompletionEnabled", UI),
    ignored("enableArtifact", "troupe has no Artifact tool"),
    ignored("enforceAvailableModels", MANAGED),
    ignored("externalEditorContext", UI),
    not_yet("fallbackModel", "a failing model is retried, not replaced"),
    not_yet("fastMode", "troupe has no fast mode"),
    not_yet("fastModePerSessionOptIn", "troupe has no fast mode"),
    ignored("feedbackSurveyRate", UI),
    ignored(
        "fileSuggestion",
        "`@` completion lists the workspace's files",
    ),
    ignored("footerLinksRegexes", UI),
    ignored("forceLoginGatewayUrl", ACCOUNT),
    ignored("forceLoginMethod", ACCOUNT),
    ignored("forceLoginOrgUUID", ACCOUNT),
    ignored("forceRemoteSettingsRefresh", MANAGED),
    not_yet("gcpAuthRefresh", "troupe has no Vertex provider"),
    not_yet(
        "includeCoAuthoredBy",
        "troupe adds no co-author line to commits",
    ),
    not_yet(
        "includeGitInstructions",
        "troupe's prompt has no git workflow instructions",
    ),
    ignored("inputNeededNotifEnabled", ACCOUNT),
    ignored("managedMcpServers", MANAGED),
    ignored("minimumVersion", UPDATES),
    not_yet("modelOverrides", "model names are sent as given"),
    not_yet("otelHeadersHelper", "troupe exports no OpenTelemetry"),
    ignored("parentSettingsBehavior", MANAGED),
    ignored("permissionExplainerEnabled", UI),
    not_yet("plansDirectory", "troupe writes no plan files"),
    not_yet("pluginConfigs", PLUGINS),
    ignored("pluginSuggestionMarketplaces", MANAGED),
    ignored("pluginTrustMessage", MANAGED),
    ignored("policyHelper", MANAGED),
    ignored("prUrlTemplate", UI),
    ignored("preferredNotifChannel", UI),
    ignored("prefersReducedMotion", UI),
    not_yet("processWrapper", "background processes start directly"),
    ignored("remoteControlAtStartup", ACCOUNT),
    ignored("requireCoworkFullVmSandbox", MANAGED),
    ignored("requiredMaximumVersion", MANAGED),
    ignored("requiredMinimumVersion", MANAGED),
    ignored(
        "respectGitignore",
        "`@` completion lists the workspace's files",
    ),
    ignored(
        "respondToBashCommands",
        "a `!` command's output goes with the next prompt",
    ),
    ignored("showClearContextOnPlanAccept", UI),
    ignored("showThinkingSummaries", UI),
    ignored("showTurnDuration", UI),
    not_yet("skillListingBudgetFraction", "every skill is listed"),
    not_yet("skillListingMaxDescChars", "every skill is listed whole"),
    not_yet("skillOverrides", "every skill is listed"),
    ignored(
        "skipDangerousModePermissionPrompt",
        "troupe asks nothing before bypassPermissions",
    ),
    ignored(
        "skipWebFetchPreflight",
        "troupe's fetch tool has no preflight",
    ),
    ignored("skippedMarketplaces", PLUGINS),
    ignored("skippedPlugins", PLUGINS),
    ignored("spinnerTipsEnabled", UI),
    ignored("spinnerTipsOverride", UI),
    ignored("spinnerVerbs", UI),
    ignored("sshConfigs", MANAGED),
    ignored("sshHostAllowlist", MANAGED),
    ignored("strictKnownMarketplaces", MANAGED),
    ignored("strictPluginOnlyCustomization", MANAGED),
    not_yet(
        "subagentStatusLine",
        "troupe's REPL draws no status line per subagent",
    ),
    ignored("syntaxHighlightingDisabled", UI),
    not_yet(
        "teammateDefaultModel",
        "teammates use the lead's model unless spawned with one",
    ),
    not_yet(
        "teammateMode",
        "use troupe's `teammate_mode` (in-process or process)",
    ),
    ignored("terminalProgressBarEnabled", UI),
    ignored("theme", UI),
    ignored("tui", UI),
    not_yet(
        "useAutoModeDuringPlan",
        "troupe's auto mode has no classifier",
    ),
    ignored("verbose", "use `--verbose`"),
    ignored("viewMode", UI),
    ignored("vimInsertModeRemaps", UI),
    ignored("voice", UI),
    ignored("voiceEnabled", UI),
    ignored("wheelScrollAccelerationEnabled", UI),
    ignored(
        "workflowKeywordTriggerEnabled",
        "troupe has no dynamic workflows",
    ),
    ignored("workflowSizeGuideline", "troupe has no dynamic workflows"),
    not_yet("worktree", "troupe has no --worktree sessions"),
    ignored("wslInheritsWindowsSettings", MANAGED),
    not_yet(
        "permissions.disableAutoMode",
        "auto mode may still be chosen",
    ),
    ignored("sandbox.allowAppleEvents", "troupe's sandbox is Linux's"),
    not_yet(
        "sandbox.allowUnsandboxedCommands",
        "a command runs sandboxed or is asked about",
    ),
    not_yet(
        "sandbox.autoAllowBashIfSandboxed",
        "sandboxed commands still follow the permission rules",
    ),
    ignored(
        "sandbox.bwrapPath",
        "troupe sandboxes with Landlock and seccomp, not bubblewrap",
    ),
    not_yet(
        "sandbox.credentials",
        "troupe withholds its own provider keys from commands",
    ),
    ignored(
        "sandbox.enableWeakerNestedSandbox",
        "troupe sandboxes with Landlock and seccomp, not bubblewrap",
    ),
    ignored(
        "sandbox.enableWeakerNetworkIsolation",
        "troupe sandboxes with Landlock and seccomp, not bubblewrap",
    ),
    ignored("sandbox.enabledPlatforms", "troupe's sandbox is Linux's"),
    ignored(
        "sandbox.failIfUnavailable",
        "troupe always fails closed where it cannot sandbox",
    ),
    not_yet("sandbox.filesystem", "use troupe's `sandbox.writableRoots`"),
    not_yet(
        "sandbox.ignoreViolations",
        "a sandbox violation fails the command",
    ),
    ignored("sandbox.ripgrep", "troupe's grep tool is built in"),
    ignored(
        "sandbox.socatPath",
        "troupe sandboxes with Landlock and seccomp, not bubblewrap",
    ),
];

/// troupe's own keys, which Claude Code does not have (aliases included).
pub const TROUPE_KEYS: &[&str] = &[
    "mcpServers",
    "mcp_tool_timeout",
    "mcp_startup_timeout",
    "bash_auto_background",
    "teammate_mode",
    "teammate_permissions",
    "store",
    "storeReplicas",
    "store_replicas",
    "max_concurrent_model_calls",
    "contextWindow",
    "context_window",
    "pricing",
    "promptCaching",
    "commandEnv",
    "requireTrust",
];

/// troupe's own keys of the `sandbox` object.
pub const TROUPE_SANDBOX_KEYS: &[&str] = &["mode", "writableRoots", "network"];

/// The table's entry for `key` (dotted), if troupe knows it and does not honour it.
pub fn unhonoured(key: &str) -> Option<&'static Unhonoured> {
    UNHONOURED.iter().find(|u| u.key == key)
}

/// Whether troupe honours the Claude Code key `key` (dotted).
pub fn honoured(key: &str) -> bool {
    HONOURED.iter().any(|(k, _)| *k == key)
}
