//! Every post's `replies_count` against the posts answering it, and its
//! `reposts_count` against the reposts standing of it, a page of posts at a time in the
//! posts pass (one grouped count each per page), and one post again in the eventual
//! window. What the counts should be is the derived definitions'
//! ([`crate::derived::Sources::replies_count`]: the live posts whose `reply_to` names
//! it; [`crate::derived::Sources::reposts_count`]: the standing reposts of a live post);
//! the store counts them (`AuditStore::reply_counts`, `AuditStore::repost_counts`)
//! rather than handing every reply of a long thread or repost of a popular post over.

use std::collections::BTreeMap;

use super::{Finding, Fix, Kind, Settings, Tally, Unit};
use crate::domain::{Post, PostId};
use crate::store::{Store, StoreResult};

/// `posts`' counts against their replies and reposts, into `tally`.
pub(super) async fn check(
    store: &Store,
    settings: &Settings,
    posts: &[Post],
    tally: &mut Tally,
) -> StoreResult<()> {
    let ids: Vec<PostId> = posts.iter().map(|p| p.id).collect();
    let replies: BTreeMap<PostId, u64> =
        store.audit.reply_counts(&ids).await?.into_iter().collect();
    let reposts: BTreeMap<PostId, u64> =
        store.audit.repost_counts(&ids).await?.into_iter().collect();
    tally.checked(Kind::Replies, posts.len() as u64);
    tally.checked(Kind::Reposts, posts.len() as u64);
    for post in posts {
        let counts = [
            (Kind::Replies, "replies_count", post.replies_count, &replies),
            (Kind::Reposts, "reposts_count", post.reposts_count, &reposts),
        ];
        for (kind, field, held, counted) in counts {
            let want = counted.get(&post.id).copied().unwrap_or(0);
            if held != want {
                let detail = format!(
                    "post {} by {}: {field} is {held}, the sources say {want}",
                    post.id, post.author
                );
                let finding = Finding {
                    kind,
                    unit: Unit::Post(post.id),
                    detail,
                    fix: Fix::Rebuild,
                };
                tally.found(finding, settings.keep);
            }
        }
    }
    Ok(())
}
