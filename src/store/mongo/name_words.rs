//! The display-name word index on MongoDB: `name_words` `{_id: "<word>/<user>", w, u,
//! v}`, one document per distinct word of a user's name (`domain::name_words`), `v`
//! the user `version` whose name it was written from. `{w: 1, u: 1}` serves the account
//! search in (word, user) order, a separate collection so that no multikey sort is
//! involved; `{u: 1, w: 1}` finds a user's entries.
//!
//! Derived, not atomic with the name: the profile's write comes first, then
//! [`sync_user`] (by the request that wrote the name, and by the counters worker for
//! every user change it applies, and by the rebuild): each word of the name as read
//! is upserted with `$max` of its version, then the user's other entries are deleted
//! where their `v` is below it (the guard in the delete's filter, so a newer sync's
//! entries are never taken), then the version is read again and the sync run again if
//! it moved. A sync that read an older name and writes after a newer one's sync thus
//! either sees the newer version when it reads again, or wrote before the newer
//! name's sync read the entries. Reads check every hit against the profile.
//!
//! The rebuild (the counters worker's, and so the audit's repair) removes every entry of
//! the user that is not a word of the name it read, whatever its stamp: an entry wrongly
//! stamped with the current version or a later one is taken too. A newer name's entry
//! it takes is written again: the version read after the delete has moved, so the sync
//! runs again from the newer name; if it is still moving after the last attempt, the
//! rebuild ends with the request's guarded sync, which upserts the name it reads.

use std::future::IntoFuture;

use futures::{StreamExt, TryStreamExt};
use mongodb::bson::{Document, doc};
use mongodb::{Collection, Database, IndexModel};

use super::{all, db_error, index, int, is_duplicate_key};
use crate::domain::{name_words, word_prefix_end};
use crate::store::{NameWord, StoreResult};

pub(super) const NAME_WORDS: &str = "name_words";
const MIGRATIONS: &str = "migrations";
const MIGRATED: &str = "name_words";
/// Syncs of one user before a name that keeps changing is left to its next change.
const SYNC_ATTEMPTS: usize = 3;
/// Users synced at once by a rebuild, and read per page.
const IN_FLIGHT: usize = 8;
const PAGE: i64 = 500;

pub(super) fn indexes() -> Vec<(&'static str, IndexModel)> {
    vec![
        (NAME_WORDS, index(doc! { "w": 1, "u": 1 }, true)),
        (NAME_WORDS, index(doc! { "u": 1, "w": 1 }, false)),
    ]
}

fn coll(db: &Database) -> Collection<Document> {
    db.collection(NAME_WORDS)
}

fn entry_from(doc: &Document) -> NameWord {
    NameWord {
        word: doc.get_str("w").unwrap_or_default().to_owned(),
        user: doc.get_str("u").unwrap_or_default().to_owned(),
    }
}

/// The entry document's `_id`: no word or user id holds a `/`.
pub(super) fn entry_id(word: &str, user: &str) -> String {
    format!("{word}/{user}")
}

/// Up to `limit` entries whose word starts with `prefix`, strictly after `after`, by
/// `{w: 1, u: 1}`.
pub(super) async fn entries(
    db: &Database,
    prefix: &str,
    after: Option<&NameWord>,
    limit: usize,
) -> StoreResult<Vec<NameWord>> {
    let (from_word, from_user) = match after {
        Some(after) if after.word.as_str() >= prefix => (after.word.as_str(), after.user.as_str()),
        _ => (prefix, ""),
    };
    // Both branches stay below the prefix's end: a cursor past the range finds nothing.
    let end = word_prefix_end(prefix);
    let filter = doc! { "$or": [
        { "w": { "$eq": from_word, "$lt": &end }, "u": { "$gt": from_user } },
        { "w": { "$gt": from_word, "$lt": &end } },
    ] };
    let docs = all(coll(db)
        .find(filter)
        .sort(doc! { "w": 1, "u": 1 })
        .limit(i64::try_from(limit).unwrap_or(i64::MAX))
        .projection(doc! { "w": 1, "u": 1 }))
    .await?;
    Ok(docs.iter().map(entry_from).collect())
}

/// The entries held for `users`, in no order.
pub(super) async fn of_users(db: &Database, users: &[String]) -> StoreResult<Vec<NameWord>> {
    if users.is_empty() {
        return Ok(Vec::new());
    }
    let docs = all(coll(db)
        .find(doc! { "u": { "$in": users } })
        .projection(doc! { "w": 1, "u": 1 }))
    .await?;
    Ok(docs.iter().map(entry_from).collect())
}

/// The user's name and version as they stand, `None` for an unknown user.
async fn profile(db: &Database, user: &str) -> StoreResult<Option<(String, i64)>> {
    let found = db
        .collection::<Document>("users")
        .find_one(doc! { "_id": user })
        .projection(doc! { "display_name": 1, "version": 1 })
        .await
        .map_err(db_error)?;
    Ok(found.map(|d| {
        let name = d.get_str("display_name").unwrap_or_default().to_owned();
        (name, int(&d, "version"))
    }))
}

/// Upserts `word` of `user` at `version` (`$max`: a newer sync's stamp stays). Two
/// upserts of one new entry may race to insert it: the loser reports a duplicate key
/// and is run again, then matching the winner's document.
async fn upsert(
    coll: &Collection<Document>,
    word: &str,
    user: &str,
    version: i64,
) -> StoreResult<u64> {
    let filter = doc! { "_id": entry_id(word, user), "w": word, "u": user };
    let update = doc! { "$max": { "v": version } };
    for _ in 0..2 {
        match coll
            .update_one(filter.clone(), update.clone())
            .upsert(true)
            .await
        {
            Ok(done) => return Ok(done.modified_count + u64::from(done.upserted_id.is_some())),
            Err(e) if is_duplicate_key(&e) => continue,
            Err(e) => return Err(db_error(e)),
        }
    }
    Ok(0)
}

/// Which of a user's entries that are not words of the name read a sync removes.
#[derive(Clone, Copy, PartialEq)]
enum Stale {
    /// Those stamped older than the name's version (the request's and the worker's
    /// sync: a newer sync's entries are never taken).
    Older,
    /// All of them (the rebuild).
    AnyStamp,
}

/// Brings `user`'s entries in line with their profile (see the module comment); answers
/// the entries written or removed.
pub(super) async fn sync_user(db: &Database, user: &str) -> StoreResult<u64> {
    sync(db, user, Stale::Older).await
}

/// The rebuild's sync of `user`: every entry not a word of the name removed; if the
/// name is still moving after the last attempt, the guarded sync after it (see the
/// module comment).
async fn resync_user(db: &Database, user: &str) -> StoreResult<u64> {
    let (changed, settled) = attempts(db, user, Stale::AnyStamp).await?;
    if settled {
        return Ok(changed);
    }
    Ok(changed + sync(db, user, Stale::Older).await?)
}

async fn sync(db: &Database, user: &str, stale: Stale) -> StoreResult<u64> {
    let (changed, settled) = attempts(db, user, stale).await?;
    if !settled {
        tracing::debug!(
            user,
            "name kept changing during its word sync; its next change syncs it"
        );
    }
    Ok(changed)
}

/// Up to [`SYNC_ATTEMPTS`] syncs of `user`, until the version read after one is the one
/// it wrote from; answers the entries written or removed and whether it settled.
async fn attempts(db: &Database, user: &str, mode: Stale) -> StoreResult<(u64, bool)> {
    let coll = coll(db);
    let mut changed = 0;
    let mut read = profile(db, user).await?;
    for _ in 0..SYNC_ATTEMPTS {
        // An unknown user keeps no entry (users are never deleted; a stray one goes).
        let (name, version) = read.clone().unwrap_or((String::new(), i64::MAX));
        let words = name_words(&name);
        for word in &words {
            changed += upsert(&coll, word, user, version).await?;
        }
        let held = all(coll.find(doc! { "u": user }).projection(doc! { "w": 1 })).await?;
        let stale: Vec<&str> = held
            .iter()
            .filter_map(|d| d.get_str("w").ok())
            .filter(|w| !words.iter().any(|word| word == w))
            .collect();
        if !stale.is_empty() {
            let mut filter = doc! { "w": { "$in": &stale }, "u": user };
            if mode == Stale::Older {
                filter.insert("v", doc! { "$lt": version });
            }
            let removed = coll.delete_many(filter).await.map_err(db_error)?;
            changed += removed.deleted_count;
        }
        let again = profile(db, user).await?;
        if again.as_ref().map(|(_, v)| *v) == read.as_ref().map(|(_, v)| *v) {
            return Ok((changed, true));
        }
        read = again;
    }
    Ok((changed, false))
}

/// Syncs each of `users`, a few at once.
pub(super) async fn sync_users(db: &Database, users: &[String]) -> StoreResult<u64> {
    each(db, users, Stale::Older).await
}

async fn each(db: &Database, users: &[String], mode: Stale) -> StoreResult<u64> {
    let syncs: Vec<_> = users
        .iter()
        .map(|user| async move {
            match mode {
                Stale::Older => sync_user(db, user).await,
                Stale::AnyStamp => resync_user(db, user).await,
            }
        })
        .collect();
    let counts: Vec<u64> = futures::stream::iter(syncs)
        .buffer_unordered(IN_FLIGHT)
        .try_collect()
        .await?;
    Ok(counts.into_iter().sum())
}

/// Every user synced, every entry not a word of their name removed whatever its stamp,
/// in id order a page at a time; then every entry of no user removed (a walk of
/// `{u: 1, w: 1}`, a page at a time).
pub(super) async fn rebuild(db: &Database) -> StoreResult<u64> {
    let users = db.collection::<Document>("users");
    let mut changed = 0;
    let mut after: Option<String> = None;
    loop {
        let filter = after
            .as_ref()
            .map_or(doc! {}, |a| doc! { "_id": { "$gt": a } });
        let page = all(users
            .find(filter)
            .sort(doc! { "_id": 1 })
            .limit(PAGE)
            .projection(doc! { "_id": 1 }))
        .await?;
        let ids: Vec<String> = page
            .iter()
            .filter_map(|d| d.get_str("_id").ok().map(str::to_owned))
            .collect();
        changed += each(db, &ids, Stale::AnyStamp).await?;
        if (ids.len() as i64) < PAGE {
            break;
        }
        after = ids.last().cloned();
    }
    let mut after: Option<(String, String)> = None;
    loop {
        let filter = match &after {
            Some((u, w)) => doc! { "$or": [{ "u": u, "w": { "$gt": w } }, { "u": { "$gt": u } }] },
            None => doc! {},
        };
        let page = all(coll(db)
            .find(filter)
            .sort(doc! { "u": 1, "w": 1 })
            .limit(PAGE)
            .projection(doc! { "u": 1, "w": 1 }))
        .await?;
        let mut owners: Vec<String> = page
            .iter()
            .filter_map(|d| d.get_str("u").ok().map(str::to_owned))
            .collect();
        owners.dedup();
        let known = all(users
            .find(doc! { "_id": { "$in": &owners } })
            .projection(doc! { "_id": 1 }))
        .await?;
        let known: Vec<&str> = known.iter().filter_map(|d| d.get_str("_id").ok()).collect();
        for stray in owners.iter().filter(|u| !known.contains(&u.as_str())) {
            changed += resync_user(db, stray).await?;
        }
        if (page.len() as i64) < PAGE {
            break;
        }
        after = page.last().map(|d| {
            let e = entry_from(d);
            (e.user, e.word)
        });
    }
    Ok(changed)
}

/// The entries of users just loaded in bulk (`ids`), from their documents as stored,
/// stamped with their version: inserts only, an entry already there left as it is.
pub(super) async fn load(db: &Database, ids: &[String]) -> StoreResult<u64> {
    if ids.is_empty() {
        return Ok(0);
    }
    let stored = all(db
        .collection::<Document>("users")
        .find(doc! { "_id": { "$in": ids } })
        .projection(doc! { "display_name": 1, "version": 1 }))
    .await?;
    let docs: Vec<Document> = stored
        .iter()
        .flat_map(|user| {
            let id = user.get_str("_id").unwrap_or_default().to_owned();
            let version = int(user, "version");
            name_words(user.get_str("display_name").unwrap_or_default())
                .into_iter()
                .map(move |w| doc! { "_id": entry_id(&w, &id), "w": &w, "u": &id, "v": version })
        })
        .collect();
    super::bulk::insert_unordered(&coll(db), docs).await
}

/// Fills the index from the profiles once per database (a database written before it
/// existed), recorded in `migrations` after it ran, so an interrupted fill runs again.
pub(super) async fn backfill(db: &Database) -> anyhow::Result<()> {
    let migrations = db.collection::<Document>(MIGRATIONS);
    if migrations
        .find_one(doc! { "_id": MIGRATED })
        .await?
        .is_some()
    {
        return Ok(());
    }
    let any_user = db
        .collection::<Document>("users")
        .find_one(doc! {})
        .into_future()
        .await?;
    if any_user.is_some() {
        let written = rebuild(db).await?;
        tracing::info!(
            written,
            "indexed the display names of users stored before the name index"
        );
    }
    migrations
        .update_one(
            doc! { "_id": MIGRATED },
            doc! { "$set": { "at": mongodb::bson::DateTime::now() } },
        )
        .upsert(true)
        .await?;
    Ok(())
}
