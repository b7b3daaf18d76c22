//! A bulk load's buckets on MongoDB: every user's timeline of the configured bucket kind
//! materialised from their own and their followees' posts and reposts (each repost
//! shaped as a post of its reposter's, carrying its original), laid out as pushes in id
//! order would lay it out, and inserted in batches.

use std::collections::HashMap;

use mongodb::bson::{Bson, Document, doc, oid::ObjectId};

use super::{WRITE_BATCH, insert_unordered};
use crate::domain::{BucketKind, PostId};
use crate::store::StoreResult;
use crate::store::bulk::TimelineLayout;
use crate::store::mongo::{MongoStore, all, db_error, int, oid, post_id};

/// Posts per user in one `$in` read of the content when materialising buckets.
const AUTHORS_PER_READ: usize = 100;

/// A timeline entry as `timelines.rs` stores it: `{_id, a, m, n, v}` embedded, `{_id,
/// a}` linked.
fn entry(post: &Document, names: &HashMap<String, (String, i64)>, embed: bool) -> Document {
    let author = post.get_str("author").unwrap_or_default();
    let mut entry = doc! { "_id": post.get("_id").cloned().unwrap_or(Bson::Null), "a": author };
    if embed {
        entry.insert("m", post.get_str("text").unwrap_or_default());
        if let Some((name, version)) = names.get(author) {
            entry.insert("n", name);
            entry.insert("v", *version);
        }
    }
    if let Ok(parent_author) = post
        .get_document("reply_to")
        .and_then(|r| r.get_str("author"))
    {
        entry.insert("r", parent_author);
    }
    // A repost, as `repost_as_post` shapes it: its original's id and author.
    if let Ok(original) = post.get_document("repost_of") {
        entry.insert("o", original.get("post").cloned().unwrap_or(Bson::Null));
        entry.insert("oa", original.get_str("author").unwrap_or_default());
    }
    entry
}

/// The reposts by `authors`, each shaped as a post of its reposter's under the
/// repost's id, carrying its original's text and `repost_of`; reposts whose original
/// is gone are left out.
async fn reposts_as_posts(store: &MongoStore, authors: &[&str]) -> StoreResult<Vec<Document>> {
    let mut reposts = Vec::new();
    for chunk in authors.chunks(AUTHORS_PER_READ) {
        reposts.extend(
            all(store
                .collection(crate::domain::REPOSTS)
                .find(doc! { "user": { "$in": chunk } }))
            .await?,
        );
    }
    let originals: Vec<Bson> = reposts
        .iter()
        .filter_map(|r| r.get("post").cloned())
        .collect();
    let mut texts: HashMap<PostId, String> = HashMap::new();
    for chunk in originals.chunks(WRITE_BATCH) {
        let found = all(store
            .content_coll()
            .find(doc! { "_id": { "$in": chunk.to_vec() } })
            .projection(doc! { "text": 1 }))
        .await?;
        for post in &found {
            texts.insert(
                post_id(post.get("_id"))?,
                post.get_str("text").unwrap_or_default().to_owned(),
            );
        }
    }
    let mut shaped = Vec::with_capacity(reposts.len());
    for repost in &reposts {
        let Some(text) = texts.get(&post_id(repost.get("post"))?) else {
            continue;
        };
        shaped.push(doc! {
            "_id": repost.get("_id").cloned().unwrap_or(Bson::Null),
            "author": repost.get_str("user").unwrap_or_default(),
            "text": text,
            "repost_of": {
                "post": repost.get("post").cloned().unwrap_or(Bson::Null),
                "author": repost.get_str("post_author").unwrap_or_default(),
            },
        });
    }
    Ok(shaped)
}

/// A bucket document being filled: its group key, entries and bounds.
struct Open {
    key: (i64, i64),
    entries: Vec<Bson>,
    mn: PostId,
    mx: PostId,
    /// An upper bound of the ids in the group's older documents.
    pmx: PostId,
}

/// Materialises every user's buckets of `kind`; returns the entries written.
pub(super) async fn buckets(
    store: &MongoStore,
    kind: BucketKind,
    feed: &TimelineLayout,
) -> StoreResult<u64> {
    let coll = store.bucket_coll(kind);
    coll.delete_many(doc! {}).await.map_err(db_error)?;
    let users = all(store.users_coll().find(doc! {}).sort(doc! { "_id": 1 })).await?;
    let names: HashMap<String, (String, i64)> = users
        .iter()
        .filter_map(|u| {
            let id = u.get_str("_id").ok()?.to_owned();
            let name = u.get_str("display_name").unwrap_or_default().to_owned();
            Some((id, (name, int(u, "version"))))
        })
        .collect();
    let follows = store.collection(crate::store::mongo::graph::FOLLOWS);
    let (size, part_max) = (
        feed.bucket_size.max(1) as usize,
        feed.timed_bucket_max_entries.max(1) as usize,
    );
    let (mut written, mut pending) = (0, Vec::new());
    for user in names.keys() {
        let edges = all(follows
            .find(doc! { "from": user })
            .projection(doc! { "to": 1 }))
        .await?;
        let mut authors: Vec<&str> = edges.iter().filter_map(|e| e.get_str("to").ok()).collect();
        authors.push(user);
        let mut posts = Vec::new();
        for chunk in authors.chunks(AUTHORS_PER_READ) {
            posts.extend(
                all(store
                    .content_coll()
                    .find(doc! { "author": { "$in": chunk } }))
                .await?,
            );
        }
        posts.extend(reposts_as_posts(store, &authors).await?);
        posts.sort_by_key(|p| post_id(p.get("_id")).unwrap_or(PostId::MIN));
        // Group `(period, part)` for timed buckets, `(0, sequence)` for sized ones; a
        // group is a period, or all sized buckets.
        let (mut open, mut period, mut in_period): (Option<Open>, i64, usize) = (None, i64::MIN, 0);
        for (index, post) in posts.iter().enumerate() {
            let id = post_id(post.get("_id"))?;
            let key = match kind {
                BucketKind::Sized => (0, (index / size) as i64),
                BucketKind::Timed => {
                    let this = id.timestamp_ms().div_euclid(feed.bucket_span_ms);
                    if this != period {
                        (period, in_period) = (this, 0);
                    }
                    in_period += 1;
                    (this, ((in_period - 1) / part_max) as i64)
                }
            };
            let mut pmx = PostId::MIN;
            if open.as_ref().is_some_and(|o| o.key != key) {
                let done = open.take().expect("checked");
                if done.key.0 == key.0 {
                    pmx = done.pmx.max(done.mx);
                }
                pending.push(bucket_doc(kind, user, done));
            }
            let open = open.get_or_insert_with(|| Open {
                key,
                entries: Vec::new(),
                mn: id,
                mx: id,
                pmx,
            });
            open.entries
                .push(Bson::Document(entry(post, &names, feed.embed_content)));
            open.mx = id;
            written += 1;
        }
        if let Some(done) = open {
            pending.push(bucket_doc(kind, user, done));
        }
        if pending.len() >= WRITE_BATCH / 10 {
            insert_unordered(&coll, std::mem::take(&mut pending)).await?;
        }
    }
    insert_unordered(&coll, pending).await?;
    Ok(written)
}

fn bucket_doc(kind: BucketKind, user: &str, open: Open) -> Document {
    let mut bucket = match kind {
        BucketKind::Sized => doc! { "_id": ObjectId::new(), "u": user, "s": open.key.1 },
        BucketKind::Timed => doc! { "_id": { "u": user, "t": open.key.0, "p": open.key.1 } },
    };
    bucket.insert("n", open.entries.len() as i64);
    bucket.insert("mn", oid(open.mn));
    bucket.insert("mx", oid(open.mx));
    bucket.insert("pmx", oid(open.pmx));
    bucket.insert("c", open.entries);
    bucket
}
