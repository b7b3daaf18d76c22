//! Post ids: 12-byte ObjectIds whose bytes are laid out so that ids sort in creation order
//! and carry their creation time to the millisecond.
//!
//! Layout (big endian): 4 bytes of Unix seconds (as in a MongoDB ObjectId), 2 bytes of
//! milliseconds, 6 bytes of tail. Each process starts every millisecond's tail at its own
//! random 48-bit value (not the pid, which is 1 in many containers), so two processes
//! writing to one MongoDB rarely meet; a duplicate key is retried by the caller.

use std::fmt;
use std::str::FromStr;
use std::sync::Mutex;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::time::{TimeError, check_time_at};

#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PostId([u8; 12]);

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("a post id is 24 hexadecimal characters")]
pub struct PostIdError;

/// Why an id is not one the service could have made (see [`PostId::check_at`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PostIdTimeError {
    #[error("its milliseconds field (bytes 5 and 6) is {0}; it must be below 1000")]
    Millis(u16),
    #[error("its time: {0}")]
    Time(#[from] TimeError),
}

/// How far ahead of the clock a stored last id may lie and still be followed by
/// [`PostId::next_after`]. Further ahead, it is not a clock that stepped back but a
/// wrong id (written before imports were checked), and following it would date every
/// new post by it.
pub const MAX_LEAD_MS: i64 = 24 * 60 * 60 * 1000;

impl PostId {
    pub const MIN: PostId = PostId([0; 12]);
    /// Above every id: a bound that excludes none.
    pub const MAX: PostId = PostId([0xff; 12]);

    pub fn from_bytes(bytes: [u8; 12]) -> Self {
        PostId(bytes)
    }

    pub fn bytes(&self) -> [u8; 12] {
        self.0
    }

    /// The id's 96 bits as a number: ids sort as their numbers do.
    pub fn as_u128(self) -> u128 {
        let mut wide = [0u8; 16];
        wide[4..].copy_from_slice(&self.0);
        u128::from_be_bytes(wide)
    }

    /// The id of the number `value`; bits above the 96th are dropped.
    pub fn from_u128(value: u128) -> Self {
        let wide = value.to_be_bytes();
        let mut bytes = [0u8; 12];
        bytes.copy_from_slice(&wide[4..]);
        PostId(bytes)
    }

    /// The smallest id whose time is `ms` and whose tail is `tail`.
    pub fn at(ms: i64, tail: u64) -> Self {
        let ms = ms.max(0) as u128;
        let secs = ms / 1000;
        let millis = ms % 1000;
        PostId::from_u128((secs << 64) | (millis << 48) | (tail as u128 & 0xffff_ffff_ffff))
    }

    /// Creation time in milliseconds since the Unix epoch.
    pub fn timestamp_ms(&self) -> i64 {
        let value = self.as_u128();
        let secs = (value >> 64) as i64;
        let millis = ((value >> 48) & 0xffff) as i64;
        secs * 1000 + millis
    }

    /// The millisecond field (bytes 5 and 6): below 1000 in every id the service makes.
    pub fn millis_field(&self) -> u16 {
        u16::from_be_bytes([self.0[4], self.0[5]])
    }

    /// Whether this is an id the service could have made by `now_ms`: its millisecond
    /// field below 1000, its time in the kept range and no later than `now_ms` plus the
    /// clock skew (see `domain::time`). Every id that enters from outside (`import`,
    /// `restore`) is held to this.
    pub fn check_at(&self, now_ms: i64) -> Result<(), PostIdTimeError> {
        let millis = self.millis_field();
        if millis >= 1000 {
            return Err(PostIdTimeError::Millis(millis));
        }
        check_time_at(self.timestamp_ms(), now_ms)?;
        Ok(())
    }

    /// The next id for a post created at `now_ms`: the time-based id with tail `start`,
    /// or one past `last` when the clock has not moved on, so ids strictly increase.
    /// A `last` more than [`MAX_LEAD_MS`] ahead of `now_ms` is not followed.
    pub fn next_after(now_ms: i64, last: Option<PostId>, start: u64) -> PostId {
        let candidate = PostId::at(now_ms, start);
        match last {
            Some(last)
                if candidate <= last
                    && last.timestamp_ms() <= now_ms.saturating_add(MAX_LEAD_MS) =>
            {
                PostId::from_u128(last.as_u128() + 1)
            }
            _ => candidate,
        }
    }
}

impl fmt::Display for PostId {
    /// 24 lowercase hex digits, written at once: every timeline item carries an id, and
    /// a `write!` per byte was 5% of a warm timeline read's CPU.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const DIGITS: &[u8; 16] = b"0123456789abcdef";
        let mut text = [0u8; 24];
        for (pair, byte) in text.chunks_exact_mut(2).zip(self.0) {
            pair[0] = DIGITS[usize::from(byte >> 4)];
            pair[1] = DIGITS[usize::from(byte & 0xf)];
        }
        f.write_str(std::str::from_utf8(&text).map_err(|_| fmt::Error)?)
    }
}

impl fmt::Debug for PostId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PostId({self})")
    }
}

impl FromStr for PostId {
    type Err = PostIdError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if s.len() != 24 || !s.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(PostIdError);
        }
        let mut bytes = [0u8; 12];
        for (i, byte) in bytes.iter_mut().enumerate() {
            *byte = u8::from_str_radix(&s[2 * i..2 * i + 2], 16).map_err(|_| PostIdError)?;
        }
        Ok(PostId(bytes))
    }
}

impl Serialize for PostId {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for PostId {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

/// Hands out strictly increasing ids within one process.
#[derive(Debug)]
pub struct PostIdGenerator {
    /// Where each millisecond's tails start in this process.
    start: u64,
    last: Mutex<Option<PostId>>,
}

/// Tails a process can hand out within one millisecond before carrying into the next.
const TAIL_HEADROOM: u64 = 1 << 32;
const TAIL_BITS: u64 = 48;

impl PostIdGenerator {
    /// Starts each millisecond's tails at `start`, kept below 2^48 - 2^32 so a burst of
    /// ids within one millisecond never carries into the time bits.
    pub fn new(start: u64, last: Option<PostId>) -> Self {
        PostIdGenerator {
            start: start % ((1 << TAIL_BITS) - TAIL_HEADROOM),
            last: Mutex::new(last),
        }
    }

    /// A generator whose tails start at a fresh random 48-bit value.
    pub fn random(last: Option<PostId>) -> Self {
        PostIdGenerator::new(rand::random::<u64>(), last)
    }

    pub fn next(&self, now_ms: i64) -> PostId {
        let mut last = self
            .last
            .lock()
            .unwrap_or_else(|poison| poison.into_inner());
        let id = PostId::next_after(now_ms, *last, self.start);
        *last = Some(id);
        id
    }

    /// Notes an id stored by other means (a bulk load), so later ids are above it.
    pub fn observe(&self, id: PostId) {
        let mut last = self
            .last
            .lock()
            .unwrap_or_else(|poison| poison.into_inner());
        if last.is_none_or(|last| last < id) {
            *last = Some(id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_through_hex() {
        let id = PostId::at(1_700_000_000_123, 42);
        let text = id.to_string();
        assert_eq!(text.len(), 24);
        assert_eq!(text.parse::<PostId>().unwrap(), id);
        assert!("xyz".parse::<PostId>().is_err());
        let every_nibble = PostId::from_bytes([
            0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef, 0xf0, 0x0f, 0x9a, 0x00,
        ]);
        assert_eq!(every_nibble.to_string(), "0123456789abcdeff00f9a00");
        assert!("zz0000000000000000000000".parse::<PostId>().is_err());
    }

    #[test]
    fn encodes_time_to_the_millisecond() {
        let id = PostId::at(1_700_000_000_123, 7);
        assert_eq!(id.timestamp_ms(), 1_700_000_000_123);
        // The first four bytes are the seconds, as in a MongoDB ObjectId.
        assert_eq!(
            u32::from_be_bytes(id.bytes()[..4].try_into().unwrap()),
            1_700_000_000
        );
    }

    #[test]
    fn ids_strictly_increase_even_when_the_clock_stalls_or_goes_back() {
        let generator = PostIdGenerator::new(3, None);
        let a = generator.next(5_000);
        let b = generator.next(5_000);
        let c = generator.next(4_000);
        let d = generator.next(6_000);
        assert!(a < b && b < c && c < d, "{a} {b} {c} {d}");
        assert_eq!(d.timestamp_ms(), 6_000);
    }

    #[test]
    fn ids_made_elsewhere_are_checked_and_a_far_future_last_id_is_not_followed() {
        let now = 1_700_000_000_000;
        assert_eq!(PostId::at(now, 5).check_at(now), Ok(()));
        let future: PostId = "f00000000000000000000001".parse().unwrap();
        assert!(matches!(
            future.check_at(now),
            Err(PostIdTimeError::Time(TimeError::Future { .. }))
        ));
        let bad_millis: PostId = "6553f10003e8000000000000".parse().unwrap();
        assert_eq!(bad_millis.check_at(now), Err(PostIdTimeError::Millis(1000)));
        // A stored last id from 2097 does not date the next post.
        let next = PostId::next_after(now, Some(future), 0);
        assert_eq!(next.timestamp_ms(), now);
        // One a little ahead (a clock stepped back) still is followed.
        let ahead = PostId::at(now + 60_000, 0);
        assert!(PostId::next_after(now, Some(ahead), 0) > ahead);
    }

    #[test]
    fn processes_start_their_tails_at_random_48_bit_values() {
        let starts: std::collections::HashSet<u64> = (0..64)
            .map(|_| PostIdGenerator::random(None).next(5_000).as_u128() as u64 & 0xffff_ffff_ffff)
            .collect();
        // Sixty-four draws from 2^48 - 2^32 values: a collision would be a broken source.
        assert_eq!(starts.len(), 64);
        // And they use the high bits, which pid-based starts never reached.
        assert!(starts.iter().any(|s| *s >= 1 << 40));
        let top = PostIdGenerator::new(u64::MAX, None);
        let id = top.next(5_000);
        assert_eq!(
            id.timestamp_ms(),
            5_000,
            "the start leaves headroom below the time bits"
        );
    }
}
