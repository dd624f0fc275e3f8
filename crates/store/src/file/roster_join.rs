//! A member joining the roster (`RosterStore::join_member`) without copying it: a name not on
//! the roster is one `members` record appended, the record a whole-roster update adding that
//! member at the end writes, so readers of every version see the same roster. Anything else (the
//! name is there already, and moving it last changes the order; no log yet; a log due for
//! compaction) goes the whole-roster way.

use std::fs::File;

use troupe_protocol::Member;

use super::roster::{compact_limit, RecordRef};
use super::{to_line, FileStore};
use crate::error::StoreError;

/// How far a join went under the roster lock.
pub(super) enum Joined {
    /// Done: the member written (`None`: the closure wrote nothing), and the log to sync.
    Written(Option<Box<Member>>, Option<File>),
    /// Not a plain append: the caller updates the whole roster instead (the closure was not
    /// applied).
    Whole,
}

impl FileStore {
    /// `join_member` up to its sync, when the name is new: `f` is asked for the member (it sees
    /// none), which is appended as its own record, placed in the roster index like any one
    /// member's record, and added to this instance's copy of the roster.
    pub(super) fn write_join(
        &self,
        name: &str,
        f: &mut dyn FnMut(Option<Member>) -> Option<Member>,
    ) -> Result<Joined, StoreError> {
        self.with_roster_lock(|lock| {
            let mut cache = self.roster_cache();
            self.catch_up(&mut cache)?;
            let members = cache.roster.members.len();
            let known = cache.roster.members.iter().any(|m| m.name == name);
            if known || cache.file.is_none() || cache.records + 1 > compact_limit(members + 1) {
                return Ok(Joined::Whole);
            }
            let Some(mut member) = f(None) else {
                return Ok(Joined::Written(None, None));
            };
            member.name = name.to_string();
            let line = to_line("roster record", &RecordRef::Members(vec![&member]))?;
            self.index_append(lock, &cache, &line, Some(name))?;
            let file = self.append_record(&cache, &line)?;
            cache.offset += line.len() as u64;
            cache.records += 1;
            cache.roster.members.push(member.clone());
            // A new member is membership: always synced.
            Ok(Joined::Written(Some(Box::new(member)), Some(file)))
        })
    }
}
