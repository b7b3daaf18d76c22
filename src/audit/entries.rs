//! Every field of each timeline entry against its post and its author's profile, as
//! [`Sources::entry_faults`] defines them: the author, the embedded text and the name
//! stamp. The profiles are read after the entries, so a stamp newer than its profile is
//! never a rename that landed between the two reads; a name that trails the profile is
//! a rename on its way (see ARCHITECTURE.md, "Pending renames"), which the eventual
//! window tells from a wrong one: once the timelines worker has applied every change
//! before it was seen, a name still trailing is wrong.

use std::collections::BTreeMap;

use super::{Finding, Fix, Kind, Settings, Tally, Unit};
use crate::derived::Sources;
use crate::domain::{BucketKind, PostId, TimelineEntry};
use crate::store::{Store, StoreResult};

/// Authors whose profiles are read at once.
const AUTHORS_PER_READ: usize = 500;

/// Checks `entries`, `owner`'s timeline (a cache, or buckets of `kind`), whose posts `sources`
/// holds where they exist. A cache that holds a wrong entry is dropped by the repair (its owner's
/// next read builds it again from the sources); a bucketed timeline's wrong entry is delivered
/// again, made anew from the post and its author.
pub(super) async fn check(
    store: &Store,
    settings: &Settings,
    owner: &str,
    kind: Option<BucketKind>,
    entries: &BTreeMap<PostId, TimelineEntry>,
    sources: &mut Sources,
    tally: &mut Tally,
) -> StoreResult<()> {
    let mut stamped: Vec<String> = entries
        .values()
        .filter(|e| e.name.is_some())
        .filter_map(|e| sources.posts.get(&e.id))
        .map(|p| p.author.clone())
        .collect();
    stamped.sort_unstable();
    stamped.dedup();
    for chunk in stamped.chunks(AUTHORS_PER_READ) {
        for author in store.users.authors(owner, chunk).await? {
            sources.versions.insert(author.id.clone(), author.version);
            sources.users.insert(author.id, author.display_name);
        }
    }
    let what = super::users::what(kind);
    for entry in entries.values().rev() {
        let faults = sources.entry_faults(entry);
        if faults.is_empty() {
            continue;
        }
        let faults: Vec<String> = faults.iter().map(ToString::to_string).collect();
        let detail = format!(
            "{owner}'s {what} entry {} by {} {}",
            entry.id,
            entry.author,
            faults.join("; ")
        );
        let fix = match kind {
            None => Fix::DropCache(owner.to_owned()),
            Some(_) => Fix::Redeliver(entry.id),
        };
        let finding = Finding {
            kind: Kind::Timelines,
            unit: Unit::User(owner.to_owned()),
            detail,
            fix,
        };
        tally.found(finding, settings.keep);
    }
    Ok(())
}
