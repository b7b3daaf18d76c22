//! A page read in rounds: how much each round asks for, and the cache version the whole
//! page was read under.

use crate::domain::PostId;
use crate::store::timelines::{CacheRows, CacheVersion};

/// How many entries a round asks for: a page's worth first; then what is missing, scaled
/// by the share of the `examined` entries the filters let through (so that a reader who
/// hides much of their timeline is not read one entry a round), at most a page.
pub(super) fn next_request(want: usize, kept: usize, examined: usize) -> usize {
    let missing = want - kept;
    if examined == 0 {
        return want;
    }
    let scaled = missing.saturating_mul(examined).div_ceil(kept.max(1));
    scaled.clamp(missing, want)
}

/// The version of a page read in rounds, after a later round read under `read`: the span
/// of the rounds so far and this one, when each was read whole from the cache and this
/// one under the same version as the first (so nothing was written between the reads:
/// every write moves the version to a value it never had); else none. The rounds read
/// adjacent spans (each below the last entry of the one before), so the page is a
/// function of the rows from this round's last entry up to the first round's bound.
///
/// Rounds that read on below the cache carry the below clock each read first
/// ([`CacheVersion::below`]): the page keeps it when every such round found the same.
/// Such a round's span reaches down to the cache's bottom, so a later round's, also
/// down to the bottom and below the earlier one's cursor, lies within it. A page that
/// met repost entries carries the clock from then on too (`under_repost_clock`).
pub(super) fn spanning(
    so_far: Option<CacheVersion>,
    read: Option<CacheVersion>,
) -> Option<CacheVersion> {
    let (so_far, read) = (so_far?, read?);
    let to_bottom = so_far.rows.from == PostId::MIN && read.rows.from == PostId::MIN;
    let adjacent = read.rows.below == Some(so_far.rows.from) || to_bottom;
    let below = match (so_far.below, read.below) {
        (Some(a), Some(b)) if a != b => return None,
        (a, b) => a.or(b),
    };
    (adjacent && so_far.cache == read.cache && so_far.merged == read.merged).then_some(
        CacheVersion {
            rows: CacheRows {
                from: read.rows.from,
                below: so_far.rows.below,
            },
            below,
            ..so_far
        },
    )
}
