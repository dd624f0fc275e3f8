//! Identifiers: sortable unique ids for mail, requests and events, and the agent-name rule.

use thiserror::Error;

/// Longest agent name accepted; short names keep paths and socket names well under OS limits.
pub const MAX_AGENT_NAME_LEN: usize = 32;

/// Returns a new unique id (a ULID): 26 characters, sortable by creation time.
pub fn new_id() -> String {
    new_ulid().to_string()
}

/// A new ULID: the clock's milliseconds and 80 random bits from the operating system (fastrand's
/// if it has none to give).
pub fn new_ulid() -> ulid::Ulid {
    let mut random = [0u8; 16];
    if getrandom::fill(&mut random[6..]).is_err() {
        fastrand::fill(&mut random[6..]);
    }
    ulid::Ulid::from_parts(crate::now_ms(), u128::from_be_bytes(random))
}

/// Why an agent name was refused; the message states the rule so a model can fix the name.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum NameError {
    /// The name is the empty string.
    #[error("agent name is empty; use 1-32 characters: lowercase letters, digits, '-' or '_', starting with a letter or digit")]
    Empty,
    /// The name is longer than [`MAX_AGENT_NAME_LEN`].
    #[error("agent name {name:?} is {len} characters long; the limit is 32")]
    TooLong {
        /// The refused name.
        name: String,
        /// Its length in characters.
        len: usize,
    },
    /// The first character is `-` or `_`.
    #[error("agent name {name:?} must start with a lowercase letter or a digit")]
    BadStart {
        /// The refused name.
        name: String,
    },
    /// A character outside `a-z`, `0-9`, `-`, `_`.
    #[error("agent name {name:?} contains {found:?}; use only lowercase letters a-z, digits, '-' and '_'")]
    BadChar {
        /// The refused name.
        name: String,
        /// The first offending character.
        found: char,
    },
}

/// Checks an agent name: 1–32 characters of lowercase ASCII letters, digits, `-` and `_`,
/// starting with a letter or digit (names become file names, so the rule keeps them safe).
pub fn validate_agent_name(name: &str) -> Result<(), NameError> {
    let Some(first) = name.chars().next() else {
        return Err(NameError::Empty);
    };
    let len = name.chars().count();
    if len > MAX_AGENT_NAME_LEN {
        return Err(NameError::TooLong {
            name: name.to_string(),
            len,
        });
    }
    if let Some(found) = name.chars().find(|c| !is_name_char(*c)) {
        return Err(NameError::BadChar {
            name: name.to_string(),
            found,
        });
    }
    if !(first.is_ascii_lowercase() || first.is_ascii_digit()) {
        return Err(NameError::BadStart {
            name: name.to_string(),
        });
    }
    Ok(())
}

fn is_name_char(c: char) -> bool {
    c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_'
}

/// Owners that are people, not agents, are spelled `user:<name>`; no teammate takes their tasks.
pub const USER_OWNER_PREFIX: &str = "user:";

/// The actor named in transitions the harness makes on its own (expiry).
pub const SYSTEM_ACTOR: &str = "troupe";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_unique_and_sortable() {
        let a = new_id();
        let b = new_id();
        assert_eq!(a.len(), 26);
        assert_ne!(a, b);
        // A ULID's 48-bit timestamp prefix makes later ids sort after earlier ones
        // (within one millisecond ordering is random, so compare the time part only).
        assert!(a[..10] <= b[..10]);
    }

    #[test]
    fn a_ulid_is_dated_now_and_random_in_all_80_bits() {
        let before = crate::now_ms();
        let ids: Vec<ulid::Ulid> = (0..64).map(|_| new_ulid()).collect();
        let after = crate::now_ms();
        let mut seen = 0u128;
        for id in &ids {
            assert!((before..=after).contains(&id.timestamp_ms()));
            seen |= id.random();
        }
        // 64 draws leave a given bit unset with probability 2^-64: every bit shows up.
        assert_eq!(seen, (1u128 << 80) - 1);
    }

    #[test]
    fn accepts_good_names() {
        for name in ["alice", "a", "0", "code-reviewer", "w_2", &"x".repeat(32)] {
            assert_eq!(validate_agent_name(name), Ok(()), "{name}");
        }
    }

    #[test]
    fn refuses_bad_names_with_the_rule() {
        assert_eq!(validate_agent_name(""), Err(NameError::Empty));
        assert!(matches!(
            validate_agent_name(&"x".repeat(33)),
            Err(NameError::TooLong { len: 33, .. })
        ));
        assert!(matches!(
            validate_agent_name("-x"),
            Err(NameError::BadStart { .. })
        ));
        assert!(matches!(
            validate_agent_name("_x"),
            Err(NameError::BadStart { .. })
        ));
        assert!(matches!(
            validate_agent_name("Alice"),
            Err(NameError::BadChar { found: 'A', .. })
        ));
        assert!(matches!(
            validate_agent_name("a/b"),
            Err(NameError::BadChar { found: '/', .. })
        ));
        assert!(matches!(
            validate_agent_name("a.b"),
            Err(NameError::BadChar { found: '.', .. })
        ));
        let msg = validate_agent_name("Bob").map_err(|e| e.to_string());
        assert!(msg.unwrap_err().contains("lowercase"));
    }
}
