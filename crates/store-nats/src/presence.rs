//! Presence: what each member is doing now (key `<agent>`) and each agent's running token total
//! (key `usage.<agent>`), in a memory bucket: cheap, volatile, never compare-and-set (each agent
//! writes only its own keys). Agent names hold no dot, so the two never mix.

use std::collections::BTreeMap;

use troupe_protocol::AgentUsage;
use troupe_store::{PresenceStore, StoreError};

use crate::{check_agent, to_bytes, NatsStore};

/// The prefix of the usage keys.
const USAGE: &str = "usage.";

#[async_trait::async_trait]
impl PresenceStore for NatsStore {
    async fn set_doing(&self, agent: &str, doing: Option<&str>) -> Result<(), StoreError> {
        check_agent(agent)?;
        let inner = &self.inner;
        match doing {
            Some(text) => inner
                .presence
                .put(
                    inner.conn.link(),
                    agent,
                    bytes::Bytes::from(text.to_string()),
                )
                .await
                .map(|_| ()),
            None => inner.presence.delete(inner.conn.link(), agent, None).await,
        }
    }

    async fn doing(&self) -> Result<BTreeMap<String, String>, StoreError> {
        let inner = &self.inner;
        Ok(inner
            .presence
            .snapshot(inner.conn.link())
            .await?
            .into_iter()
            .filter(|r| !r.key.contains('.'))
            .map(|r| (r.key, String::from_utf8_lossy(&r.value).into_owned()))
            .collect())
    }

    async fn set_usage(&self, agent: &str, usage: &AgentUsage) -> Result<(), StoreError> {
        check_agent(agent)?;
        let inner = &self.inner;
        let bytes = to_bytes("token usage", usage)?;
        inner
            .presence
            .put(inner.conn.link(), &format!("{USAGE}{agent}"), bytes)
            .await
            .map(|_| ())
    }

    async fn usages(&self) -> Result<BTreeMap<String, AgentUsage>, StoreError> {
        let inner = &self.inner;
        // A value that does not parse (a foreign writer) is skipped.
        Ok(inner
            .presence
            .snapshot_under(inner.conn.link(), USAGE)
            .await?
            .into_iter()
            .filter_map(|r| {
                let agent = r.key.strip_prefix(USAGE)?.to_string();
                Some((agent, serde_json::from_slice(&r.value).ok()?))
            })
            .collect())
    }
}
