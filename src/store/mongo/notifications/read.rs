//! Reads of the MongoDB notifications: a page either way (`{user, type?, id}`, one
//! query), a page of groups either way (refilled while hidden actors empty groups out),
//! and the sources a rebuild derives from.

use futures::TryStreamExt;
use mongodb::bson::{Document, doc};

use super::{backend, notification_from, opt_post};
use crate::domain::{
    Notification, NotificationFilter, NotificationGroup, NotificationType, NotifyPost,
    NotifySources,
};
use crate::store::mongo::{MongoStore, all, db_error, int, oid};
use crate::store::{PostRange, StoreResult};

fn group_from(doc: &Document) -> StoreResult<NotificationGroup> {
    let kind = doc.get_str("type").unwrap_or_default();
    Ok(NotificationGroup {
        kind: NotificationType::parse(kind)
            .ok_or_else(|| backend(format!("unknown notification type {kind:?}")))?,
        post: opt_post(doc, "post"),
        count: int(doc, "count").max(0) as u64,
        actors: doc
            .get_array("actors")
            .map(|a| {
                a.iter()
                    .filter_map(|v| v.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default(),
        latest_id: opt_post(doc, "latest_id")
            .ok_or_else(|| backend(format!("notification group without latest_id: {doc}")))?,
        latest_at_ms: int(doc, "latest_at"),
    })
}

/// The id bound and sort of a read in `range`: below `before` newest first, or above
/// `after` oldest first.
fn keyset(range: PostRange) -> (Option<Document>, i32) {
    match range {
        PostRange::Older(before) => (before.map(|b| doc! { "$lt": oid(b) }), -1),
        PostRange::Newer(after) => (Some(doc! { "$gt": oid(after) }), 1),
    }
}

fn types_filter(filter: &NotificationFilter, into: &mut Document) {
    if !filter.types.is_empty() {
        let types: Vec<&str> = filter.types.iter().map(|t| t.as_str()).collect();
        into.insert("type", doc! { "$in": types });
    }
}

impl MongoStore {
    pub(super) async fn sources(&self) -> StoreResult<NotifySources> {
        let mut s = NotifySources::default();
        let mut users = self
            .users_coll()
            .find(doc! {})
            .projection(doc! { "created_at": 1 })
            .await
            .map_err(db_error)?;
        while let Some(u) = users.try_next().await.map_err(db_error)? {
            if let Ok(id) = u.get_str("_id") {
                s.users.insert(id.to_owned(), int(&u, "created_at"));
            }
        }
        let mut follows = self
            .db
            .collection::<Document>(crate::store::mongo::graph::FOLLOWS)
            .find(doc! {})
            .await
            .map_err(db_error)?;
        while let Some(f) = follows.try_next().await.map_err(db_error)? {
            let (a, b) = (f.get_str("from"), f.get_str("to"));
            if let (Ok(a), Ok(b)) = (a, b) {
                s.follows
                    .insert((a.to_owned(), b.to_owned()), int(&f, "created_at"));
            }
        }
        let mut likes = self
            .db
            .collection::<Document>("likes")
            .find(doc! {})
            .await
            .map_err(db_error)?;
        while let Some(l) = likes.try_next().await.map_err(db_error)? {
            let Ok(id) = l.get_document("_id") else {
                continue;
            };
            if let (Ok(user), Some(post)) = (id.get_str("u"), opt_post(id, "p")) {
                s.likes
                    .insert((user.to_owned(), post), int(&l, "createdAt"));
            }
        }
        let mut reposts = self
            .db
            .collection::<Document>(crate::domain::REPOSTS)
            .find(doc! {})
            .await
            .map_err(db_error)?;
        while let Some(r) = reposts.try_next().await.map_err(db_error)? {
            if let (Ok(user), Some(post), Some(id)) =
                (r.get_str("user"), opt_post(&r, "post"), opt_post(&r, "_id"))
            {
                s.reposts.insert((user.to_owned(), post), id.timestamp_ms());
            }
        }
        let mut posts = self
            .content_coll()
            .find(doc! { "author": { "$exists": true } })
            .projection(doc! { "author": 1, "text": 1, "reply_to": 1 })
            .await
            .map_err(db_error)?;
        while let Some(p) = posts.try_next().await.map_err(db_error)? {
            let Some(id) = opt_post(&p, "_id") else {
                continue;
            };
            let post = NotifyPost {
                id,
                author: p.get_str("author").unwrap_or_default().to_owned(),
                text: p.get_str("text").unwrap_or_default().to_owned(),
                reply_to: crate::store::mongo::threads::reply_from(&p)?,
            };
            s.posts.insert(id, post);
        }
        s.dismissals = self.every_dismissal().await?;
        Ok(s)
    }

    /// `user`'s notifications in `range`, at most `limit`, in its order: one query of
    /// `{user, id}` (or `{user, type, id}`), walked either way.
    pub(super) async fn notifications_page(
        &self,
        user: &str,
        filter: &NotificationFilter,
        range: PostRange,
        limit: usize,
    ) -> StoreResult<Vec<Notification>> {
        let mut query = doc! { "user": user, "removed": { "$ne": true } };
        let (bound, sort) = keyset(range);
        if let Some(bound) = bound {
            query.insert("id", bound);
        }
        types_filter(filter, &mut query);
        if !filter.hidden.is_empty() {
            query.insert("actor", doc! { "$nin": &filter.hidden });
        }
        let docs = all(self
            .notifications_coll()
            .find(query)
            .sort(doc! { "id": sort })
            .limit(limit as i64))
        .await?;
        docs.iter().map(notification_from).collect()
    }

    /// `user`'s groups in `range` (by their latest notification), at most `limit`, in
    /// its order.
    pub(super) async fn groups_page(
        &self,
        user: &str,
        filter: &NotificationFilter,
        mut range: PostRange,
        limit: usize,
    ) -> StoreResult<Vec<NotificationGroup>> {
        let mut out = Vec::new();
        // Refilled while hidden actors empty groups out, one page of rows per round.
        loop {
            // Emptied groups stay as tombstones (`count` 0), out of the page.
            let mut query = doc! { "user": user, "count": { "$gt": 0 } };
            let (bound, sort) = keyset(range);
            if let Some(bound) = bound {
                query.insert("latest_id", bound);
            }
            types_filter(filter, &mut query);
            let docs = all(self
                .groups_coll()
                .find(query)
                .sort(doc! { "latest_id": sort })
                .limit(limit as i64))
            .await?;
            let full = docs.len() == limit;
            let rows = docs
                .iter()
                .map(group_from)
                .collect::<StoreResult<Vec<_>>>()?;
            if let Some(last) = rows.last() {
                range = match range {
                    PostRange::Older(_) => PostRange::Older(Some(last.latest_id)),
                    PostRange::Newer(_) => PostRange::Newer(last.latest_id),
                };
            }
            for mut g in rows {
                g.actors.retain(|a| !filter.hidden.contains(a));
                if !g.actors.is_empty() && out.len() < limit {
                    out.push(g);
                }
            }
            if !full || out.len() >= limit {
                return Ok(out);
            }
        }
    }
}
