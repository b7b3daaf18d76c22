//! The display-name word index the account search reads: each user's entries are
//! exactly `domain::name_words` of their display name (none missing, none stale), and
//! no entry names a user that does not exist (a walk of the whole index in
//! (word, user) order, a page at a time). Repaired by the counters worker's rebuild,
//! which writes every user's words again and removes the entries of no user.

use std::collections::BTreeSet;

use super::{Finding, Fix, Kind, Settings, Tally};
use crate::domain::{User, name_words};
use crate::store::{NameWord, Store, StoreResult};

/// Entries read per page of the walk.
const PAGE: usize = 1_000;

fn finding(user: &str, detail: String) -> Finding {
    Finding::of_user(Kind::NameWords, user, detail, Fix::Rebuild)
}

/// `user`'s entries against the words of their display name.
pub(super) async fn check(
    store: &Store,
    settings: &Settings,
    user: &User,
    tally: &mut Tally,
) -> StoreResult<()> {
    let id = user.id.as_str();
    let want: BTreeSet<String> = name_words(&user.display_name).into_iter().collect();
    let held: BTreeSet<String> = store
        .users
        .name_words_of(std::slice::from_ref(&user.id))
        .await?
        .into_iter()
        .map(|e| e.word)
        .collect();
    tally.checked(Kind::NameWords, 1);
    for word in want.difference(&held) {
        let detail = format!("{id}'s name word {word:?} is missing from the index");
        tally.found(finding(id, detail), settings.keep);
    }
    for word in held.difference(&want) {
        let detail = format!("{id} is indexed under {word:?}, not a word of their name");
        tally.found(finding(id, detail), settings.keep);
    }
    Ok(())
}

/// The entries held for `user`, who does not exist (a recheck of an orphan).
pub(super) async fn check_missing(
    store: &Store,
    settings: &Settings,
    user: &str,
    tally: &mut Tally,
) -> StoreResult<()> {
    for entry in store.users.name_words_of(&[user.to_owned()]).await? {
        orphan(&entry, settings, tally);
    }
    Ok(())
}

fn orphan(entry: &NameWord, settings: &Settings, tally: &mut Tally) {
    let detail = format!(
        "the name word {:?} names {}, who does not exist",
        entry.word, entry.user
    );
    tally.found(finding(&entry.user, detail), settings.keep);
}

/// Every entry of the index whose user does not exist.
pub(super) async fn orphans(
    store: &Store,
    settings: &Settings,
    tally: &mut Tally,
) -> StoreResult<()> {
    let mut after: Option<NameWord> = None;
    loop {
        let page = store
            .users
            .name_word_entries("", after.as_ref(), PAGE)
            .await?;
        let ids: Vec<String> = page
            .iter()
            .map(|e| e.user.clone())
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        let existing: BTreeSet<String> = store
            .users
            .users(&ids)
            .await?
            .into_iter()
            .map(|u| u.id)
            .collect();
        for entry in page.iter().filter(|e| !existing.contains(&e.user)) {
            orphan(entry, settings, tally);
        }
        if page.len() < PAGE {
            return Ok(());
        }
        after = page.last().cloned();
    }
}
