//! Hashtag counts on MongoDB: `tag_counts {_id: tag, total, w, h: {"<hour>": n}, last}`,
//! one document per tag, indexed on `last` (the newest hour with posts) for trends.
//!
//! There is no transaction across tags, so each tag is its own compare-and-set: read the
//! touched tags (one query), compute each one's new state from the batch's changes after
//! its `w` (the last event applied to it), and write it only if `w` is still what was
//! read; a lost race re-reads that tag. A replay after a crash, or a stale holder,
//! therefore never applies an event to a tag twice. One update per touched tag.

use std::collections::{BTreeMap, HashMap};

use async_trait::async_trait;
use futures::TryStreamExt;
use mongodb::bson::{Bson, Document, doc};

use super::{MongoStore, all, db_error, index, int, post_id};
use crate::domain::{EventId, Fence, hashtags};
use crate::store::trends::{HOUR_MS, TagChange, TagCounts, TrendStore};
use crate::store::{StoreError, StoreResult};

pub(super) const TAGS: &str = "tag_counts";

pub(super) fn indexes() -> Vec<super::IndexSpec> {
    vec![(TAGS, index(doc! { "last": 1 }, false))]
}

/// A tag's state as stored.
#[derive(Default, Clone)]
struct State {
    total: i64,
    w: i64,
    hours: BTreeMap<i64, i64>,
}

fn state_from(doc: &Document) -> State {
    let hours = doc
        .get_document("h")
        .map(|h| {
            h.iter()
                .filter_map(|(k, v)| {
                    let n = match v {
                        Bson::Int32(n) => i64::from(*n),
                        Bson::Int64(n) => *n,
                        _ => return None,
                    };
                    Some((k.parse().ok()?, n))
                })
                .collect()
        })
        .unwrap_or_default();
    State {
        total: int(doc, "total"),
        w: int(doc, "w"),
        hours,
    }
}

fn state_doc(state: &State, from_hour: i64) -> Document {
    let mut hours = Document::new();
    for (hour, n) in state
        .hours
        .iter()
        .filter(|(h, n)| **h >= from_hour && **n > 0)
    {
        hours.insert(hour.to_string(), *n);
    }
    let last = state
        .hours
        .iter()
        .filter(|(_, n)| **n > 0)
        .map(|(h, _)| *h)
        .max()
        .unwrap_or(i64::MIN);
    doc! { "total": state.total.max(0), "w": state.w, "h": hours, "last": last }
}

/// Tag counts from posts, for a rebuild or a bulk load.
#[derive(Default)]
pub(super) struct Tally(BTreeMap<String, State>);

impl Tally {
    /// Counts the tags of a `content` document (`_id` and `text` at least).
    pub(super) fn add(&mut self, post: &Document) -> StoreResult<()> {
        let id = post_id(post.get("_id"))?;
        let hour = id.timestamp_ms().div_euclid(HOUR_MS);
        for tag in hashtags(post.get_str("text").unwrap_or_default()) {
            let state = self.0.entry(tag).or_default();
            state.total += 1;
            *state.hours.entry(hour).or_default() += 1;
        }
        Ok(())
    }
}

impl MongoStore {
    /// Replaces every counted tag with `w` at `watermark`, and zeroes the tags no post
    /// carries any more. Returns how many tags were counted.
    pub(super) async fn write_tally(
        &self,
        tally: Tally,
        watermark: i64,
        from_hour: i64,
    ) -> StoreResult<u64> {
        let counted = tally.0.len() as u64;
        for (tag, mut state) in tally.0 {
            state.w = watermark;
            let mut doc = state_doc(&state, from_hour);
            doc.insert("_id", &tag);
            self.collection(TAGS)
                .replace_one(doc! { "_id": &tag }, doc)
                .upsert(true)
                .await
                .map_err(db_error)?;
        }
        self.collection(TAGS)
            .update_many(
                doc! { "w": { "$lt": watermark } },
                doc! { "$set": state_doc(&State { w: watermark, ..State::default() }, from_hour) },
            )
            .await
            .map_err(db_error)?;
        Ok(counted)
    }

    async fn tag_states(&self, tags: &[String]) -> StoreResult<HashMap<String, State>> {
        let docs = all(self.collection(TAGS).find(doc! { "_id": { "$in": tags } })).await?;
        Ok(docs
            .iter()
            .filter_map(|d| Some((d.get_str("_id").ok()?.to_owned(), state_from(d))))
            .collect())
    }

    /// Writes `next` over `seen` (compare-and-set on `w`); `false` when another writer
    /// moved the tag first.
    async fn swap_tag(
        &self,
        tag: &str,
        seen: Option<&State>,
        next: &State,
        from_hour: i64,
    ) -> StoreResult<bool> {
        let set = doc! { "$set": state_doc(next, from_hour) };
        let result = match seen {
            Some(seen) => {
                self.collection(TAGS)
                    .update_one(doc! { "_id": tag, "w": seen.w }, set)
                    .await
            }
            None => {
                return super::insert_new(
                    &self.collection(TAGS),
                    {
                        let mut doc = state_doc(next, from_hour);
                        doc.insert("_id", tag);
                        doc
                    },
                    &[],
                )
                .await;
            }
        };
        Ok(result.map_err(db_error)?.matched_count == 1)
    }
}

fn advance(mut state: State, changes: &[&TagChange], through: i64) -> State {
    for change in changes.iter().filter(|c| c.event.0 as i64 > state.w) {
        state.total += change.delta;
        *state.hours.entry(change.hour).or_default() += change.delta;
    }
    state.w = state.w.max(through);
    state
}

#[async_trait]
impl TrendStore for MongoStore {
    async fn apply_tags(
        &self,
        fence: &Fence,
        through: EventId,
        changes: &[TagChange],
        from_hour: i64,
    ) -> StoreResult<()> {
        let held =
            doc! { "_id": &fence.lease, "holder": &fence.holder, "version": fence.version as i64 };
        if !super::exists(&self.collection(super::leases::LEASES), held).await? {
            return Err(StoreError::Fenced(fence.lease.clone()));
        }
        let mut by_tag: BTreeMap<&str, Vec<&TagChange>> = BTreeMap::new();
        for change in changes {
            by_tag.entry(&change.tag).or_default().push(change);
        }
        let tags: Vec<String> = by_tag.keys().map(|t| (*t).to_owned()).collect();
        let mut states = self.tag_states(&tags).await?;
        let through = through.0 as i64;
        for (tag, changes) in by_tag {
            let mut seen = states.remove(tag);
            // A lost compare-and-set means another writer moved this tag: re-read it.
            for _ in 0..16 {
                let next = advance(seen.clone().unwrap_or_default(), &changes, through);
                if self.swap_tag(tag, seen.as_ref(), &next, from_hour).await? {
                    break;
                }
                seen = self.tag_states(&[tag.to_owned()]).await?.remove(tag);
            }
        }
        Ok(())
    }

    /// The posts are read in one snapshot session; its cluster time is the watermark
    /// (event ids are change cluster times). Every tag is then replaced with `w` at the
    /// watermark and tags no post carries any more are zeroed, so a rebuild cut short
    /// leaves each tag either rebuilt or as it was, both consistent with its own `w`.
    async fn rebuild_tags(&self, fence: &Fence, from_hour: i64) -> StoreResult<EventId> {
        let mut session = self
            .db
            .client()
            .start_session()
            .snapshot(true)
            .await
            .map_err(db_error)?;
        let mut cursor = self
            .content_coll()
            .find(doc! {})
            .projection(doc! { "_id": 1, "text": 1 })
            .session(&mut session)
            .await
            .map_err(db_error)?;
        let mut tally = Tally::default();
        while let Some(doc) = cursor
            .next(&mut session)
            .await
            .transpose()
            .map_err(db_error)?
        {
            tally.add(&doc)?;
        }
        let time = session.snapshot_time().ok_or_else(|| {
            StoreError::Backend(anyhow::anyhow!(
                "the snapshot read reported no cluster time"
            ))
        })?;
        let watermark = (i64::from(time.time) << 32) | i64::from(time.increment);
        let held =
            doc! { "_id": &fence.lease, "holder": &fence.holder, "version": fence.version as i64 };
        if !super::exists(&self.collection(super::leases::LEASES), held).await? {
            return Err(StoreError::Fenced(fence.lease.clone()));
        }
        self.write_tally(tally, watermark, from_hour).await?;
        Ok(EventId(watermark as u64))
    }

    async fn tag_counts(&self, tag: &str, from_hour: i64) -> StoreResult<TagCounts> {
        let state = self
            .tag_states(&[tag.to_owned()])
            .await?
            .remove(tag)
            .unwrap_or_default();
        Ok(TagCounts {
            tag: tag.to_owned(),
            total: state.total.max(0) as u64,
            hours: state
                .hours
                .into_iter()
                .filter(|(h, n)| *h >= from_hour && *n > 0)
                .map(|(h, n)| (h, n as u64))
                .collect(),
        })
    }

    async fn top_tags(&self, from_hour: i64, limit: usize) -> StoreResult<Vec<(String, u64)>> {
        let docs: Vec<Document> = self
            .collection(TAGS)
            .find(doc! { "last": { "$gte": from_hour } })
            .projection(doc! { "h": 1 })
            .await
            .map_err(db_error)?
            .try_collect()
            .await
            .map_err(db_error)?;
        let mut tags: Vec<(String, u64)> = docs
            .iter()
            .filter_map(|d| {
                let tag = d.get_str("_id").ok()?.to_owned();
                let posts: i64 = state_from(d)
                    .hours
                    .iter()
                    .filter(|(h, _)| **h >= from_hour)
                    .map(|(_, n)| *n)
                    .sum();
                (posts > 0).then_some((tag, posts as u64))
            })
            .collect();
        tags.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        tags.truncate(limit);
        Ok(tags)
    }
}
