//! Which model an alias means on an OpenAI-compatible server: the server is asked what it
//! serves (`GET {base_url}/models`), and an alias it knows by neither its own name nor the
//! Anthropic id it stands for is an error naming the alias and the server's models.

use crate::alias;
use crate::provider::ModelConfig;
use std::time::Duration;

/// How long the model list may take.
const LIST_TIMEOUT: Duration = Duration::from_secs(10);

/// The model ids the OpenAI-compatible server at `base_url` lists.
pub async fn served_models(base_url: &str, api_key: Option<&str>) -> Result<Vec<String>, String> {
    let client = crate::http::build_client(base_url).map_err(|e| e.to_string())?;
    let mut request = client
        .get(format!("{}/models", base_url.trim_end_matches('/')))
        .timeout(LIST_TIMEOUT);
    if let Some(key) = api_key {
        request = request.bearer_auth(key);
    }
    let response = request.send().await.map_err(|e| e.to_string())?;
    let status = response.status();
    if !status.is_success() {
        return Err(format!("GET /models answered {status}"));
    }
    let bytes = response.bytes().await.map_err(|e| e.to_string())?;
    let body: serde_json::Value = serde_json::from_slice(&bytes).map_err(|e| e.to_string())?;
    let data = body
        .get("data")
        .and_then(|d| d.as_array())
        .ok_or("the model list has no `data` array")?;
    Ok(data
        .iter()
        .filter_map(|m| m.get("id").and_then(|id| id.as_str()).map(str::to_string))
        .collect())
}

/// The name to send for `name` on a server that serves `served`: a name that is not an alias
/// as it is; an alias the server lists as it is; else the id the alias stands for (`env` looks
/// up the override variables) when the server lists that. Otherwise an error naming the
/// alias and the server's models.
pub fn pick(
    name: &str,
    served: &[String],
    env: &impl Fn(&str) -> Option<String>,
) -> Result<String, String> {
    if alias::alias_of(name).is_none() || served.iter().any(|s| s == name) {
        return Ok(name.to_string());
    }
    let resolved = alias::resolve(name, env);
    let listed = |id: &str| served.iter().any(|s| s == id);
    if listed(&resolved) || listed(alias::wire_name(&resolved)) {
        return Ok(resolved);
    }
    let list = match served.is_empty() {
        true => "no models".to_string(),
        false => served.join(", "),
    };
    Err(format!(
        "model `{name}` is a Claude Code alias (for {resolved}) that this OpenAI-compatible server does not serve; it serves: {list}. Pass --model with one of those"
    ))
}

/// Checks `config`'s model against its OpenAI-compatible server when it is an alias, and
/// replaces it with the name to send; other names and the Anthropic provider need no call.
pub async fn check_alias(
    config: &mut ModelConfig,
    env: &impl Fn(&str) -> Option<String>,
) -> Result<(), String> {
    if config.provider != crate::Provider::OpenAi || alias::alias_of(&config.model).is_none() {
        return Ok(());
    }
    let served = served_models(&config.base_url, config.api_key.as_deref())
        .await
        .map_err(|e| {
            format!(
                "model `{}` is a Claude Code alias and the OpenAI-compatible server at {} could not list its models ({e}); pass --model with a name it serves",
                config.model, config.base_url
            )
        })?;
    config.model = pick(&config.model, &served, env)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn served(ids: &[&str]) -> Vec<String> {
        ids.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn an_alias_is_sent_as_the_server_knows_it_or_refused_with_its_models() {
        let none = |_: &str| None;
        let list = served(&["qwen2.5-coder:7b", "claude-haiku-4-5", "sonnet"]);
        assert_eq!(
            pick("qwen2.5-coder:7b", &list, &none).unwrap(),
            "qwen2.5-coder:7b"
        );
        assert_eq!(pick("anything", &list, &none).unwrap(), "anything");
        // Listed under its own name, or under the id it stands for.
        assert_eq!(pick("sonnet", &list, &none).unwrap(), "sonnet");
        assert_eq!(pick("haiku", &list, &none).unwrap(), "claude-haiku-4-5");
        // An override the server lists.
        let env = |k: &str| (k == alias::OPUS_VAR).then(|| "qwen2.5-coder:7b".to_string());
        assert_eq!(pick("opus", &list, &env).unwrap(), "qwen2.5-coder:7b");
        let err = pick("opus", &list, &none).unwrap_err();
        assert!(err.contains("`opus`"), "{err}");
        assert!(
            err.contains("qwen2.5-coder:7b, claude-haiku-4-5, sonnet"),
            "{err}"
        );
        let err = pick("opus", &[], &none).unwrap_err();
        assert!(err.contains("no models"), "{err}");
    }
}
