//! A timeline entry as it is embedded in a bucket or cache document's `c` array, and
//! back.

use mongodb::bson::{Document, doc};

use crate::domain::{NameStamp, PostId, ReplyTo, TimelineEntry};
use crate::store::StoreResult;
use crate::store::mongo::{int, oid, post_id};

/// `{_id, a, m, n, v}` when embedding (`n`, `v`: the author's name stamp), `{_id, a}`
/// when linking; a reply's entry adds `r`, the author of the post it answers; a
/// repost's entry `o` and `oa`, its original post and that post's author.
pub(super) fn entry_doc(entry: &TimelineEntry) -> Document {
    let mut doc = doc! { "_id": oid(entry.id), "a": &entry.author };
    if let Some(text) = &entry.text {
        doc.insert("m", text);
    }
    if let Some(name) = &entry.name {
        doc.insert("n", &name.display_name);
        doc.insert("v", name.version as i64);
    }
    if let Some(parent_author) = &entry.reply_to_author {
        doc.insert("r", parent_author);
    }
    if let Some(original) = &entry.repost_of {
        doc.insert("o", oid(original.post));
        doc.insert("oa", &original.author);
    }
    doc
}

pub(super) fn entries_from(doc: &Document) -> StoreResult<Vec<TimelineEntry>> {
    let mut entries = Vec::new();
    for item in doc.get_array("c").map(|a| a.as_slice()).unwrap_or_default() {
        let Some(item) = item.as_document() else {
            continue;
        };
        entries.push(TimelineEntry {
            id: post_id(item.get("_id"))?,
            author: item.get_str("a").unwrap_or_default().to_owned(),
            text: item.get_str("m").ok().map(str::to_owned),
            name: item.get_str("n").ok().map(|name| NameStamp {
                display_name: name.to_owned(),
                version: int(item, "v").max(0) as u64,
            }),
            reply_to_author: item.get_str("r").ok().map(str::to_owned),
            repost_of: match item.get("o") {
                Some(original) => Some(ReplyTo {
                    post: post_id(Some(original))?,
                    author: item.get_str("oa").unwrap_or_default().to_owned(),
                }),
                None => None,
            },
        });
    }
    entries.sort_unstable_by_key(|e| std::cmp::Reverse(e.id));
    entries.dedup_by_key(|e| e.id);
    Ok(entries)
}

/// The newest `limit` entries below `before` of distinct entries sorted newest first.
pub(super) fn newest_below(
    mut entries: Vec<TimelineEntry>,
    before: Option<PostId>,
    limit: usize,
) -> Vec<TimelineEntry> {
    if let Some(before) = before {
        entries.retain(|e| e.id < before);
    }
    entries.truncate(limit);
    entries
}
