// Drives troupe with the TypeScript Claude Agent SDK (npm `@anthropic-ai/claude-agent-sdk`,
// installed under .ci/node by scripts/test-deps.sh), unchanged: `pathToClaudeCodeExecutable`
// points at the troupe binary. Run by crates/cli/tests/sdk_ts.rs with the fake model server's
// environment; prints one JSON line per observation for the test to check.
//
// Usage: node drive.mjs NODE_DIR TROUPE_BINARY WORKSPACE SCENARIO
// Scenarios: loop (query() through a tool call), hook_deny (a PreToolUse hook callback denies
// `rm -rf build`), sdk_mcp (an in-process server from createSdkMcpServer whose tool the model
// calls), initialize (a custom systemPrompt in parts and agents, which this SDK sends in
// `initialize`), preset (Claude Code's preset with `append`: initialize's appendSystemPrompt),
// bypass (allowDangerouslySkipPermissions with the bypassPermissions mode: a
// write runs unasked), agents (agents in options are listed in init and reach the task tool),
// slash (a project command of .claude/commands run as a prompt), deny_rule (a deny rule
// refuses a call: the system/permission_denied message reaches the SDK), permission (canUseTool
// allows one call and denies another), thinking (the SDK's thinking and effort options reach
// the model request).

import { createRequire } from "node:module";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const [nodeDir, binary, workspace, scenario] = process.argv.slice(2);
const require = createRequire(join(nodeDir, "package.json"));
const load = (name) => import(pathToFileURL(require.resolve(name)).href);
const sdk = await load("@anthropic-ai/claude-agent-sdk");
const { z } = await load("zod");

const say = (fields) => process.stdout.write(JSON.stringify(fields) + "\n");

function describe(message) {
  switch (message.type) {
    case "system":
      say({
        kind: "system",
        subtype: message.subtype,
        agents: message.agents,
        slash_commands: message.slash_commands,
        decision_reason_type: message.decision_reason_type,
        tool_name: message.tool_name,
      });
      break;
    case "assistant":
      for (const block of message.message.content) {
        if (block.type === "tool_use") {
          say({ kind: "tool_use", name: block.name, input: block.input });
        } else {
          say({ kind: "assistant", text: block.text ?? null });
        }
      }
      break;
    case "user":
      say({ kind: "user", content: JSON.stringify(message.message.content).slice(0, 300) });
      break;
    case "result":
      say({
        kind: "result",
        subtype: message.subtype,
        is_error: message.is_error,
        result: message.result ?? null,
        num_turns: message.num_turns,
        session_id: message.session_id,
        permission_denials: message.permission_denials,
      });
      break;
    default:
      break;
  }
}

/** Options every scenario shares: troupe as the executable, the workspace as the cwd. */
const base = (more = {}) => ({
  pathToClaudeCodeExecutable: binary,
  cwd: workspace,
  stderr: (data) => process.stderr.write(data),
  ...more,
});

async function run(prompt, options) {
  for await (const message of sdk.query({ prompt, options })) {
    describe(message);
  }
}

const scenarios = {
  async loop() {
    await run("list the files", base());
  },

  async hook_deny() {
    const guard = async (input, toolUseId) => {
      const command = input.tool_input?.command ?? "";
      say({
        kind: "hook",
        event: input.hook_event_name,
        tool: input.tool_name,
        command,
        tool_use_id: toolUseId,
      });
      if (command.includes("rm -rf build")) {
        return {
          hookSpecificOutput: {
            hookEventName: "PreToolUse",
            permissionDecision: "deny",
            permissionDecisionReason: "the hook protects build",
          },
        };
      }
      return {};
    };
    await run(
      "remove build",
      base({
        permissionMode: "bypassPermissions",
        allowDangerouslySkipPermissions: true,
        hooks: { PreToolUse: [{ matcher: "Bash", hooks: [guard] }] },
      }),
    );
  },

  async sdk_mcp() {
    const add = sdk.tool("add", "Add two numbers", { a: z.number(), b: z.number() }, async (args) => {
      say({ kind: "sdk_tool", args });
      return { content: [{ type: "text", text: `sum=${args.a + args.b}` }] };
    });
    const calc = sdk.createSdkMcpServer({ name: "calc", version: "1.0.0", tools: [add] });
    await run(
      "add 2 and 3",
      base({ mcpServers: { calc }, allowedTools: ["mcp__calc__add"] }),
    );
  },

  async initialize() {
    await run(
      "hello initialize",
      base({
        systemPrompt: ["You are the TS-PROMPT agent.", "SECOND-PART: be brief."],
        agents: {
          reviewer: { description: "Reviews diffs", prompt: "You review.", tools: ["Read"] },
        },
      }),
    );
  },

  async preset() {
    await run(
      "hello preset",
      base({
        systemPrompt: { type: "preset", preset: "claude_code", append: "APPENDED-MARK: answer briefly." },
      }),
    );
  },

  async bypass() {
    await run(
      "write draft",
      base({ permissionMode: "bypassPermissions", allowDangerouslySkipPermissions: true }),
    );
  },

  async agents() {
    await run(
      "hello agents",
      base({
        agents: {
          reviewer: { description: "Reviews diffs", prompt: "You review.", tools: ["Read"] },
          tester: { description: "Writes tests", prompt: "You test.", model: "inherit" },
        },
      }),
    );
  },

  async permission() {
    const canUseTool = async (toolName, input) => {
      const command = input.command ?? "";
      say({ kind: "asked", tool: toolName, command });
      if (command.includes("allowed")) {
        return { behavior: "allow", updatedInput: input };
      }
      return { behavior: "deny", message: "the test says no" };
    };
    await run("touch allowed.txt", base({ canUseTool }));
    await run("touch denied.txt", base({ canUseTool }));
  },

  async thinking() {
    await run(
      "hello thinking",
      base({ model: "claude-sonnet-4-5", thinking: { type: "enabled", budgetTokens: 3000 }, effort: "low" }),
    );
  },

  async slash() {
    await run("/greet Ada", base({ settingSources: ["project"] }));
  },

  async set_model() {
    // Streaming input: the second prompt waits until the model was switched after the first
    // turn's result.
    let release;
    const switched = new Promise((resolve) => (release = resolve));
    const user = (content) => ({
      type: "user",
      message: { role: "user", content },
      parent_tool_use_id: null,
      session_id: "",
    });
    async function* prompts() {
      yield user("say hello");
      await switched;
      yield user("spawn helper");
    }
    const q = sdk.query({ prompt: prompts(), options: base({ model: "claude-sonnet-4-5" }) });
    let results = 0;
    for await (const message of q) {
      describe(message);
      if (message.type !== "result") continue;
      results += 1;
      if (results === 2) break;
      await q.setModel("claude-opus-4-1");
      say({ kind: "model_set" });
      release();
    }
  },

  async deny_rule() {
    await run("remove build", base({ disallowedTools: ["Bash(rm:*)"] }));
  },
};

const chosen = scenarios[scenario];
if (!chosen) {
  process.stderr.write(`unknown scenario ${scenario}\n`);
  process.exit(2);
}
await chosen();
