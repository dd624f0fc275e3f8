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

use crate::kv::Cas;
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

impl NatsStore {
    fn corrupt_roster(&self, key: &str, e: &serde_json::Error) -> StoreError {
        StoreError::Corrupt {
            place: self.inner.roster.place(key),
            detail: e.to_string(),
        }
    }

    fn load_head(&self) -> Result<(Head, Option<u64>), StoreError> {
        let inner = &self.inner;
        match inner.roster.get(&inner.conn, KEY)? {
            None => Ok((
                Head {
                    team: inner.team.clone(),
                    ..Head::default()
                },
                None,
            )),
            Some(record) => {
                let head: Head = serde_json::from_slice(&record.value)
                    .map_err(|e| self.corrupt_roster(KEY, &e))?;
                Ok((head, Some(record.revision)))
            }
        }
    }

    fn load_roster(&self) -> Result<Loaded, StoreError> {
        let inner = &self.inner;
        let (head, head_rev) = self.load_head()?;
        let mut roster = Roster::new(&head.team, &head.lead);
        let mut revisions = HashMap::new();
        let legacy = !head.members.is_empty();
        if legacy {
            roster.members = head.members;
        } else if !head.order.is_empty() {
            let mut stored: HashMap<String, (Member, u64)> = HashMap::new();
            for record in inner.roster.snapshot_under(&inner.conn, MEMBER)? {
                let Some(name) = record.key.strip_prefix(MEMBER) else {
                    continue;
                };
                let member: Member = serde_json::from_slice(&record.value)
                    .map_err(|e| self.corrupt_roster(&record.key, &e))?;
                stored.insert(name.to_string(), (member, record.revision));
            }
            for name in &head.order {
                let found = match stored.remove(name) {
                    Some(found) => Some(found),
                    // Not in the pass over the bucket (written while it ran): read it by key,
                    // so a writer never takes a member off the order it merely did not see.
                    None => match inner.roster.get(&inner.conn, &member_key(name))? {
                        Some(record) => Some((
                            serde_json::from_slice(&record.value)
                                .map_err(|e| self.corrupt_roster(&record.key, &e))?,
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

    pub(crate) fn cas_exhausted(&self, what: &str) -> StoreError {
        self.inner.conn.error(
            format!("update {what}"),
            format!("{MAX_CAS_ROUNDS} compare-and-set rounds lost to other writers"),
        )
    }

    /// Writes one member's key: over `revision` when it is known, else created — or, when a
    /// key is there that `order` does not name (an add that did not finish), over that one.
    fn put_member(
        &self,
        member: &Member,
        revision: Option<u64>,
        order: &[String],
    ) -> Result<Cas, StoreError> {
        let inner = &self.inner;
        let key = member_key(&member.name);
        let bytes = to_bytes("roster member", member)?;
        if let Some(rev) = revision {
            return inner.roster.update(&inner.conn, &key, bytes, rev);
        }
        match inner.roster.create(&inner.conn, &key, bytes.clone())? {
            Cas::Done(rev) => Ok(Cas::Done(rev)),
            Cas::Conflict if order.contains(&member.name) => Ok(Cas::Conflict),
            Cas::Conflict => match inner.roster.get(&inner.conn, &key)? {
                Some(leftover) => inner
                    .roster
                    .update(&inner.conn, &key, bytes, leftover.revision),
                None => Ok(Cas::Conflict),
            },
        }
    }

    /// One attempt at `f` on the roster; `None` when another writer came first.
    fn try_update_roster(
        &self,
        f: &mut dyn FnMut(&mut Roster),
    ) -> Result<Option<Roster>, StoreError> {
        let inner = &self.inner;
        let loaded = self.load_roster()?;
        let before = loaded.roster;
        let mut roster = before.clone();
        f(&mut roster);
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
                inner
                    .roster
                    .delete(&inner.conn, &member_key(&gone.name), Some(*rev))?;
            }
        }
        for member in &roster.members {
            crate::check_agent(&member.name)?;
            if !loaded.legacy && old.get(member.name.as_str()) == Some(&member) {
                continue;
            }
            let revision = loaded.revisions.get(&member.name).copied();
            if self.put_member(member, revision, &loaded.order)? == Cas::Conflict {
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
            Some(rev) => inner.roster.update(&inner.conn, KEY, bytes, rev)?,
            None => inner.roster.create(&inner.conn, KEY, bytes)?,
        };
        Ok(matches!(written, Cas::Done(_)).then_some(roster))
    }
}

impl RosterStore for NatsStore {
    fn roster(&self) -> Result<Roster, StoreError> {
        Ok(self.load_roster()?.roster)
    }

    fn update_roster(&self, f: &mut dyn FnMut(&mut Roster)) -> Result<Roster, StoreError> {
        let mut backoff = crate::backoff::Backoff::conflicts();
        for round in 0..MAX_CAS_ROUNDS {
            if round > 0 {
                backoff.wait(); // another writer won: let the crowd thin out
            }
            if let Some(roster) = self.try_update_roster(f)? {
                return Ok(roster);
            }
        }
        Err(self.cas_exhausted("the roster"))
    }

    fn member(&self, name: &str) -> Result<Option<Member>, StoreError> {
        if crate::check_agent(name).is_err() {
            return Ok(self.roster()?.get(name).cloned());
        }
        let inner = &self.inner;
        match inner.roster.get(&inner.conn, &member_key(name))? {
            Some(record) => Ok(Some(
                serde_json::from_slice(&record.value)
                    .map_err(|e| self.corrupt_roster(&member_key(name), &e))?,
            )),
            // Not split out (an older version's roster), or not a member.
            None => Ok(self.roster()?.get(name).cloned()),
        }
    }

    fn update_member(
        &self,
        name: &str,
        f: &mut dyn FnMut(&mut Member),
    ) -> Result<Option<Member>, StoreError> {
        let inner = &self.inner;
        let key = member_key(name);
        let mut backoff = crate::backoff::Backoff::conflicts();
        for round in 0..MAX_CAS_ROUNDS {
            if round > 0 {
                backoff.wait();
            }
            let record = if crate::check_agent(name).is_ok() {
                inner.roster.get(&inner.conn, &key)?
            } else {
                None
            };
            let Some(record) = record else {
                // Not split out yet, or no such member: the whole-roster path decides.
                return troupe_store::update_member_in_roster(self, name, f);
            };
            let before: Member =
                serde_json::from_slice(&record.value).map_err(|e| self.corrupt_roster(&key, &e))?;
            let mut member = before.clone();
            f(&mut member);
            member.name = name.to_string();
            if member == before {
                return Ok(Some(member));
            }
            let bytes = to_bytes("roster member", &member)?;
            if let Cas::Done(_) = inner
                .roster
                .update(&inner.conn, &key, bytes, record.revision)?
            {
                return Ok(Some(member));
            }
        }
        Err(self.cas_exhausted(&format!("roster member {name}")))
    }
}
