//! Presence: what each member is doing now, one key per member in a memory bucket: cheap,
//! volatile, never compare-and-set (each member writes only its own key).

use std::collections::BTreeMap;

use troupe_store::{PresenceStore, StoreError};

use crate::{check_agent, NatsStore};

impl PresenceStore for NatsStore {
    fn set_doing(&self, agent: &str, doing: Option<&str>) -> Result<(), StoreError> {
        check_agent(agent)?;
        let inner = &self.inner;
        match doing {
            Some(text) => inner
                .presence
                .put(&inner.conn, agent, bytes::Bytes::from(text.to_string()))
                .map(|_| ()),
            None => inner.presence.delete(&inner.conn, agent, None),
        }
    }

    fn doing(&self) -> Result<BTreeMap<String, String>, StoreError> {
        let inner = &self.inner;
        Ok(inner
            .presence
            .snapshot(&inner.conn)?
            .into_iter()
            .map(|r| (r.key, String::from_utf8_lossy(&r.value).into_owned()))
            .collect())
    }
}
