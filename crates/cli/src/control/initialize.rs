//! The fields of the Agent SDKs' `initialize` request that shape the lead itself — the
//! TypeScript SDK's `systemPrompt`, `appendSystemPrompt` and `sdkMcpServers`, both SDKs'
//! `agents` — applied to the run's flags before the lead is built (the session reads the first
//! stdin line first when it is `initialize`).

use crate::args::RunArgs;
use serde_json::{json, Map, Value};

/// Applies `request`'s fields to `args`; the error names the field that is malformed.
pub fn apply(args: &mut RunArgs, request: &Value) -> Result<(), String> {
    let text = |key: &str| -> Result<Option<String>, String> {
        match request.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(other) => Err(format!("initialize: `{key}` must be a string, not {other}")),
        }
    };
    // The TypeScript SDK 0.3 sends its prompt as a list of parts (`[""]` for its default,
    // an empty prompt, as the Python SDK's `--system-prompt ""`); earlier ones as one string.
    match request.get("systemPrompt") {
        None | Some(Value::Null) => {}
        Some(Value::String(prompt)) => args.system_prompt = Some(prompt.clone()),
        Some(Value::Array(parts)) => {
            let texts = parts
                .iter()
                .map(Value::as_str)
                .collect::<Option<Vec<_>>>()
                .ok_or_else(|| {
                    format!(
                        "initialize: `systemPrompt` must be a string or a list of strings, not {}",
                        Value::Array(parts.clone())
                    )
                })?;
            let texts: Vec<&str> = texts.into_iter().filter(|t| !t.is_empty()).collect();
            args.system_prompt = Some(texts.join("\n\n"));
        }
        Some(other) => {
            return Err(format!(
                "initialize: `systemPrompt` must be a string or a list of strings, not {other}"
            ))
        }
    }
    if let Some(more) = text("appendSystemPrompt")? {
        args.append_system_prompt = Some(match args.append_system_prompt.take() {
            Some(given) => format!("{given}\n\n{more}"),
            None => more,
        });
    }
    match request.get("agents") {
        None | Some(Value::Null) => {}
        Some(Value::Object(agents)) => {
            // The flag's definitions, then initialize's (they win a name).
            let mut all: Map<String, Value> = match &args.sdk.agents {
                Some(json) => serde_json::from_str(json)
                    .map_err(|e| format!("--agents is not a JSON object: {e}"))?,
                None => Map::new(),
            };
            all.extend(agents.clone());
            args.sdk.agents = Some(Value::Object(all).to_string());
        }
        Some(other) => {
            return Err(format!(
                "initialize: `agents` must be an object of definitions by name, not {other}"
            ))
        }
    }
    match request.get("sdkMcpServers") {
        None | Some(Value::Null) => {}
        Some(Value::Array(names)) => {
            let mut servers = Map::new();
            for name in names {
                let name = name.as_str().ok_or_else(|| {
                    format!("initialize: `sdkMcpServers` holds {name}, not a name")
                })?;
                servers.insert(name.to_string(), json!({"type": "sdk", "name": name}));
            }
            if !servers.is_empty() {
                args.agent
                    .mcp
                    .mcp_config
                    .push(json!({ "mcpServers": servers }).to_string());
            }
        }
        Some(other) => {
            return Err(format!(
                "initialize: `sdkMcpServers` must be a list of server names, not {other}"
            ))
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    fn args(extra: &[&str]) -> RunArgs {
        let mut argv = vec!["troupe", "-p"];
        argv.extend(extra);
        crate::args::Cli::try_parse_from(argv).unwrap().run
    }

    #[test]
    fn fields_become_flags() {
        let mut run = args(&[
            "--append-system-prompt",
            "first",
            "--agents",
            r#"{"a": {"description": "d", "prompt": "p"}}"#,
        ]);
        apply(
            &mut run,
            &json!({"subtype": "initialize", "systemPrompt": "sys", "appendSystemPrompt": "second",
                "agents": {"b": {"description": "d", "prompt": "p"}}, "sdkMcpServers": ["calc"]}),
        )
        .unwrap();
        assert_eq!(run.system_prompt.as_deref(), Some("sys"));
        assert_eq!(run.append_system_prompt.as_deref(), Some("first\n\nsecond"));
        let agents: Value = serde_json::from_str(run.sdk.agents.as_deref().unwrap()).unwrap();
        assert!(agents["a"].is_object() && agents["b"].is_object());
        let servers: Value = serde_json::from_str(&run.agent.mcp.mcp_config[0]).unwrap();
        assert_eq!(
            servers,
            json!({"mcpServers": {"calc": {"type": "sdk", "name": "calc"}}})
        );
        // The TypeScript SDK 0.3's list of parts; `[""]` is its default, an empty prompt.
        apply(&mut run, &json!({"systemPrompt": ["one", "", "two"]})).unwrap();
        assert_eq!(run.system_prompt.as_deref(), Some("one\n\ntwo"));
        apply(&mut run, &json!({"systemPrompt": [""]})).unwrap();
        assert_eq!(run.system_prompt.as_deref(), Some(""));
        let bad = apply(&mut run, &json!({"systemPrompt": [1]})).unwrap_err();
        assert!(bad.contains("list of strings"), "{bad}");
        let bad = apply(&mut run, &json!({"sdkMcpServers": "calc"})).unwrap_err();
        assert!(bad.contains("sdkMcpServers"), "{bad}");
    }
}
