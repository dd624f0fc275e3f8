//! The NATS team store as the rest of the binary sees it: `troupe_store_nats` when the binary
//! is built with its `nats` feature. Without it the same names stand in: a NATS URL is refused
//! with the sentence of [`crate::features::missing`] wherever one is given (`--store`,
//! `TROUPE_STORE`, settings `"store"`), and the rest cannot be reached, as no `NatsUrl` can be
//! made.

#[cfg(feature = "nats")]
pub use troupe_store_nats::{inspect, open, open_existing, url::without_credentials, NatsUrl};

#[cfg(not(feature = "nats"))]
pub use off::{hold_credentials, inspect, open, open_existing, without_credentials, NatsUrl};

/// The store `text` names, with the credentials and copies the environment and `settings`
/// add.
#[cfg(feature = "nats")]
pub fn store_url(
    text: &str,
    settings: Option<&troupe_settings::Settings>,
) -> anyhow::Result<NatsUrl> {
    let env = |key: &str| troupe_tools::child_env::var(key).filter(|v| !v.is_empty());
    let mut url = NatsUrl::parse(text)?.with_env(&env);
    if url.replicas.is_none() {
        url.replicas = settings.and_then(|s| s.store_replicas);
    }
    Ok(url)
}

/// Holds the credentials of the store `url` resolved to, so teammate processes get them with
/// the rest and children get the URL without them.
#[cfg(feature = "nats")]
pub fn hold_credentials(url: &NatsUrl) {
    use troupe_store_nats::url::Auth;
    use troupe_tools::secrets;
    match &url.auth {
        Auth::None => {}
        Auth::UserPassword(user, password) => {
            secrets::hold("NATS_USER", user.clone());
            secrets::hold("NATS_PASSWORD", password.clone());
        }
        Auth::Token(token) => secrets::hold("NATS_TOKEN", token.clone()),
    }
}

/// Refused: this build has no NATS.
#[cfg(not(feature = "nats"))]
pub fn store_url(
    _text: &str,
    _settings: Option<&troupe_settings::Settings>,
) -> anyhow::Result<NatsUrl> {
    Err(anyhow::anyhow!(crate::features::missing(
        "NATS support",
        "nats"
    )))
}

#[cfg(not(feature = "nats"))]
mod off {
    use std::path::Path;
    use troupe_store::{SharedStore, StoreError};

    /// A NATS server's address, which this build never has.
    #[derive(Debug, Clone)]
    pub enum NatsUrl {}

    impl NatsUrl {
        /// Refused: this build has no NATS.
        pub fn parse(_url: &str) -> Result<NatsUrl, String> {
            Err(crate::features::missing("NATS support", "nats"))
        }

        /// Where, for people.
        pub fn display(&self) -> String {
            match *self {}
        }
    }

    pub fn hold_credentials(url: &NatsUrl) {
        match *url {}
    }

    /// `url` without `user:password@`: a `TROUPE_STORE` given to this build keeps its
    /// credentials out of the environment until it is refused.
    pub fn without_credentials(url: &str) -> String {
        match (url.split_once("://"), url.rsplit_once('@')) {
            (Some((scheme, _)), Some((_, hosts))) => format!("{scheme}://{hosts}"),
            _ => url.to_string(),
        }
    }

    pub async fn open(url: &NatsUrl, _dir: &Path, _team: &str) -> Result<SharedStore, StoreError> {
        match *url {}
    }

    pub async fn open_existing(
        url: &NatsUrl,
        _dir: &Path,
        _team: &str,
    ) -> Result<Option<SharedStore>, StoreError> {
        match *url {}
    }

    pub async fn inspect(url: &NatsUrl, _team: &str) -> Result<String, StoreError> {
        match *url {}
    }
}

#[cfg(all(test, not(feature = "nats")))]
mod tests {
    #[test]
    fn a_nats_store_is_refused_saying_what_the_build_lacks() {
        let refused = crate::store::choose(Some("nats://localhost:4222"), None)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(
            refused.contains("without NATS support (Cargo feature `nats`)"),
            "{refused}"
        );
        assert!(refused.contains("cargo build --release"), "{refused}");
        assert!(matches!(
            crate::store::choose(Some("file"), None),
            Ok(crate::store::StoreChoice::File)
        ));
    }
}
