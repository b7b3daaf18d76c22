//! Every post's `replies_count` against the posts answering it, a page of posts at a
//! time in the posts pass (one grouped count per page), and one post again in the
//! eventual window. What the count should be is the derived definition's
//! ([`crate::derived::Sources::replies_count`]: the live posts whose `reply_to` names
//! it); the store counts them (`AuditStore::reply_counts`) rather than handing every
//! reply of a long thread over.

use std::collections::BTreeMap;

use super::{Finding, Fix, Kind, Settings, Tally, Unit};
use crate::domain::{Post, PostId};
use crate::store::{Store, StoreResult};

/// `posts`' counts against their replies, into `tally`.
pub(super) async fn check(
    store: &Store,
    settings: &Settings,
    posts: &[Post],
    tally: &mut Tally,
) -> StoreResult<()> {
    let ids: Vec<PostId> = posts.iter().map(|p| p.id).collect();
    let counted: BTreeMap<PostId, u64> =
        store.audit.reply_counts(&ids).await?.into_iter().collect();
    tally.checked(Kind::Replies, posts.len() as u64);
    for post in posts {
        let want = counted.get(&post.id).copied().unwrap_or(0);
        if post.replies_count != want {
            let detail = format!(
                "post {} by {}: replies_count is {}, the sources say {want}",
                post.id, post.author, post.replies_count
            );
            let finding = Finding {
                kind: Kind::Replies,
                unit: Unit::Post(post.id),
                detail,
                fix: Fix::Rebuild,
            };
            tally.found(finding, settings.keep);
        }
    }
    Ok(())
}
