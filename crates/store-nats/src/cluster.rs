//! Replication: every stream and bucket of a team is created with `min(3, servers in the
//! cluster)` replicas unless the URL (`?replicas=N`) or the `storeReplicas` setting says
//! otherwise, so a team outlives one server of a three-server JetStream cluster. The cluster's
//! size is what the server tells its clients (`connect_urls`: every server's client address);
//! a server that turns a replica count down for want of servers ("insufficient resources") gets
//! one fewer, down to one, when the count was not asked for.

use async_nats::jetstream::{kv::Config as KvConfig, stream};
use troupe_store::StoreError;

use crate::conn::{Conn, Fail};
use crate::kv::Bucket;

/// The most replicas the default asks for: three survive one server lost.
pub const DEFAULT_MAX_REPLICAS: usize = 3;

/// How many copies the team's streams and buckets get.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Replicas {
    /// The count asked for.
    pub count: usize,
    /// True when nobody asked for it (the default): lowered if the cluster cannot hold it.
    pub auto: bool,
}

impl Replicas {
    /// The count asked for, else `min(3, servers in the cluster)`.
    pub fn decide(asked: Option<usize>, cluster_size: usize) -> Replicas {
        match asked {
            Some(count) => Replicas { count, auto: false },
            None => Replicas {
                count: cluster_size.clamp(1, DEFAULT_MAX_REPLICAS),
                auto: true,
            },
        }
    }
}

/// How many servers the cluster the client is connected to has (1 for a lone server).
pub fn cluster_size(conn: &Conn) -> usize {
    let info = conn.client.server_info();
    let mut urls: Vec<&String> = info.connect_urls.iter().collect();
    urls.sort();
    urls.dedup();
    urls.len().max(1)
}

/// True when the server refused a replica count it cannot place.
fn too_few_servers(detail: &str) -> bool {
    let d = detail.to_ascii_lowercase();
    d.contains("insufficient resources") || d.contains("replicas > 1 not supported")
}

/// The stream `config` describes: the existing one, or created now with `replicas` (several
/// processes may race to create it; the loser finds it).
pub async fn ensure_stream(
    conn: &Conn,
    mut config: stream::Config,
    replicas: Replicas,
) -> Result<stream::Stream, StoreError> {
    let action = format!("open stream {}", config.name);
    config.num_replicas = replicas.count;
    loop {
        let created = conn
            .retry(&action, {
                let (js, config) = (conn.js.clone(), config.clone());
                move || {
                    let (js, config) = (js.clone(), config.clone());
                    async move {
                        match js.get_stream(&config.name).await {
                            Ok(s) => return Ok(Ok(s)),
                            Err(e) if !e.to_string().contains("not found") => {
                                return Err(Fail::Transient(e.to_string()))
                            }
                            Err(_) => {}
                        }
                        match js.create_stream(config.clone()).await {
                            Ok(s) => Ok(Ok(s)),
                            Err(e) if too_few_servers(&e.to_string()) => Ok(Err(e.to_string())),
                            Err(_) => Ok(Ok(js.get_stream(&config.name).await?)),
                        }
                    }
                }
            })
            .await?;
        match created {
            Ok(s) => return Ok(s),
            Err(detail) => {
                config.num_replicas = fewer(conn, &action, &detail, config.num_replicas, replicas)?
            }
        }
    }
}

/// The bucket `config` describes: the existing one, or created now with `replicas`.
pub async fn ensure_bucket(
    conn: &Conn,
    mut config: KvConfig,
    replicas: Replicas,
) -> Result<Bucket, StoreError> {
    let action = format!("open bucket {}", config.bucket);
    let name = config.bucket.clone();
    config.num_replicas = replicas.count;
    loop {
        let created = conn
            .retry(&action, {
                let (js, config) = (conn.js.clone(), config.clone());
                move || {
                    let (js, config) = (js.clone(), config.clone());
                    async move {
                        match js.get_key_value(&config.bucket).await {
                            Ok(kv) => return Ok(Ok(kv)),
                            Err(e) if !e.to_string().contains("not found") => {
                                return Err(Fail::Transient(e.to_string()))
                            }
                            Err(_) => {}
                        }
                        match js.create_key_value(config.clone()).await {
                            Ok(kv) => Ok(Ok(kv)),
                            Err(e) if too_few_servers(&e.to_string()) => Ok(Err(e.to_string())),
                            Err(_) => Ok(Ok(js.get_key_value(&config.bucket).await?)),
                        }
                    }
                }
            })
            .await?;
        match created {
            Ok(kv) => return Ok(Bucket { kv, name }),
            Err(detail) => {
                config.num_replicas = fewer(conn, &action, &detail, config.num_replicas, replicas)?
            }
        }
    }
}

/// The next count to try after the server refused `tried` replicas; an error when the count
/// was asked for or one replica was refused.
fn fewer(
    conn: &Conn,
    action: &str,
    detail: &str,
    tried: usize,
    replicas: Replicas,
) -> Result<usize, StoreError> {
    if !replicas.auto || tried <= 1 {
        return Err(StoreError::Backend {
            action: action.to_string(),
            server: conn.server.clone(),
            detail: format!("{detail} (asked for {tried} replicas)"),
            hint: "ask for as many replicas as the cluster has JetStream servers: ?replicas=N in the store URL or the storeReplicas setting",
        });
    }
    tracing::warn!(action, tried, %detail, "the cluster cannot hold that many replicas; asking for one fewer");
    Ok(tried - 1)
}

/// What `troupe doctor` says about a NATS store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterReport {
    /// The servers the client knows of in the cluster (client addresses).
    pub servers: Vec<String>,
    /// The cluster's name, when the server is clustered.
    pub cluster: Option<String>,
    /// The replicas a team created now gets.
    pub new_team_replicas: usize,
    /// The replicas of an existing team's mail stream, and the servers holding them.
    pub team: Option<(String, usize, Vec<String>)>,
}

impl std::fmt::Display for ClusterReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let n = self.servers.len();
        match &self.cluster {
            Some(name) => write!(f, "cluster {name} of {n} server(s)")?,
            None => write!(f, "a single server")?,
        }
        write!(f, "; new teams get {} replica(s)", self.new_team_replicas)?;
        if let Some((team, replicas, peers)) = &self.team {
            write!(f, "; team {team} has {replicas} replica(s)")?;
            if !peers.is_empty() {
                write!(f, " on {}", peers.join(", "))?;
            }
        }
        Ok(())
    }
}

/// Asks the server what it would give a new team and what `team` has, if it exists.
pub async fn inspect(
    conn: &Conn,
    asked: Option<usize>,
    team: &str,
) -> Result<ClusterReport, StoreError> {
    let info = conn.client.server_info();
    let mut servers = info.connect_urls.clone();
    servers.sort();
    servers.dedup();
    let replicas = Replicas::decide(asked, cluster_size(conn));
    let stream_name = crate::names::Names::new(team).mail_stream();
    let found = conn
        .retry(&format!("look at stream {stream_name}"), {
            let (js, name) = (conn.js.clone(), stream_name.clone());
            move || {
                let (js, name) = (js.clone(), name.clone());
                async move {
                    match js.get_stream(&name).await {
                        Ok(s) => {
                            let info = s.get_info().await?;
                            let mut peers: Vec<String> = Vec::new();
                            if let Some(c) = &info.cluster {
                                peers.extend(c.leader.iter().map(|l| format!("{l} (leader)")));
                                peers.extend(c.replicas.iter().map(|p| {
                                    if p.offline {
                                        format!("{} (offline)", p.name)
                                    } else {
                                        p.name.clone()
                                    }
                                }));
                            }
                            Ok(Some((info.config.num_replicas, peers)))
                        }
                        Err(e) if e.to_string().contains("not found") => Ok(None),
                        Err(e) => Err(Fail::Transient(e.to_string())),
                    }
                }
            }
        })
        .await?;
    Ok(ClusterReport {
        servers,
        cluster: info.cluster.clone().filter(|c| !c.is_empty()),
        new_team_replicas: replicas.count,
        team: found.map(|(r, p)| (team.to_string(), r, p)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_is_three_or_the_cluster_and_an_asked_count_stands() {
        assert_eq!(
            Replicas::decide(None, 1),
            Replicas {
                count: 1,
                auto: true
            }
        );
        assert_eq!(Replicas::decide(None, 2).count, 2);
        assert_eq!(Replicas::decide(None, 3).count, 3);
        assert_eq!(Replicas::decide(None, 7).count, 3);
        assert_eq!(
            Replicas::decide(Some(5), 1),
            Replicas {
                count: 5,
                auto: false
            }
        );
        assert!(too_few_servers("insufficient resources (10023)"));
        assert!(!too_few_servers("stream not found"));
    }
}
