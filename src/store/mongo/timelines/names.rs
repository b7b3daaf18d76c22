//! What serving a cache and renaming authors need on MongoDB: the cache as its owner
//! may be served it, and name stamps (`n`, `v` in an entry) replaced only by newer ones.
//! `renames` `{_id: user, v}` records how far each author's name has been propagated.

use std::collections::{HashMap, HashSet};

use mongodb::bson::{Document, doc};

use super::entries_from;
use crate::domain::{BucketKind, NameStamp, PostId, TimelineKind};
use crate::store::mongo::{MongoStore, all, db_error, int};
use crate::store::timelines::CacheView;
use crate::store::{ContentStore, RepostStore, StoreResult};

const RENAMES: &str = "renames";

impl MongoStore {
    /// The cache document, then the owner's follow edges to the entries' authors and
    /// the entries' posts in the id index, both at once: two round trips.
    pub(super) async fn cache_view(
        &self,
        user: &str,
        before: Option<PostId>,
        limit: usize,
    ) -> StoreResult<Option<CacheView>> {
        let found = self
            .cache_coll()
            .find_one(doc! { "_id": user })
            .await
            .map_err(db_error)?;
        let Some(doc) = found else {
            return Ok(None);
        };
        let mut entries = entries_from(&doc)?;
        let oldest = entries.last().map(|e| e.id);
        if let Some(before) = before {
            entries.retain(|e| e.id < before);
        }
        let mut authors: Vec<String> = entries
            .iter()
            .filter(|e| e.author != user)
            .map(|e| e.author.clone())
            .collect();
        authors.sort_unstable();
        authors.dedup();
        // Repost entries stand while their repost does (a third lookup, only for a page
        // that holds some).
        let ids: Vec<PostId> = entries
            .iter()
            .filter(|e| !e.is_repost())
            .map(|e| e.id)
            .collect();
        let repost_ids: Vec<PostId> = entries
            .iter()
            .filter(|e| e.is_repost())
            .map(|e| e.id)
            .collect();
        let standing = async {
            if repost_ids.is_empty() {
                return Ok(Vec::new());
            }
            self.reposts_by_ids(&repost_ids).await
        };
        let mut stamped: Vec<String> = entries
            .iter()
            .filter(|e| e.name.is_some())
            .map(|e| e.author.clone())
            .collect();
        stamped.sort_unstable();
        stamped.dedup();
        let (followed, existing, names, standing) = futures::try_join!(
            self.followed_among(user, &authors),
            self.existing_posts(&ids, &[]),
            self.name_stamps(&stamped),
            standing
        )?;
        let followed: HashSet<String> = followed.into_iter().collect();
        let mut existing: HashSet<PostId> = existing.into_iter().collect();
        existing.extend(standing.into_iter().map(|r| r.id));
        entries.retain(|e| {
            existing.contains(&e.id) && (e.author == user || followed.contains(&e.author))
        });
        entries.truncate(limit);
        for entry in &mut entries {
            let current = names.get(&entry.author);
            if let (Some(stamp), Some(current)) = (&mut entry.name, current)
                && current.version > stamp.version
            {
                *stamp = current.clone();
            }
        }
        Ok(Some(CacheView {
            ready: doc.get_bool("ready").unwrap_or(false),
            started_at_ms: int(&doc, "started"),
            complete: doc.get_bool("complete").unwrap_or(false),
            entries,
            oldest,
            version: None,
            read_ms: int(&doc, "read"),
        }))
    }

    /// The profiles' name stamps of `authors`, in the same round trip as a cache page's
    /// other checks: an embedded stamp older than its author's profile (one a crashed
    /// writer left behind a rename's propagation) is served as the profile's name.
    pub(in crate::store::mongo) async fn name_stamps(
        &self,
        authors: &[String],
    ) -> StoreResult<HashMap<String, NameStamp>> {
        let users = self.users_among(authors).await?;
        Ok(users
            .iter()
            .map(|u| (u.id.clone(), u.name_stamp()))
            .collect())
    }

    /// One `updateMany` per call: the documents of `users` holding a stale stamp of
    /// `author`, each entry picked by an array filter.
    pub(super) async fn stamp_author(
        &self,
        kind: TimelineKind,
        users: &[String],
        author: &str,
        name: &NameStamp,
    ) -> StoreResult<()> {
        if users.is_empty() {
            return Ok(());
        }
        let version = name.version as i64;
        let (coll, owner) = match kind {
            TimelineKind::Buckets(BucketKind::Timed) => {
                (self.bucket_coll(BucketKind::Timed), "_id.u")
            }
            TimelineKind::Buckets(BucketKind::Sized) => (self.bucket_coll(BucketKind::Sized), "u"),
            TimelineKind::Cache => (self.cache_coll(), "_id"),
        };
        // Missing (`$not $gte`) or older stamps of embedded entries.
        let stale = |prefix: &str| -> Document {
            doc! {
                format!("{prefix}a"): author,
                format!("{prefix}m"): { "$exists": true },
                format!("{prefix}v"): { "$not": { "$gte": version } },
            }
        };
        coll.update_many(
            doc! { owner: { "$in": users }, "c": { "$elemMatch": stale("") } },
            doc! { "$set": { "c.$[e].n": &name.display_name, "c.$[e].v": version } },
        )
        .array_filters(vec![stale("e.")])
        .await
        .map_err(db_error)?;
        Ok(())
    }

    pub(super) async fn renamed_versions(
        &self,
        authors: &[String],
    ) -> StoreResult<Vec<(String, u64)>> {
        if authors.is_empty() {
            return Ok(Vec::new());
        }
        let docs = all(self
            .collection(RENAMES)
            .find(doc! { "_id": { "$in": authors } }))
        .await?;
        Ok(docs
            .iter()
            .filter_map(|d| {
                let user = d.get_str("_id").ok()?.to_owned();
                Some((user, int(d, "v").max(0) as u64))
            })
            .collect())
    }

    /// `$max`, so the record never goes back.
    pub(super) async fn mark_renamed_version(&self, author: &str, version: u64) -> StoreResult<()> {
        self.collection(RENAMES)
            .update_one(
                doc! { "_id": author },
                doc! { "$max": { "v": version as i64 } },
            )
            .upsert(true)
            .await
            .map_err(db_error)?;
        Ok(())
    }
}
