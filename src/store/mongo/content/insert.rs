//! Inserting a post: the author and the parent read first (`prepare_post`, which also
//! answers the author's follower count and name for the fan-out), then the insert under
//! a given id carrying its claim mark (see `content.rs`), the author's `posts_count` and
//! the parent's `replies_count` moved, and the mark settled. Shared by the plain insert
//! and the keyed one of `idempotency.rs`.

use mongodb::bson::doc;

use super::super::claims::{self, PENDING};
use super::super::{MongoStore, db_error, insert_new, int, oid, threads};
use super::tags;
use crate::domain::{NameStamp, Post, PostId, ReplyTo};
use crate::store::{Counter, Inserted, StoreError, StoreResult};

/// What an insert reads before it writes: the author's follower count and name (the
/// existence check reads them too, for the fan-out's decision) and the parent.
pub(in crate::store::mongo) struct Prepared {
    author_followers: u64,
    author_name: NameStamp,
    reply_to: Option<ReplyTo>,
}

impl MongoStore {
    /// `NotFound` when the author, or the post `in_reply_to` names, is unknown.
    pub(in crate::store::mongo) async fn prepare_post(
        &self,
        author: &str,
        in_reply_to: Option<PostId>,
    ) -> StoreResult<Prepared> {
        let Some(user) = self
            .users_coll()
            .find_one(doc! { "_id": author })
            .projection(doc! { "followers_count": 1, "display_name": 1, "version": 1 })
            .await
            .map_err(db_error)?
        else {
            return Err(StoreError::NotFound(format!("user {author}")));
        };
        let reply_to = match in_reply_to {
            Some(parent) => Some(self.reply_parent(parent).await?),
            None => None,
        };
        Ok(Prepared {
            author_followers: int(&user, "followers_count").max(0) as u64,
            author_name: NameStamp {
                display_name: user.get_str("display_name").unwrap_or(author).to_owned(),
                version: int(&user, "version").max(0) as u64,
            },
            reply_to,
        })
    }

    /// Inserts the post under `id` with its counts, or `None` when `id` is taken (by
    /// another post, or by this same post inserted earlier: the keyed insert of
    /// `idempotency.rs` inserts under an id it minted before).
    pub(in crate::store::mongo) async fn insert_post_as(
        &self,
        id: PostId,
        author: &str,
        text: &str,
        prepared: &Prepared,
    ) -> StoreResult<Option<Inserted>> {
        let reply_to = &prepared.reply_to;
        let post = Post {
            id,
            author: author.to_owned(),
            text: text.to_owned(),
            reply_to: reply_to.clone(),
            replies_count: 0,
            reposts_count: 0,
        };
        let (pending, token) = claims::mark("insert");
        let marked_at = int(&pending, "at");
        let mut doc = doc! { "_id": oid(id), "author": author, "text": text, PENDING: pending };
        if let Some(parent) = reply_to {
            doc.insert(threads::REPLY_TO, threads::reply_doc(parent));
        }
        tags::with_tags(&mut doc, text);
        if insert_new(&self.content_coll(), doc, &["author"]).await? {
            // Where a crash here leaves the post counted by no `$inc` (see above).
            crate::faults::point("post.stored").await;
            crate::faults::gate("post.stored", author).await;
            self.inc_user(author, "posts_count", 1).await?;
            // The parent's count moves under the same claim as the author's.
            if let Some(parent) = reply_to {
                self.move_post_count(Counter::Replies, parent, 1).await?;
            }
            let filter = doc! { "_id": oid(id), "author": author };
            let settled = claims::settle(&self.content_coll(), &filter, token).await?;
            if !settled {
                // Taken over after a stall: the taker's recount of the author may have
                // come before this `$inc`; one more, after it, is exact.
                self.recount_now(&[author]).await?;
            }
            if !settled || claims::outlived(marked_at) {
                // Taken over after a stall (see `store::claims`), or held so long that a
                // recount took the mark for stale: that recount may have run before this
                // `$inc`; one more, after it, is exact.
                if let Some(parent) = reply_to {
                    self.recount_post_count(Counter::Replies, parent, None)
                        .await?;
                }
            }
            Ok(Some(Inserted {
                post,
                author_followers: prepared.author_followers,
                author_name: prepared.author_name.clone(),
            }))
        } else {
            Ok(None)
        }
    }
}
