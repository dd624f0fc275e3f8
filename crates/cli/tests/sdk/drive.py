"""Drives troupe with the Claude Agent SDK (PyPI `claude-agent-sdk`), unchanged: `cli_path`
points at the troupe binary. Run by crates/cli/tests/sdk.rs with the fake model server's
environment; prints one JSON line per observation for the test to check.

Usage: drive.py TROUPE_BINARY WORKSPACE SCENARIO
Scenarios: loop (query() through a tool call), permission (can_use_tool allows one call and
denies another), interrupt (ClaudeSDKClient interrupts a slow turn, then asks again),
hook_deny (a PreToolUse hook callback denies `rm -rf build`), hook_error (a PreToolUse hook
callback raises: the call must not run), hook_unknown (a PreToolUse hook callback answers a
decision troupe does not know: the call must not run), rewrite (can_use_tool sees Claude Code's Write with
file_path and answers with an updatedInput that moves the file), ask (can_use_tool answers
AskUserQuestion with updatedInput carrying the answers), sdk_mcp (an in-process server
from create_sdk_mcp_server whose tool the model calls, over mcp_message), agents (agents
given in options arrive with initialize and are listed in init), set_model (ClaudeSDKClient
switches the model between two turns; the second spawns a teammate), image (a user message
of a text block and a base64 image block).
"""

import asyncio
import json
import sys

from claude_agent_sdk import (
    AgentDefinition,
    AssistantMessage,
    ClaudeAgentOptions,
    ClaudeSDKClient,
    HookMatcher,
    PermissionResultAllow,
    PermissionResultDeny,
    ResultMessage,
    SystemMessage,
    ToolUseBlock,
    UserMessage,
    create_sdk_mcp_server,
    query,
    tool,
)


def say(**fields):
    print(json.dumps(fields), flush=True)


def describe(message):
    if isinstance(message, SystemMessage):
        say(kind="system", subtype=message.subtype)
    elif isinstance(message, AssistantMessage):
        for block in message.content:
            if isinstance(block, ToolUseBlock):
                say(kind="tool_use", name=block.name, input=block.input, model=message.model)
            else:
                say(kind="assistant", text=getattr(block, "text", None), model=message.model)
    elif isinstance(message, UserMessage):
        say(kind="user", content=str(message.content)[:300])
    elif isinstance(message, ResultMessage):
        say(
            kind="result",
            subtype=message.subtype,
            is_error=message.is_error,
            result=message.result,
            num_turns=message.num_turns,
            session_id=message.session_id,
            stop_reason=message.stop_reason,
            permission_denials=message.permission_denials,
        )


async def scenario_loop(binary, workspace):
    options = ClaudeAgentOptions(cli_path=binary, cwd=workspace)
    async for message in query(prompt="list the files", options=options):
        describe(message)


async def scenario_permission(binary, workspace):
    async def can_use_tool(tool_name, tool_input, context):
        command = tool_input.get("command", "")
        say(kind="asked", tool=tool_name, command=command)
        if "allowed" in command:
            return PermissionResultAllow()
        return PermissionResultDeny(message="the test says no")

    async def prompts():
        yield {"type": "user", "message": {"role": "user", "content": "touch allowed.txt"}}

    options = ClaudeAgentOptions(cli_path=binary, cwd=workspace, can_use_tool=can_use_tool)
    async for message in query(prompt=prompts(), options=options):
        describe(message)
    async def prompts_denied():
        yield {"type": "user", "message": {"role": "user", "content": "touch denied.txt"}}

    async for message in query(prompt=prompts_denied(), options=options):
        describe(message)


async def scenario_interrupt(binary, workspace):
    options = ClaudeAgentOptions(cli_path=binary, cwd=workspace)
    async with ClaudeSDKClient(options=options) as client:
        await client.query("slow answer please")
        # Interrupt once the turn is under way: the model is scripted to take a long time.
        await asyncio.sleep(1.0)
        await client.interrupt()
        say(kind="interrupt_sent")
        async for message in client.receive_response():
            describe(message)
        await client.query("say hello")
        async for message in client.receive_response():
            describe(message)


def guarded_options(binary, workspace, guard):
    return ClaudeAgentOptions(
        cli_path=binary,
        cwd=workspace,
        permission_mode="bypassPermissions",
        hooks={"PreToolUse": [HookMatcher(matcher="Bash", hooks=[guard])]},
    )


async def scenario_hook_deny(binary, workspace):
    async def guard(input_data, tool_use_id, context):
        command = input_data.get("tool_input", {}).get("command", "")
        say(
            kind="hook",
            event=input_data.get("hook_event_name"),
            tool=input_data.get("tool_name"),
            command=command,
            tool_use_id=tool_use_id,
        )
        if "rm -rf build" in command:
            return {
                "hookSpecificOutput": {
                    "hookEventName": "PreToolUse",
                    "permissionDecision": "deny",
                    "permissionDecisionReason": "the hook protects build",
                }
            }
        return {}

    async for message in query(prompt="remove build", options=guarded_options(binary, workspace, guard)):
        describe(message)


async def scenario_hook_error(binary, workspace):
    async def guard(input_data, tool_use_id, context):
        say(kind="hook", event=input_data.get("hook_event_name"))
        raise RuntimeError("the guard crashed")

    async for message in query(prompt="remove build", options=guarded_options(binary, workspace, guard)):
        describe(message)


async def scenario_hook_unknown(binary, workspace):
    async def guard(input_data, tool_use_id, context):
        say(kind="hook", event=input_data.get("hook_event_name"))
        return {"decision": "maybe"}

    async for message in query(prompt="remove build", options=guarded_options(binary, workspace, guard)):
        describe(message)


async def scenario_rewrite(binary, workspace):
    async def can_use_tool(tool_name, tool_input, context):
        say(kind="asked", tool=tool_name, input=tool_input)
        moved = dict(tool_input, file_path=tool_input["file_path"].replace("draft", "final"))
        return PermissionResultAllow(updated_input=moved)

    async def prompts():
        yield {"type": "user", "message": {"role": "user", "content": "write draft"}}

    options = ClaudeAgentOptions(cli_path=binary, cwd=workspace, can_use_tool=can_use_tool)
    async for message in query(prompt=prompts(), options=options):
        describe(message)


async def scenario_ask(binary, workspace):
    async def can_use_tool(tool_name, tool_input, context):
        say(kind="asked", tool=tool_name, input=tool_input)
        question = tool_input["questions"][0]["question"]
        return PermissionResultAllow(updated_input=dict(tool_input, answers={question: "Blue"}))

    async def prompts():
        yield {"type": "user", "message": {"role": "user", "content": "ask me"}}

    options = ClaudeAgentOptions(cli_path=binary, cwd=workspace, can_use_tool=can_use_tool)
    async for message in query(prompt=prompts(), options=options):
        describe(message)


async def scenario_sdk_mcp(binary, workspace):
    @tool("add", "Add two numbers", {"a": float, "b": float})
    async def add(args):
        say(kind="sdk_tool", args=args)
        return {"content": [{"type": "text", "text": f"sum={args['a'] + args['b']:g}"}]}

    calc = create_sdk_mcp_server(name="calc", version="1.0.0", tools=[add])
    options = ClaudeAgentOptions(
        cli_path=binary,
        cwd=workspace,
        mcp_servers={"calc": calc},
        allowed_tools=["mcp__calc__add"],
    )
    async for message in query(prompt="add 2 and 3", options=options):
        describe(message)


async def scenario_agents(binary, workspace):
    options = ClaudeAgentOptions(
        cli_path=binary,
        cwd=workspace,
        agents={"reviewer": AgentDefinition(description="Reviews diffs", prompt="You review.", tools=["Read"])},
    )
    async for message in query(prompt="hello agents", options=options):
        if isinstance(message, SystemMessage) and message.subtype == "init":
            say(kind="init", agents=message.data.get("agents"))
        describe(message)


async def scenario_set_model(binary, workspace):
    options = ClaudeAgentOptions(cli_path=binary, cwd=workspace, model="claude-sonnet-4-5")
    async with ClaudeSDKClient(options=options) as client:
        await client.query("say hello")
        async for message in client.receive_response():
            describe(message)
        await client.set_model("claude-opus-4-1")
        say(kind="model_set")
        await client.query("spawn helper")
        async for message in client.receive_response():
            describe(message)


# A 1×1 PNG.
PNG_BASE64 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGP4z8DwHwAFAAH/iZk9HQAAAABJRU5ErkJggg=="


async def scenario_image(binary, workspace):
    async def prompts():
        yield {
            "type": "user",
            "message": {
                "role": "user",
                "content": [
                    {"type": "text", "text": "describe the picture"},
                    {
                        "type": "image",
                        "source": {"type": "base64", "media_type": "image/png", "data": PNG_BASE64},
                    },
                ],
            },
        }

    options = ClaudeAgentOptions(cli_path=binary, cwd=workspace)
    async for message in query(prompt=prompts(), options=options):
        describe(message)


async def main():
    binary, workspace, scenario = sys.argv[1:4]
    await {
        "loop": scenario_loop,
        "permission": scenario_permission,
        "interrupt": scenario_interrupt,
        "hook_deny": scenario_hook_deny,
        "hook_error": scenario_hook_error,
        "hook_unknown": scenario_hook_unknown,
        "rewrite": scenario_rewrite,
        "ask": scenario_ask,
        "sdk_mcp": scenario_sdk_mcp,
        "agents": scenario_agents,
        "set_model": scenario_set_model,
        "image": scenario_image,
    }[scenario](binary, workspace)


asyncio.run(main())
