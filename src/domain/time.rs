//! Times: the one range of times the service accepts and writes, and how it writes them.
//!
//! Every time is milliseconds since the Unix epoch (`i64`). The service keeps times in
//! **[`MIN_TIME_MS`], 1970-01-01T00:00:00.000Z, up to but not including [`MAX_TIME_MS`],
//! 2100-01-01T00:00:00.000Z**: a post id holds its time in 4 bytes of seconds, which end
//! in 2106, and RFC 3339 has four-digit years, so the range sits well inside both. Where
//! data enters from outside (the API's clock, `import`, `restore`), a time is also held
//! to be no later than the moment it enters plus [`CLOCK_SKEW_MS`]: a time in the future
//! would sort above everything written until then ([`check_time_at`]).
//!
//! [`Rfc3339Ms`] writes any `i64` without panicking: times in the range as RFC 3339 with
//! milliseconds; a year outside 0000..=9999 (only a store written before the range was
//! enforced can hold one) as ISO 8601's expanded year, `+10000-01-01T00:00:00.000Z`.

/// The earliest time kept: 1970-01-01T00:00:00.000Z.
pub const MIN_TIME_MS: i64 = 0;
/// The end of the times kept (exclusive): 2100-01-01T00:00:00.000Z.
pub const MAX_TIME_MS: i64 = 4_102_444_800_000;
/// How far past the moment it enters a time may lie: clocks of two machines differ.
pub const CLOCK_SKEW_MS: i64 = 5 * 60 * 1000;

/// Why a time was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TimeError {
    #[error(
        "time {ms} ms is outside the times kept: from 0 (1970-01-01T00:00:00.000Z) up to, \
         not including, {MAX_TIME_MS} (2100-01-01T00:00:00.000Z)"
    )]
    OutOfRange { ms: i64 },
    #[error(
        "time {ms} ms ({}) lies in the future: later than {} (now plus {} minutes of clock skew)",
        Rfc3339Ms(*ms),
        Rfc3339Ms(*limit),
        CLOCK_SKEW_MS / 60_000
    )]
    Future { ms: i64, limit: i64 },
}

/// `ms` if it lies in the range the service keeps.
pub fn check_time_ms(ms: i64) -> Result<i64, TimeError> {
    if (MIN_TIME_MS..MAX_TIME_MS).contains(&ms) {
        Ok(ms)
    } else {
        Err(TimeError::OutOfRange { ms })
    }
}

/// `ms` if it lies in the range and no later than `now_ms` plus [`CLOCK_SKEW_MS`]: the
/// check for every time that enters the store from outside (import, restore).
pub fn check_time_at(ms: i64, now_ms: i64) -> Result<i64, TimeError> {
    check_time_ms(ms)?;
    let limit = now_ms.saturating_add(CLOCK_SKEW_MS);
    if ms > limit {
        return Err(TimeError::Future { ms, limit });
    }
    Ok(ms)
}

/// Formats milliseconds since the Unix epoch as RFC 3339 with millisecond precision.
pub fn format_time_ms(ms: i64) -> String {
    Rfc3339Ms(ms).to_string()
}

/// The UTC date of `ms` since the Unix epoch, `YYYY-MM-DD` (the date part of
/// [`format_time_ms`], expanded years included).
pub fn format_date_ms(ms: i64) -> String {
    let mut text = format_time_ms(ms);
    if let Some(t) = text.find('T') {
        text.truncate(t);
    }
    text
}

/// A time in milliseconds since the epoch, shown (and serialized, without an
/// intermediate `String`) as RFC 3339 with milliseconds, in UTC. Never panics: see the
/// module comment for years outside 0000..=9999.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rfc3339Ms(pub i64);

/// Year, month and day of the proleptic Gregorian calendar for a day count since
/// 1970-01-01 (Howard Hinnant's `civil_from_days`), for any `i64` day count of a time.
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

impl std::fmt::Display for Rfc3339Ms {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        const DAY_MS: i64 = 86_400_000;
        let (days, in_day) = (self.0.div_euclid(DAY_MS), self.0.rem_euclid(DAY_MS));
        let (year, month, day) = civil_from_days(days);
        let clock = [
            (in_day / 3_600_000) as u32,
            (in_day / 60_000 % 60) as u32,
            (in_day / 1000 % 60) as u32,
        ];
        let millis = (in_day % 1000) as u32;
        if !(0..=9999).contains(&year) {
            return write!(
                f,
                "{year:+05}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{millis:03}Z",
                clock[0], clock[1], clock[2]
            );
        }
        // Written at once: every timeline item carries a time.
        let mut text = *b"0000-00-00T00:00:00.000Z";
        let mut put = |at: usize, width: usize, mut value: u32| {
            for i in (0..width).rev() {
                text[at + i] = b'0' + (value % 10) as u8;
                value /= 10;
            }
        };
        put(0, 4, year as u32);
        put(5, 2, month);
        put(8, 2, day);
        put(11, 2, clock[0]);
        put(14, 2, clock[1]);
        put(17, 2, clock[2]);
        put(20, 3, millis);
        f.write_str(std::str::from_utf8(&text).map_err(|_| std::fmt::Error)?)
    }
}

impl serde::Serialize for Rfc3339Ms {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_as_rfc3339_like_humantime_over_four_digit_years() {
        let last = 253_402_300_799_999; // 9999-12-31T23:59:59.999Z
        let mut samples = vec![
            0,
            1,
            999,
            1000,
            86_399_999,
            951_782_400_000,
            MAX_TIME_MS,
            last,
        ];
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        for _ in 0..20_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            samples.push((x % (last as u64 + 1)) as i64);
        }
        for ms in samples {
            let time = std::time::UNIX_EPOCH + std::time::Duration::from_millis(ms as u64);
            let expected = humantime::format_rfc3339_millis(time).to_string();
            assert_eq!(Rfc3339Ms(ms).to_string(), expected, "{ms}");
        }
    }

    #[test]
    fn never_panics_and_writes_other_years_expanded() {
        assert_eq!(
            format_time_ms(253_402_300_800_000),
            "+10000-01-01T00:00:00.000Z"
        );
        assert_eq!(format_time_ms(-1), "1969-12-31T23:59:59.999Z");
        assert_eq!(
            format_time_ms(-62_167_219_200_001),
            "-0001-12-31T23:59:59.999Z"
        );
        for ms in [i64::MIN, i64::MIN + 1, i64::MAX, i64::MAX - 1] {
            let text = format_time_ms(ms);
            assert!(text.ends_with('Z') && text.len() > 24, "{text}");
        }
    }

    #[test]
    fn dates_are_the_utc_day() {
        assert_eq!(format_date_ms(0), "1970-01-01");
        assert_eq!(format_date_ms(86_399_999), "1970-01-01");
        assert_eq!(format_date_ms(86_400_000), "1970-01-02");
        assert_eq!(format_date_ms(951_782_400_000), "2000-02-29");
        assert_eq!(format_date_ms(253_402_300_800_000), "+10000-01-01");
    }

    #[test]
    fn the_range_and_the_skew() {
        assert_eq!(format_time_ms(MAX_TIME_MS), "2100-01-01T00:00:00.000Z");
        assert_eq!(check_time_ms(0), Ok(0));
        assert_eq!(check_time_ms(MAX_TIME_MS - 1), Ok(MAX_TIME_MS - 1));
        assert!(check_time_ms(-1).is_err());
        assert!(check_time_ms(MAX_TIME_MS).is_err());
        assert!(check_time_ms(253_402_300_800_000).is_err());
        let now = 1_700_000_000_000;
        assert_eq!(
            check_time_at(now + CLOCK_SKEW_MS, now),
            Ok(now + CLOCK_SKEW_MS)
        );
        let late = check_time_at(now + CLOCK_SKEW_MS + 1, now).unwrap_err();
        assert!(late.to_string().contains("future"), "{late}");
        assert!(check_time_at(i64::MAX, i64::MAX).is_err());
    }
}
