//! Pushes into buckets. Sized buckets and the parts of a timed period are the same
//! thing: a group of documents numbered in sequence, of which only the newest is written
//! to, each holding at most a fixed number of entries.

use mongodb::Collection;
use std::collections::{HashMap, HashSet};
use std::sync::LazyLock;

use mongodb::bson::{Bson, Document, doc, oid::ObjectId};

use super::entry_doc;
use crate::domain::{BucketKind, PostId, TimelineEntry};
use crate::store::mongo::{MongoStore, all, db_error, int, is_duplicate_key, oid, post_id};
use crate::store::{StoreError, StoreResult};

/// Attempts in a row that make no progress before a push gives up; each one means that
/// another writer made progress, so this is only reached under pathological contention.
const MAX_STALLS: usize = 64;

/// The buckets a push goes to.
#[derive(Clone, Copy)]
pub(super) enum Group<'a> {
    /// `{_id: ObjectId, u, s, ...}`, numbered by `s` under the unique `{u, s}` index.
    Sized { user: &'a str },
    /// `{_id: {u, t, p}, ...}`: the parts of period `t`, numbered by `p`. A document
    /// `{_id: {u, t}}` written before periods were split is read but never written.
    Timed { user: &'a str, period: i64 },
}

impl Group<'_> {
    pub(super) fn kind(&self) -> BucketKind {
        match self {
            Group::Sized { .. } => BucketKind::Sized,
            Group::Timed { .. } => BucketKind::Timed,
        }
    }

    /// Every document of the group.
    fn filter(&self) -> Document {
        match *self {
            Group::Sized { user } => doc! { "u": user },
            Group::Timed { user, period } => doc! { "_id.u": user, "_id.t": period },
        }
    }

    /// Newest first, through `{u, s}` or `{"_id.u", "_id.t", "_id.p"}`.
    fn newest_first(&self) -> Document {
        match self {
            Group::Sized { .. } => doc! { "s": -1 },
            Group::Timed { .. } => doc! { "_id.p": -1 },
        }
    }

    /// The document's number in the group; `None` for an old unsplit period.
    fn sequence(&self, doc: &Document) -> Option<i64> {
        match self {
            Group::Sized { .. } => Some(int(doc, "s")),
            Group::Timed { .. } => doc
                .get_document("_id")
                .ok()
                .filter(|id| id.contains_key("p"))
                .map(|id| int(id, "p")),
        }
    }

    /// The identifying fields of document number `seq`.
    fn identity(&self, seq: i64) -> Document {
        match *self {
            Group::Sized { user } => doc! { "_id": ObjectId::new(), "u": user, "s": seq },
            Group::Timed { user, period } => doc! { "_id": { "u": user, "t": period, "p": seq } },
        }
    }
}

/// What a push needs to know of the newest document of a group.
pub(super) struct Head {
    id: Bson,
    seq: Option<i64>,
    n: i64,
    mx: PostId,
    /// `pmx`: an upper bound of the ids in every older document of the group; `None`
    /// on documents written before it was kept.
    pmx: Option<PostId>,
}

/// The fields a [`Head`] is read from.
static HEAD_FIELDS: LazyLock<Document> =
    LazyLock::new(|| doc! { "_id": 1, "s": 1, "n": 1, "mx": 1, "pmx": 1 });

impl Head {
    fn from(group: Group<'_>, doc: &Document) -> StoreResult<Head> {
        Ok(Head {
            seq: group.sequence(doc),
            n: int(doc, "n"),
            mx: post_id(doc.get("mx"))?,
            pmx: doc.get("pmx").map(|v| post_id(Some(v))).transpose()?,
            id: doc.get("_id").cloned().unwrap_or(Bson::Null),
        })
    }
}

fn bounds(entries: &[TimelineEntry]) -> (ObjectId, ObjectId) {
    let min = entries.iter().map(|e| e.id).min().unwrap_or(PostId::MIN);
    let max = entries.iter().map(|e| e.id).max().unwrap_or(PostId::MIN);
    (oid(min), oid(max))
}

fn ids(entries: &[TimelineEntry]) -> Vec<ObjectId> {
    entries.iter().map(|e| oid(e.id)).collect()
}

/// The post ids held in the `c` arrays of `docs`.
pub(super) fn held_ids(docs: &[Document]) -> Vec<PostId> {
    docs.iter()
        .flat_map(|d| d.get_array("c").map(|a| a.as_slice()).unwrap_or_default())
        .filter_map(|item| item.as_document().and_then(|e| post_id(e.get("_id")).ok()))
        .collect()
}

impl MongoStore {
    /// Appends `entries` in order to `group`, `cap` entries per document at most.
    ///
    /// Race-free because every write is one atomic single-document operation:
    /// - No document passes `cap`: an update that adds `k` entries only matches while `n
    ///   <= cap - k`, and a new document starts with at most `cap`.
    /// - Documents fill in order and only the newest is written to: an update targets the
    ///   exact document read as the newest; document `s + 1` is inserted only after `s`
    ///   was read full, and since `n` never falls, a full document is never written again.
    ///   Two writers that both saw `s` full cannot both create `s + 1`: the unique `{u,
    ///   s}` index (the `_id` for periods) gives the loser 11000, and it reads again.
    /// - Nothing is lost: an entry leaves `pending` only once a write that carried it
    ///   succeeded, or once it was found in the group.
    /// - Nothing is duplicated: an update carries only entries absent from its document
    ///   (`c._id` `$nin`), a new document is new. Older documents are frozen (full) before
    ///   the newest is read, and `pmx`, the largest `mx` of all of them, is fixed when a
    ///   document is created; an entry above both `mx` and `pmx` of the newest is in none
    ///   of them, so a fresh post costs no lookup. Otherwise one lookup of the group's
    ///   documents whose `mx` reaches the entry finds it, after the read of the newest.
    ///
    /// A fresh post costs two operations per user: read the newest `{s, n}` through the
    /// group's index (one document examined), and update that document by `_id`. A
    /// caller that read the newest document already passes it as `known` (`Some(None)`:
    /// the group is empty); any earlier read serves, as the argument above shows.
    pub(super) async fn push_group(
        &self,
        group: Group<'_>,
        entries: &[TimelineEntry],
        cap: u32,
        mut known: Option<Option<Head>>,
    ) -> StoreResult<()> {
        let coll = self.bucket_coll(group.kind());
        let cap = i64::from(cap.max(1));
        let mut seen = HashSet::with_capacity(entries.len());
        let mut pending: Vec<TimelineEntry> = entries
            .iter()
            .filter(|e| seen.insert(e.id))
            .cloned()
            .collect();
        let mut stalls = 0;
        while !pending.is_empty() {
            if stalls >= MAX_STALLS {
                return Err(StoreError::Backend(anyhow::anyhow!(
                    "{:?} bucket push did not settle after {MAX_STALLS} attempts",
                    group.kind()
                )));
            }
            let head = match known.take() {
                Some(head) => head,
                None => self.newest(&coll, group).await?,
            };
            let lowest = pending.iter().map(|e| e.id).min().unwrap_or(PostId::MIN);
            if head
                .as_ref()
                .is_some_and(|h| h.pmx.is_none_or(|pmx| lowest <= pmx.max(h.mx)))
            {
                let mut filter = group.filter();
                filter.insert("mx", doc! { "$gte": oid(lowest) });
                filter.insert("c._id", doc! { "$in": ids(&pending) });
                let docs = all(coll.find(filter).projection(doc! { "c._id": 1 })).await?;
                let held: HashSet<PostId> = held_ids(&docs).into_iter().collect();
                pending.retain(|e| !held.contains(&e.id));
                if pending.is_empty() {
                    break;
                }
            }
            let progressed = match head {
                Some(head) if head.seq.is_some() && head.n < cap => {
                    let take = pending.len().min((cap - head.n) as usize);
                    let chunk = &pending[..take];
                    let (mn, mx) = bounds(chunk);
                    let each: Vec<Document> = chunk.iter().map(entry_doc).collect();
                    let result = coll
                        .update_one(
                            doc! {
                                "_id": head.id,
                                "n": { "$lte": cap - take as i64 },
                                "c._id": { "$nin": ids(chunk) },
                            },
                            doc! {
                                "$push": { "c": { "$each": each } },
                                "$inc": { "n": take as i64 },
                                "$min": { "mn": mn },
                                "$max": { "mx": mx },
                            },
                        )
                        .await
                        .map_err(db_error)?;
                    let done = result.matched_count > 0;
                    if done {
                        pending.drain(..take);
                    }
                    done
                }
                head => {
                    let seq = head.as_ref().and_then(|h| h.seq).map_or(0, |s| s + 1);
                    let pmx = match &head {
                        None => PostId::MIN,
                        Some(Head {
                            pmx: Some(pmx), mx, ..
                        }) => (*pmx).max(*mx),
                        Some(_) => self.largest_mx(&coll, group).await?,
                    };
                    let take = pending.len().min(cap as usize);
                    let chunk = &pending[..take];
                    let (mn, mx) = bounds(chunk);
                    let mut bucket = group.identity(seq);
                    bucket.insert("n", take as i64);
                    bucket.insert("mn", mn);
                    bucket.insert("mx", mx);
                    bucket.insert("pmx", oid(pmx));
                    bucket.insert("c", chunk.iter().map(entry_doc).collect::<Vec<_>>());
                    match coll.insert_one(bucket).await {
                        Ok(_) => {
                            pending.drain(..take);
                            true
                        }
                        Err(error) if is_duplicate_key(&error) => false,
                        Err(error) => return Err(db_error(error)),
                    }
                }
            };
            stalls = if progressed { 0 } else { stalls + 1 };
        }
        Ok(())
    }

    async fn newest(
        &self,
        coll: &Collection<Document>,
        group: Group<'_>,
    ) -> StoreResult<Option<Head>> {
        let found = coll
            .find_one(group.filter())
            .sort(group.newest_first())
            .projection(HEAD_FIELDS.clone())
            .await
            .map_err(db_error)?;
        found.map(|doc| Head::from(group, &doc)).transpose()
    }

    /// The newest part of period `period` of each of `users`, in one query through the
    /// `{"_id.u", "_id.t", "_id.p"}` index: a timed fan-out then costs one update per
    /// user. Users without a part map to `None`.
    pub(super) async fn newest_parts(
        &self,
        users: &[String],
        period: i64,
    ) -> StoreResult<HashMap<String, Option<Head>>> {
        let mut heads: HashMap<String, Option<Head>> =
            users.iter().map(|u| (u.clone(), None)).collect();
        let docs = all(self
            .bucket_coll(BucketKind::Timed)
            .find(doc! { "_id.u": { "$in": users }, "_id.t": period })
            .projection(HEAD_FIELDS.clone()))
        .await?;
        for doc in &docs {
            let user = doc.get_document("_id").and_then(|id| id.get_str("u"));
            let Some(slot) = user.ok().and_then(|user| heads.get_mut(user)) else {
                continue;
            };
            let group = Group::Timed { user: "", period };
            let head = Head::from(group, doc)?;
            if slot.as_ref().is_none_or(|known| known.seq < head.seq) {
                *slot = Some(head);
            }
        }
        Ok(heads)
    }

    /// The largest `mx` in the group, for a document whose predecessor has no `pmx`.
    async fn largest_mx(
        &self,
        coll: &Collection<Document>,
        group: Group<'_>,
    ) -> StoreResult<PostId> {
        let found = coll
            .find_one(group.filter())
            .sort(doc! { "mx": -1 })
            .projection(doc! { "mx": 1 })
            .await
            .map_err(db_error)?;
        match found {
            Some(doc) => post_id(doc.get("mx")),
            None => Ok(PostId::MIN),
        }
    }
}
