//! The HTTP client `web_fetch` and `web_search` share: troupe's own (the read-only sandbox has
//! no network), rustls on ring, no redirects followed by itself, a time limit per request.

use reqwest::Url;
use std::sync::OnceLock;
use std::time::Duration;

/// The longest one fetch may take, body included.
pub const TIMEOUT: Duration = Duration::from_secs(30);

/// The longest connecting may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// What troupe says it is.
const USER_AGENT: &str = concat!("troupe/", env!("CARGO_PKG_VERSION"), " (WebFetch)");

/// The shared client; redirects are the caller's to judge, so none is followed here.
pub fn client() -> Result<&'static reqwest::Client, String> {
    static CLIENT: OnceLock<Result<reqwest::Client, String>> = OnceLock::new();
    CLIENT
        .get_or_init(|| {
            // reqwest is built without a bundled provider; installing ring again is a no-op.
            let _ = rustls::crypto::ring::default_provider().install_default();
            reqwest::Client::builder()
                .redirect(reqwest::redirect::Policy::none())
                .timeout(TIMEOUT)
                .connect_timeout(CONNECT_TIMEOUT)
                .user_agent(USER_AGENT)
                .build()
                .map_err(|e| format!("could not set up the HTTP client: {e}"))
        })
        .as_ref()
        .map_err(Clone::clone)
}

/// Whether `url` names this machine (`localhost`, `127.0.0.1`, `::1`), where plain http stays.
pub fn is_local(url: &Url) -> bool {
    let Some(host) = url.host_str() else {
        return false;
    };
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    bare.eq_ignore_ascii_case("localhost")
        || bare
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// The host of `url` (lowercase, no port, no trailing dot), as `WebFetch(domain:…)` rules name it; `None` when
/// the text is no URL with a host.
pub fn host_of(url: &str) -> Option<String> {
    let parsed = Url::parse(url.trim()).ok()?;
    // `example.com.` is `example.com`: a trailing dot must not slip past a rule.
    parsed.host_str().map(|host| {
        host.trim_start_matches('[')
            .trim_end_matches(']')
            .trim_end_matches('.')
            .to_ascii_lowercase()
    })
}

/// Whether `host` is what a `domain:` specifier names: exactly `domain`, or, for `*.domain`,
/// any host under it (`docs.example.com` for `*.example.com`, not `example.com` itself).
pub fn host_within(host: &str, domain: &str) -> bool {
    let host = host.to_ascii_lowercase();
    let domain = domain.trim().to_ascii_lowercase();
    match domain.strip_prefix("*.") {
        Some(parent) => !parent.is_empty() && host.ends_with(&format!(".{parent}")),
        None => !domain.is_empty() && host == domain,
    }
}

#[cfg(test)]
mod tests {
    use super::{host_of, host_within};

    #[test]
    fn hosts_come_lowercase_without_port_or_brackets() {
        assert_eq!(host_of("https://Docs.RS:443/x").as_deref(), Some("docs.rs"));
        assert_eq!(host_of("http://[::1]:8/").as_deref(), Some("::1"));
        assert_eq!(
            host_of("https://example.com./x").as_deref(),
            Some("example.com")
        );
        assert_eq!(
            host_of("https://example.com@evil.net/").as_deref(),
            Some("evil.net")
        );
        assert_eq!(host_of("not a url"), None);
    }

    #[test]
    fn a_domain_names_one_host_and_a_star_the_hosts_under_it() {
        assert!(host_within("example.com", "Example.com"));
        assert!(!host_within("docs.example.com", "example.com"));
        assert!(host_within("docs.example.com", "*.example.com"));
        assert!(!host_within("example.com", "*.example.com"));
        assert!(!host_within("badexample.com", "*.example.com"));
        assert!(!host_within("example.com", ""));
    }
}
