//! Status and notification ids as the Mastodon view shows them: the decimal number of
//! the id's 96 bits, without leading zeros (the engine and `/v1` write the same bits as
//! 24 hex digits). Clients order ids as numbers: Mastodon.py's ID type compares only
//! decimal ids whose text is the number's own, and Tusky sorts by length and then
//! lexically. Every id the engine makes has its seconds in the top 32 bits, so it is at
//! least 2^64 (29 digits today), and its number grows with its creation time.
//!
//! A cursor (`max_id`, `since_id`, `min_id`) below 2^64 is a Mastodon snowflake, as a
//! client makes from a time (Mastodon.py sends `(unix seconds << 16) * 1000` for a
//! `datetime`): it is taken as the bound at its milliseconds (`value >> 16`). A path or
//! body id below 2^64 names no status.

use crate::domain::PostId;

/// The first number that is not a Mastodon snowflake, and at or below every engine id.
const SNOWFLAKE_END: u128 = 1 << 64;
/// Above every 96-bit id.
const ID_END: u128 = 1 << 96;

/// `id` as the Mastodon API writes it (std's `u128` formatting already works in
/// 19-digit `u64` chunks).
pub fn render(id: PostId) -> String {
    id.as_u128().to_string()
}

/// The number `raw` writes: decimal digits only, no leading zero (but `0` itself), below
/// 2^96.
fn number(raw: &str) -> Option<u128> {
    let canonical = !raw.is_empty()
        && raw.bytes().all(|b| b.is_ascii_digit())
        && (raw == "0" || !raw.starts_with('0'));
    let value: u128 = raw.parse().ok().filter(|_| canonical)?;
    (value < ID_END).then_some(value)
}

/// The id a path or a body names, if `raw` is one that the engine could have made.
pub fn parse(raw: &str) -> Option<PostId> {
    number(raw)
        .filter(|v| *v >= SNOWFLAKE_END)
        .map(PostId::from_u128)
}

/// The bound a paging cursor sets: an id, or a Mastodon snowflake's time.
pub fn parse_cursor(raw: &str) -> Option<PostId> {
    let value = number(raw)?;
    if value >= SNOWFLAKE_END {
        return Some(PostId::from_u128(value));
    }
    let ms = i64::try_from(value >> 16).ok()?;
    Some(PostId::at(ms, 0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_round_trip_and_order_as_numbers_by_length_then_text() {
        let ids = [
            PostId::at(1_764_000_000_000, 0),
            PostId::at(1_764_000_000_000, 7),
            PostId::at(1_764_000_000_001, 0),
            PostId::at(1_999_999_999_999, 0xffff_ffff_ffff),
            PostId::at(4_000_000_000_000, 3),
        ];
        for id in ids {
            let text = render(id);
            assert_eq!(parse(&text), Some(id), "{text}");
            assert_eq!(parse_cursor(&text), Some(id), "{text}");
            assert!(!text.starts_with('0'));
        }
        for pair in ids.windows(2) {
            let (a, b) = (render(pair[0]), render(pair[1]));
            assert!((a.len(), &a) < (b.len(), &b), "{a} then {b}");
        }
        assert_eq!(render(ids[0]).len(), 29);
    }

    #[test]
    fn render_writes_the_number_in_decimal() {
        let half: u128 = 10_000_000_000_000_000_000;
        for value in [
            0,
            1,
            9,
            half - 1,
            half,
            half + 1,
            half * 10 + 7,
            1 << 64,
            PostId::at(1_764_000_000_123, 42).as_u128(),
            ID_END - 1,
        ] {
            assert_eq!(render(PostId::from_u128(value)), value.to_string());
        }
    }

    #[test]
    fn other_forms_name_nothing() {
        // A tail with hex letters: a hex id of digits only is a decimal number too (of an
        // id from 1970, naming no status), which no check here can tell apart.
        let id = PostId::at(1_764_000_000_000, 0xabc);
        let text = render(id);
        for bad in [
            String::new(),
            format!("0{text}"),
            format!("+{text}"),
            format!("{text} "),
            id.to_string(),
            ID_END.to_string(),
            "-1".to_owned(),
            "12a".to_owned(),
        ] {
            assert_eq!(parse(&bad), None, "{bad:?}");
            assert_eq!(parse_cursor(&bad), None, "{bad:?}");
        }
        assert_eq!(parse(&(ID_END - 1).to_string()), Some(PostId::MAX));
    }

    #[test]
    fn a_snowflake_cursor_is_its_time_and_names_no_status() {
        // Mastodon.py's id for 2025-11-26T00:00:00Z.
        let secs: u128 = 1_764_115_200;
        let snowflake = ((secs << 16) * 1000).to_string();
        assert_eq!(parse(&snowflake), None);
        let bound = parse_cursor(&snowflake).unwrap();
        assert_eq!(bound, PostId::at(1_764_115_200_000, 0));
        assert_eq!(parse_cursor("0"), Some(PostId::MIN));
        assert_eq!(parse("0"), None);
    }
}
