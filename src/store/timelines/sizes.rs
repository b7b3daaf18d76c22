//! How large a timeline document can get: MongoDB's document limit, the budget a
//! timeline document may use of it, and the largest entry the validators allow, from
//! which `feed.cache_size` and the bucket sizes are bounded.

use crate::domain::{validate_display_name, validate_post_text, validate_user_id};

/// MongoDB's largest document, in bytes.
pub const DOCUMENT_LIMIT_BYTES: usize = 16 * 1024 * 1024;
/// A timeline document may use this much of it at most, leaving 1 MiB for fields added
/// later and for the server's own additions (update and change-stream envelopes).
pub const DOCUMENT_BUDGET_BYTES: usize = DOCUMENT_LIMIT_BYTES - 1024 * 1024;
/// More than any timeline document takes outside its entry array (`_id`, user, counters,
/// bounds, flags, the array's own header), with a 32-byte user id. The MongoDB adapter's
/// tests serialise every layout to check this bound.
pub const DOCUMENT_FIXED_BYTES: usize = 256;

/// The most UTF-8 bytes a string accepted by `validate` can take: the longest accepted
/// run of characters of each UTF-8 width, searched, times the width. Derived from the
/// validator itself, so it follows any change to the rules.
fn max_valid_bytes(validate: fn(&str) -> Result<(), String>) -> usize {
    ['a', 'é', '€', '😀']
        .into_iter()
        .map(|c| {
            let fits = |n: usize| validate(&c.to_string().repeat(n)).is_ok();
            if !fits(1) {
                return 0;
            }
            // Accepted lengths form one range starting at 1: double past its end, then
            // halve the gap.
            let (mut good, mut bad) = (1usize, 2usize);
            while fits(bad) {
                assert!(bad < 1 << 24, "a validator accepts unbounded strings");
                (good, bad) = (bad, bad * 2);
            }
            while bad - good > 1 {
                let mid = (good + bad) / 2;
                if fits(mid) { good = mid } else { bad = mid }
            }
            good * c.len_utf8()
        })
        .max()
        .unwrap_or(0)
}

/// The BSON size of the largest timeline entry `{_id: ObjectId, a: author, m: text, n:
/// display name, v: version}`: the document's length prefix (4) and terminator (1);
/// `_id`: type byte, "_id\0", 12 bytes; each string: type byte, name and NUL, length
/// prefix (4), bytes, NUL; `v`: type byte, "v\0", 8 bytes.
pub fn largest_entry_bytes() -> usize {
    let string = |name: &str, bytes: usize| 1 + name.len() + 1 + 4 + bytes + 1;
    let author = max_valid_bytes(validate_user_id);
    let text = max_valid_bytes(validate_post_text);
    let name = max_valid_bytes(validate_display_name);
    // `r`: a reply's parent author, a user id too; a repost's entry carries no `r` but
    // its original's id `o` and author `oa`, which is more.
    let reply = string("r", author);
    let repost = (1 + 2 + 12) + string("oa", author);
    4 + (1 + 4 + 12)
        + string("a", author)
        + string("m", text)
        + string("n", name)
        + (1 + 2 + 8)
        + reply.max(repost)
        + 1
}

/// The BSON size of a timeline document holding `entries` of the largest size: the
/// fixed part plus, per array element, its type byte, decimal index and NUL, and entry.
pub fn largest_document_bytes(entries: u32) -> usize {
    let entries = entries as usize;
    // Indexes below 10 take one digit, below 100 two, and so on.
    let mut digits = 0;
    let (mut width, mut start) = (1, 0);
    while start < entries {
        let end = (start.max(1) * 10).min(entries);
        digits += (end - start) * width;
        (width, start) = (width + 1, end);
    }
    DOCUMENT_FIXED_BYTES + entries * (largest_entry_bytes() + 2) + digits
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_largest_entry_follows_the_validators() {
        // 500 four-byte characters, a 32-character id: 38 bytes of BSON around them; a
        // name of 64 four-byte characters: 8 more, and the version, 11; a repost's
        // original (an ObjectId, 15, and another 32-character id, 41), 56, more than a
        // reply's parent author (40).
        assert_eq!(max_valid_bytes(validate_post_text), 2000);
        assert_eq!(max_valid_bytes(validate_user_id), 32);
        assert_eq!(max_valid_bytes(validate_display_name), 256);
        assert_eq!(largest_entry_bytes(), 38 + 32 + 2000 + 8 + 256 + 11 + 56);
        assert_eq!(largest_document_bytes(0), DOCUMENT_FIXED_BYTES);
        // Indexes 0-9 take one digit, 10-11 two.
        assert_eq!(largest_document_bytes(12), 256 + 12 * 2401 + 10 * 3 + 2 * 4);
        let framing = |n: u32| (0..n).map(|i| 2 + i.to_string().len()).sum::<usize>();
        for n in [1, 9, 10, 11, 99, 100, 101, 1000, 12_345] {
            let expected = 256 + n as usize * 2401 + framing(n);
            assert_eq!(largest_document_bytes(n), expected, "{n} entries");
        }
    }
}
