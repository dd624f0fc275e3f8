//! The roster, one key per member: `roster` holds the team, the lead and the members' order
//! (`order`); `m.<name>` holds each member. A status, usage or liveness change of one member is
//! a compare-and-set of that member's key alone, so a round of N teammates writes N small
//! records instead of N copies of the whole roster (the cost grew with N² when the roster was one
//! key). A member counts as on the roster while both its key and its place in `order` exist:
//! an add writes the key first and then `order`, a removal takes the key away first, so a
//! reader between the two writes sees the member either whole or not at all. A roster written
//! whole by an older version (members inside `roster`) is read as it is and split on its first
//! update.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};
use troupe_protocol::{Member, Roster};
use troupe_store::{RosterStore, StoreError};

use crate::cas::Apply;
use crate::conn::Link;
use crate::kv::{Bucket, Cas};
use crate::{to_bytes, NatsStore};

const KEY: &str = "roster";

/// The prefix of the member keys.
const MEMBER: &str = "m.";

/// How often a compare-and-set is retried before giving up (each retry means another writer
/// committed, so the team as a whole made progress).
pub(crate) const MAX_CAS_ROUNDS: usize = 10_000;

/// What the `roster` key holds.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
struct Head {
    #[serde(default)]
    team: String,
    #[serde(default)]
    lead: String,
    /// The members' names, in roster order.
    #[serde(default)]
    order: Vec<String>,
    /// Members kept inside this key by an older version (split out on the next update).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    members: Vec<Member>,
}

/// The roster as read, with the revisions a write must name.
struct Loaded {
    roster: Roster,
    head: Option<u64>,
    /// The order as stored (to tell an add's leftover key from a member).
    order: Vec<String>,
    /// Each member key's revision, by name.
    revisions: HashMap<String, u64>,
    /// The members live inside the head (an older version's roster).
    legacy: bool,
}

fn member_key(name: &str) -> String {
    format!("{MEMBER}{name}")
}

/// What the roster's operations need: a compare-and-set loop is one future (the pauses after a
/// lost race included), the caller's update applied in it.
#[derive(Clone)]
struct RosterIo {
    bucket: Bucket,
    link: Link,
    team: String,
}

impl RosterIo {
    fn corrupt(&self, key: &str, e: &serde_json::Error) -> StoreError {
        StoreError::Corrupt {
            place: self.bucket.place(key),
            detail: e.to_string(),
        }
    }

    fn cas_exhausted(&self, what: &str) -> StoreError {
        cas_exhausted(&self.link, what)
    }

    async fn load_head(&self) -> Result<(Head, Option<u64>), StoreError> {
        match self.bucket.get(&self.link, KEY).await? {
            None => Ok((
                Head {
                    team: self.team.clone(),
                    ..Head::default()
                },
                None,
            )),
            Some(record) => {
                let head: Head =
                    serde_json::from_slice(&record.value).map_err(|e| self.corrupt(KEY, &e))?;
                Ok((head, Some(record.revision)))
            }
        }
    }

    async fn load_roster(&self) -> Result<Loaded, StoreError> {
        let (head, head_rev) = self.load_head().await?;
        let mut roster = Roster::new(&head.team, &head.lead);
        let mut revisions = HashMap::new();
        let legacy = !head.members.is_empty();
        if legacy {
            roster.members = head.members;
        } else if !head.order.is_empty() {
            let mut stored: HashMap<String, (Member, u64)> = HashMap::new();
            for record in self.bucket.snapshot_under(&self.link, MEMBER).await? {
                let Some(name) = record.key.strip_prefix(MEMBER) else {
                    continue;
                };
                let member: Member = serde_json::from_slice(&record.value)
                    .map_err(|e| self.corrupt(&record.key, &e))?;
                stored.insert(name.to_string(), (member, record.revision));
            }
            for name in &head.order {
                let found = match stored.remove(name) {
                    Some(found) => Some(found),
                    // Not in the pass over the bucket (written while it ran): read it by key,
                    // so a writer never takes a member off the order it merely did not see.
                    None => match self.bucket.get(&self.link, &member_key(name)).await? {
                        Some(record) => Some((
                            serde_json::from_slice(&record.value)
                                .map_err(|e| self.corrupt(&record.key, &e))?,
                            record.revision,
                        )),
                        None => None, // removed (its key goes first)
                    },
                };
                if let Some((member, revision)) = found {
                    revisions.insert(name.clone(), revision);
                    roster.members.push(member);
                }
            }
        }
        Ok(Loaded {
            roster,
            head: head_rev,
            order: head.order,
            revisions,
            legacy,
        })
    }

    /// Writes one member's key: over `revision` when it is known, else created — or, when a
    /// key is there that `order` does not name (an add that did not finish), over that one.
    async fn put_member(
        &self,
        member: &Member,
        revision: Option<u64>,
        order: &[String],
    ) -> Result<Cas, StoreError> {
        let (bucket, link) = (&self.bucket, &self.link);
        let key = member_key(&member.name);
        let bytes = to_bytes("roster member", member)?;
        if let Some(rev) = revision {
            return bucket.update(link, &key, bytes, rev).await;
        }
        match bucket.create(link, &key, bytes.clone()).await? {
            Cas::Done(rev) => Ok(Cas::Done(rev)),
            Cas::Conflict if order.contains(&member.name) => Ok(Cas::Conflict),
            Cas::Conflict => match bucket.get(link, &key).await? {
                Some(leftover) => bucket.update(link, &key, bytes, leftover.revision).await,
                None => Ok(Cas::Conflict),
            },
        }
    }

    /// One attempt at the caller's update on the roster; `None` when another writer came
    /// first.
    async fn try_update_roster(
        &self,
        f: &mut Apply<'_, Roster, Roster>,
    ) -> Result<Option<Roster>, StoreError> {
        let (bucket, link) = (&self.bucket, &self.link);
        let loaded = self.load_roster().await?;
        let before = loaded.roster;
        let roster = f(before.clone())?;
        if roster == before && !loaded.legacy {
            return Ok(Some(roster));
        }
        let old: HashMap<&str, &Member> = before
            .members
            .iter()
            .map(|m| (m.name.as_str(), m))
            .collect();
        // Members that went away lose their key first, so no reader sees them half removed.
        let kept: std::collections::HashSet<&str> =
            roster.members.iter().map(|m| m.name.as_str()).collect();
        for gone in before
            .members
            .iter()
            .filter(|m| !kept.contains(m.name.as_str()))
        {
            if let Some(rev) = loaded.revisions.get(&gone.name) {
                bucket
                    .delete(link, &member_key(&gone.name), Some(*rev))
                    .await?;
            }
        }
        for member in &roster.members {
            crate::check_agent(&member.name)?;
            if !loaded.legacy && old.get(member.name.as_str()) == Some(&member) {
                continue;
            }
            let revision = loaded.revisions.get(&member.name).copied();
            if self.put_member(member, revision, &loaded.order).await? == Cas::Conflict {
                return Ok(None);
            }
        }
        let head = Head {
            team: roster.team.clone(),
            lead: roster.lead.clone(),
            order: roster.members.iter().map(|m| m.name.clone()).collect(),
            members: Vec::new(),
        };
        let unchanged = !loaded.legacy
            && loaded.head.is_some()
            && head.team == before.team
            && head.lead == before.lead
            && head.order == loaded.order;
        if unchanged {
            return Ok(Some(roster));
        }
        let bytes = to_bytes("roster", &head)?;
        let written = match loaded.head {
            Some(rev) => bucket.update(link, KEY, bytes, rev).await?,
            None => bucket.create(link, KEY, bytes).await?,
        };
        Ok(matches!(written, Cas::Done(_)).then_some(roster))
    }

    /// The caller's update applied until its compare-and-set wins: after a lost one, a pause
    /// on the runtime's timer (jittered, so the losers do not collide again in step), then
    /// read and apply again.
    async fn update_roster(&self, mut f: Apply<'_, Roster, Roster>) -> Result<Roster, StoreError> {
        let mut backoff = crate::backoff::Backoff::conflicts();
        for round in 0..MAX_CAS_ROUNDS {
            if round > 0 {
                // Another writer won: let the crowd thin out.
                tokio::time::sleep(backoff.next_pause()).await;
            }
            if let Some(roster) = self.try_update_roster(&mut f).await? {
                return Ok(roster);
            }
        }
        Err(self.cas_exhausted("the roster"))
    }

    /// The caller's update of member `name`'s own key, applied until its compare-and-set wins
    /// (paused as [`RosterIo::update_roster`]): the member as it is now, or `None` when it is
    /// not split out (an older version's roster) or no member, for the whole-roster path.
    async fn update_member(
        &self,
        name: &str,
        f: Apply<'_, Member, Member>,
    ) -> Result<Option<Member>, StoreError> {
        let (bucket, link) = (&self.bucket, &self.link);
        let key = member_key(name);
        let mut backoff = crate::backoff::Backoff::conflicts();
        for round in 0..MAX_CAS_ROUNDS {
            if round > 0 {
                tokio::time::sleep(backoff.next_pause()).await;
            }
            let record = if crate::check_agent(name).is_ok() {
                bucket.get(link, &key).await?
            } else {
                None
            };
            let Some(record) = record else {
                return Ok(None);
            };
            let before: Member =
                serde_json::from_slice(&record.value).map_err(|e| self.corrupt(&key, &e))?;
            let mut member = f(before.clone())?;
            member.name = name.to_string();
            if member == before {
                return Ok(Some(member));
            }
            let bytes = to_bytes("roster member", &member)?;
            if let Cas::Done(_) = bucket.update(link, &key, bytes, record.revision).await? {
                return Ok(Some(member));
            }
        }
        Err(self.cas_exhausted(&format!("roster member {name}")))
    }
}

/// The error of a compare-and-set loop that lost every round.
pub(crate) fn cas_exhausted(link: &Link, what: &str) -> StoreError {
    link.error(
        format!("update {what}"),
        format!("{MAX_CAS_ROUNDS} compare-and-set rounds lost to other writers"),
    )
}

impl NatsStore {
    fn roster_io(&self) -> RosterIo {
        let inner = &self.inner;
        RosterIo {
            bucket: inner.roster.clone(),
            link: inner.conn.link().clone(),
            team: inner.team.clone(),
        }
    }

    pub(crate) fn cas_exhausted(&self, what: &str) -> StoreError {
        cas_exhausted(self.inner.conn.link(), what)
    }
}

#[async_trait::async_trait]
impl RosterStore for NatsStore {
    async fn roster(&self) -> Result<Roster, StoreError> {
        Ok(self.roster_io().load_roster().await?.roster)
    }

    async fn update_roster(&self, f: troupe_store::RosterUpdate<'_>) -> Result<Roster, StoreError> {
        let mut apply = |mut roster: Roster| {
            f(&mut roster);
            Ok(roster)
        };
        self.roster_io().update_roster(&mut apply).await
    }

    async fn member(&self, name: &str) -> Result<Option<Member>, StoreError> {
        if crate::check_agent(name).is_err() {
            return Ok(self.roster().await?.get(name).cloned());
        }
        let io = self.roster_io();
        let key = member_key(name);
        match io.bucket.get(&io.link, &key).await? {
            Some(record) => Ok(Some(
                serde_json::from_slice(&record.value).map_err(|e| io.corrupt(&key, &e))?,
            )),
            // Not split out (an older version's roster), or not a member.
            None => Ok(io.load_roster().await?.roster.get(name).cloned()),
        }
    }

    async fn update_member(
        &self,
        name: &str,
        f: troupe_store::MemberUpdate<'_>,
    ) -> Result<Option<Member>, StoreError> {
        let mut apply = |mut member: Member| {
            f(&mut member);
            Ok(member)
        };
        let outcome = self.roster_io().update_member(name, &mut apply).await?;
        match outcome {
            Some(member) => Ok(Some(member)),
            // Not split out yet, or no such member: the whole-roster path decides.
            None => troupe_store::update_member_in_roster(self, name, f).await,
        }
    }
}
