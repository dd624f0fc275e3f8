//! The store URL: `nats://[user:password@|token@]host:port[,host:port…][?creds=PATH&lease_ttl=SECS&replicas=N]`
//! (`tls://` for TLS); a server list may also repeat the scheme: `nats://a:4222,nats://b:4222`. Credentials may come from the URL or, when it has none, from the usual
//! NATS variables (`NATS_CREDS`, `NATS_USER` + `NATS_PASSWORD`, `NATS_TOKEN`).

use std::path::PathBuf;
use std::time::Duration;

use troupe_store::StoreError;

/// How long a lease lives without a heartbeat unless the URL says otherwise: long enough to ride
/// out a short network hiccup, short enough that a vanished host's tasks come back soon.
pub const DEFAULT_LEASE_TTL: Duration = Duration::from_secs(15);

/// How the client proves who it is.
#[derive(Clone, PartialEq, Eq)]
pub enum Auth {
    /// No credentials (an open server).
    None,
    /// User and password.
    UserPassword(String, String),
    /// A token.
    Token(String),
}

impl std::fmt::Debug for Auth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never print a secret, not even in a debug dump.
        match self {
            Auth::None => f.write_str("None"),
            Auth::UserPassword(user, _) => write!(f, "UserPassword({user:?}, ***)"),
            Auth::Token(_) => f.write_str("Token(***)"),
        }
    }
}

/// A parsed store URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NatsUrl {
    /// The servers as `scheme://host:port`, credentials removed.
    pub servers: Vec<String>,
    /// Credentials from the URL (or the environment).
    pub auth: Auth,
    /// A NATS credentials file (`?creds=`), for JWT/NKey accounts.
    pub creds: Option<PathBuf>,
    /// How long a lease lives without a heartbeat (`?lease_ttl=` seconds); fixed for a team
    /// by the first process that creates its store on the server.
    pub lease_ttl: Duration,
    /// How many copies of every stream and bucket the cluster keeps (`?replicas=N`, or the
    /// `storeReplicas` setting); `None`: `min(3, servers in the cluster)`. Fixed for a team by
    /// the first process that creates its store on the server.
    pub replicas: Option<usize>,
}

impl NatsUrl {
    /// Parses a store URL; the error says what is wrong and what the form is.
    pub fn parse(url: &str) -> Result<NatsUrl, StoreError> {
        let bad = |why: &str| {
            StoreError::Backend {
            action: "use the store URL".into(),
            server: redact(url),
            detail: why.to_string(),
            hint: "the form is nats://[user:password@]host:4222[,host:4222…][?creds=FILE&lease_ttl=SECS&replicas=N]",
        }
        };
        let (scheme, rest) = url
            .split_once("://")
            .ok_or_else(|| bad("it has no scheme"))?;
        if !matches!(scheme, "nats" | "tls") {
            return Err(bad("the scheme must be nats:// or tls://"));
        }
        let (list, query) = match rest.split_once('?') {
            Some((a, q)) => (a, Some(q)),
            None => (rest, None),
        };
        // A server list in either usual form: `nats://a:4222,nats://b:4222` (each server a URL
        // of its own) or `nats://a:4222,b:4222` (hosts after one scheme). Credentials may be
        // given on any server; the first given is used.
        let mut servers = Vec::new();
        let mut userinfo = None;
        for item in list.split(',') {
            let item = item.trim();
            let host = match item.split_once("://") {
                Some((s, h)) if s == scheme => h,
                Some(_) => return Err(bad("every server of the list must use the same scheme")),
                None => item,
            };
            let host = host.trim_end_matches('/');
            let host = match host.rsplit_once('@') {
                Some((u, h)) => {
                    userinfo.get_or_insert(u);
                    h
                }
                None => host,
            };
            if host.is_empty() {
                return Err(bad("a server's host is empty"));
            }
            if host.contains('/') {
                return Err(bad(&format!("{host:?} is not a host[:port]")));
            }
            let host = if host.contains(':') && !host.ends_with(']') {
                host.to_string()
            } else {
                format!("{host}:4222")
            };
            servers.push(format!("{scheme}://{host}"));
        }
        let auth = match userinfo {
            None => Auth::None,
            Some(u) => match u.split_once(':') {
                Some((user, pass)) => Auth::UserPassword(decode(user), decode(pass)),
                None => Auth::Token(decode(u)),
            },
        };
        let mut parsed = NatsUrl {
            servers,
            auth,
            creds: None,
            lease_ttl: DEFAULT_LEASE_TTL,
            replicas: None,
        };
        for pair in query
            .unwrap_or_default()
            .split('&')
            .filter(|p| !p.is_empty())
        {
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            match key {
                "creds" => parsed.creds = Some(PathBuf::from(decode(value))),
                "lease_ttl" => {
                    let secs: f64 = value
                        .parse()
                        .map_err(|_| bad("lease_ttl must be a number of seconds"))?;
                    if !(1.0..=3600.0).contains(&secs) {
                        return Err(bad("lease_ttl must be between 1 and 3600 seconds"));
                    }
                    parsed.lease_ttl = Duration::from_secs_f64(secs);
                }
                "replicas" => {
                    let n: usize = value
                        .parse()
                        .map_err(|_| bad("replicas must be a whole number"))?;
                    if !(1..=5).contains(&n) {
                        return Err(bad("replicas must be between 1 and 5 (JetStream's limit)"));
                    }
                    parsed.replicas = Some(n);
                }
                other => return Err(bad(&format!("unknown option {other:?}"))),
            }
        }
        Ok(parsed)
    }

    /// Fills in credentials the URL did not give from the usual NATS variables (`env` looks
    /// one up): `NATS_CREDS`, then `NATS_USER` with `NATS_PASSWORD`, then `NATS_TOKEN`.
    pub fn with_env(mut self, env: &dyn Fn(&str) -> Option<String>) -> NatsUrl {
        if self.creds.is_none() {
            self.creds = env("NATS_CREDS").map(PathBuf::from);
        }
        if self.auth == Auth::None {
            if let (Some(user), Some(pass)) = (env("NATS_USER"), env("NATS_PASSWORD")) {
                self.auth = Auth::UserPassword(user, pass);
            } else if let Some(token) = env("NATS_TOKEN") {
                self.auth = Auth::Token(token);
            }
        }
        self
    }

    /// The servers, for people (no credentials).
    pub fn display(&self) -> String {
        self.servers.join(",")
    }
}

/// `url` with the credentials of every server removed and its options kept
/// (`nats://u:p@a:4222,nats://t@b?replicas=3` → `nats://a:4222,nats://b?replicas=3`): what a
/// child may be told, the credentials going by other ways.
pub fn without_credentials(url: &str) -> String {
    let (servers, query) = match url.split_once('?') {
        Some((servers, query)) => (servers, Some(query)),
        None => (url, None),
    };
    let host = |rest: &str| rest.rsplit_once('@').map_or(rest, |(_, h)| h).to_string();
    let mut out = servers
        .split(',')
        .map(|server| match server.split_once("://") {
            Some((scheme, rest)) => format!("{scheme}://{}", host(rest)),
            None => host(server),
        })
        .collect::<Vec<_>>()
        .join(",");
    if let Some(query) = query {
        out.push('?');
        out.push_str(query);
    }
    out
}

/// `url` with any credentials replaced, for error messages.
pub fn redact(url: &str) -> String {
    match (url.split_once("://"), url.rfind('@')) {
        (Some((scheme, rest)), Some(_)) => {
            let after = rest.rsplit_once('@').map_or(rest, |(_, h)| h);
            format!("{scheme}://***@{after}")
        }
        _ => url.to_string(),
    }
}

/// Percent-decodes a URL component (credentials may hold `@`, `:` or `/` written as `%40`…).
fn decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        match (bytes[i], bytes.get(i + 1), bytes.get(i + 2)) {
            (b'%', Some(&h), Some(&l)) if hex(h).is_some() && hex(l).is_some() => {
                let v = hex(h).unwrap_or(0) * 16 + hex(l).unwrap_or(0);
                out.push(u8::try_from(v).unwrap_or(b'?'));
                i += 3;
            }
            (b, _, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    #[test]
    fn credentials_are_removed_from_every_server_and_the_options_kept() {
        assert_eq!(
            super::without_credentials("nats://u:p@a:4222,nats://t@b:4222?replicas=3"),
            "nats://a:4222,nats://b:4222?replicas=3"
        );
        assert_eq!(super::without_credentials("nats://a:4222"), "nats://a:4222");
        assert_eq!(super::without_credentials("u:p@a:4222"), "a:4222");
    }

    use super::*;

    #[test]
    fn hosts_ports_credentials_and_options_are_read() {
        let u =
            NatsUrl::parse("nats://al%40ice:p%3Ass@a:4223,b?creds=/c/x.creds&lease_ttl=3").unwrap();
        assert_eq!(u.servers, vec!["nats://a:4223", "nats://b:4222"]);
        assert_eq!(u.auth, Auth::UserPassword("al@ice".into(), "p:ss".into()));
        assert_eq!(u.creds, Some(PathBuf::from("/c/x.creds")));
        assert_eq!(u.lease_ttl, Duration::from_secs(3));
        assert_eq!(u.display(), "nats://a:4223,nats://b:4222");
        let t = NatsUrl::parse("tls://s3cret@h:1").unwrap();
        assert_eq!(t.auth, Auth::Token("s3cret".into()));
        assert!(!format!("{t:?}").contains("s3cret"));
    }

    #[test]
    fn server_lists_are_read_in_both_usual_forms() {
        let want = vec!["nats://a:4222", "nats://b:4222", "nats://c:4223"];
        for list in [
            "nats://a:4222,nats://b:4222,nats://c:4223",
            "nats://a:4222,b:4222,c:4223",
            "nats://a,nats://b,c:4223",
            "nats://a:4222, nats://b:4222 ,c:4223/",
        ] {
            let u = NatsUrl::parse(list).unwrap();
            assert_eq!(u.servers, want, "{list}");
            assert_eq!(u.auth, Auth::None);
        }
        let u = NatsUrl::parse("nats://u:p@a:1,nats://u:p@b:2?replicas=2").unwrap();
        assert_eq!(u.servers, vec!["nats://a:1", "nats://b:2"]);
        assert_eq!(u.auth, Auth::UserPassword("u".into(), "p".into()));
        assert_eq!(u.replicas, Some(2));
        assert_eq!(NatsUrl::parse("nats://a").unwrap().replicas, None);
        for bad in [
            "nats://a,tls://b",
            "nats://a,,b",
            "nats://a?replicas=0",
            "nats://a?replicas=x",
        ] {
            assert!(NatsUrl::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn bad_urls_say_what_is_wrong_without_the_secret() {
        for bad in [
            "http://h",
            "nats//h",
            "nats://u:pw@h?lease_ttl=x",
            "nats://h?what=1",
        ] {
            let e = NatsUrl::parse(bad).unwrap_err().to_string();
            assert!(!e.contains(":pw@"), "{e}");
            assert!(e.contains("nats://"), "{e}");
        }
    }

    #[test]
    fn the_environment_fills_only_what_the_url_left_out() {
        let env = |k: &str| match k {
            "NATS_USER" => Some("u".to_string()),
            "NATS_PASSWORD" => Some("p".to_string()),
            _ => None,
        };
        let u = NatsUrl::parse("nats://h").unwrap().with_env(&env);
        assert_eq!(u.auth, Auth::UserPassword("u".into(), "p".into()));
        let t = NatsUrl::parse("nats://tok@h").unwrap().with_env(&env);
        assert_eq!(t.auth, Auth::Token("tok".into()));
    }
}
