//! Repeated keys in the import's files. A key seen again with the same values is a
//! harmless duplicate (written once); seen again with other values (a user with two
//! names, a post with two authors or texts, a follow or like with two dates) it is a
//! conflict, and the import is refused: keeping either silently would report success
//! over data the file does not say.
//!
//! Memory: per key, a 128-bit hash of it (users and posts keep their ids elsewhere for
//! the reference checks), a 64-bit hash of its values and the line it was first seen on.

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::hash::{DefaultHasher, Hash, Hasher};

/// One file's keys: where each was first seen and what it said there.
#[derive(Default)]
pub struct Seen {
    first: HashMap<u128, (u64, u64)>,
}

/// What a line's key was seen as.
#[derive(Debug, PartialEq, Eq)]
pub enum Repeat {
    /// The first time.
    New,
    /// Again, with the same values as at this line.
    Same(u64),
    /// Again, with other values than at this line.
    Conflict(u64),
}

/// A fixed-key hash (deterministic from run to run) of `value`, salted with `salt`.
fn hash64(salt: u8, value: &impl Hash) -> u64 {
    let mut hasher = DefaultHasher::new();
    salt.hash(&mut hasher);
    value.hash(&mut hasher);
    hasher.finish()
}

impl Seen {
    /// Records `key` with `values` at `line`.
    pub fn note(&mut self, key: &impl Hash, values: &impl Hash, line: u64) -> Repeat {
        let key = (u128::from(hash64(0, key)) << 64) | u128::from(hash64(1, key));
        let values = hash64(2, values);
        match self.first.entry(key) {
            Entry::Vacant(vacant) => {
                vacant.insert((values, line));
                Repeat::New
            }
            Entry::Occupied(seen) if seen.get().0 == values => Repeat::Same(seen.get().1),
            Entry::Occupied(seen) => Repeat::Conflict(seen.get().1),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_values_repeat_other_values_conflict() {
        let mut seen = Seen::default();
        assert_eq!(seen.note(&"ann", &("Ann", 5), 1), Repeat::New);
        assert_eq!(seen.note(&"bob", &("Ann", 5), 2), Repeat::New);
        assert_eq!(seen.note(&"ann", &("Ann", 5), 3), Repeat::Same(1));
        assert_eq!(seen.note(&"ann", &("Anne", 5), 4), Repeat::Conflict(1));
        assert_eq!(seen.note(&"ann", &("Ann", 6), 5), Repeat::Conflict(1));
    }
}
