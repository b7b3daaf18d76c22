//! Every notification of a load on MongoDB: the standing causes read in one pass over
//! each source collection (follows, posts for replies and mentions, likes), gathered per
//! recipient, ranked into rebuilt ids (`store::bulk::rebuilt_for_user`) and inserted
//! with their groups in batches of whole recipients: exactly what the notifications
//! worker's rebuild writes (`derived::notifications::rebuilt`).
//!
//! Memory: every cause, each post's author (for the likes) and each user's creation
//! time (for the mentions) are held until the writes; the embedded store stages them in
//! a temporary table instead.

use std::collections::{BTreeMap, HashMap};

use futures::TryStreamExt;
use mongodb::bson::{Document, doc};

use crate::domain::{
    Notification, NotificationType, PostId, mention_counts, notifies, post_notifies,
};
use crate::store::StoreResult;
use crate::store::bulk::{Cause, rebuilt_for_user};
use crate::store::mongo::graph::FOLLOWS;
use crate::store::mongo::threads::reply_from;
use crate::store::mongo::{MongoStore, db_error, int, post_id};

/// Notifications per batch of inserts (whole recipients, so it may run over).
const INSERT_BATCH: usize = 10_000;

async fn each(
    store: &MongoStore,
    collection: &str,
    projection: Document,
    mut f: impl FnMut(Document) -> StoreResult<()>,
) -> StoreResult<()> {
    let mut cursor = store
        .collection(collection)
        .find(doc! {})
        .projection(projection)
        .await
        .map_err(db_error)?;
    while let Some(found) = cursor.try_next().await.map_err(db_error)? {
        f(found)?;
    }
    Ok(())
}

pub(super) async fn derive(store: &MongoStore) -> StoreResult<u64> {
    store.clear_notifications().await?;
    let mut created: HashMap<String, i64> = HashMap::new();
    each(store, "users", doc! { "created_at": 1 }, |user| {
        if let Ok(id) = user.get_str("_id") {
            created.insert(id.to_owned(), int(&user, "created_at"));
        }
        Ok(())
    })
    .await?;
    let mut causes: BTreeMap<String, Vec<Cause>> = BTreeMap::new();
    let mut add = |user: &str, kind, actor: &str, post, at_ms| {
        causes.entry(user.to_owned()).or_default().push(Cause {
            at_ms,
            kind,
            actor: actor.to_owned(),
            post,
        });
    };
    each(
        store,
        FOLLOWS,
        doc! { "from": 1, "to": 1, "created_at": 1 },
        |edge| {
            let (from, to) = (edge.get_str("from"), edge.get_str("to"));
            if let (Ok(from), Ok(to)) = (from, to)
                && notifies(to, from)
            {
                add(
                    to,
                    NotificationType::Follow,
                    from,
                    None,
                    int(&edge, "created_at"),
                );
            }
            Ok(())
        },
    )
    .await?;
    let mut authors: HashMap<PostId, String> = HashMap::new();
    let projection = doc! { "author": 1, "text": 1, "reply_to": 1 };
    each(store, "content", projection, |post| {
        let id = post_id(post.get("_id"))?;
        let author = post.get_str("author").unwrap_or_default();
        let text = post.get_str("text").unwrap_or_default();
        let reply_to = reply_from(&post)?.filter(|r| !r.author.is_empty());
        let at = id.timestamp_ms();
        for (user, kind) in post_notifies(author, text, reply_to.as_ref()) {
            let counts = kind != NotificationType::Mention
                || created.get(&user).is_some_and(|c| mention_counts(*c, at));
            if counts {
                add(&user, kind, author, Some(id), at);
            }
        }
        authors.insert(id, author.to_owned());
        Ok(())
    })
    .await?;
    each(store, "likes", doc! { "_id": 1, "createdAt": 1 }, |like| {
        let key = like.get_document("_id").map_err(|e| {
            crate::store::StoreError::Backend(anyhow::anyhow!("a like without its key: {e}"))
        })?;
        let (user, post) = (key.get_str("u").unwrap_or_default(), post_id(key.get("p"))?);
        if let Some(author) = authors.get(&post)
            && notifies(author, user)
        {
            add(
                author,
                NotificationType::Like,
                user,
                Some(post),
                int(&like, "createdAt"),
            );
        }
        Ok(())
    })
    .await?;
    each(
        store,
        crate::domain::REPOSTS,
        doc! { "_id": 1, "user": 1, "post": 1 },
        |repost| {
            let (id, post) = (post_id(repost.get("_id"))?, post_id(repost.get("post"))?);
            let user = repost.get_str("user").unwrap_or_default();
            if let Some(author) = authors.get(&post)
                && notifies(author, user)
            {
                let at = id.timestamp_ms();
                add(author, NotificationType::Repost, user, Some(post), at);
            }
            Ok(())
        },
    )
    .await?;
    drop(authors);
    let (mut written, mut batch): (u64, Vec<Notification>) = (0, Vec::new());
    for (user, user_causes) in causes {
        batch.extend(rebuilt_for_user(&user, user_causes));
        if batch.len() >= INSERT_BATCH {
            written += batch.len() as u64;
            store.insert_rebuilt(&std::mem::take(&mut batch)).await?;
        }
    }
    written += batch.len() as u64;
    store.insert_rebuilt(&batch).await?;
    Ok(written)
}
