//! What the Mastodon view of accounts needs beyond `/v1`'s operations: how a viewer and
//! other users stand (Mastodon's relationships), batched; each follow, block and mute
//! operation answered with the relationship it leaves; and the account lists (follows,
//! blocks, mutes) with each listed user's profile.
//!
//! A batch of relationships costs, whatever its size: one read of the viewer's follows
//! among the users (`UserStore::authors`), one of what is hidden from the viewer
//! (`RelationStore::hidden`), and one edge read per user for the follows towards the
//! viewer (the graph port has no batched form; they run together). Only when a block
//! stands between the viewer and some of them: one block read per direction for those,
//! and a walk of the viewer's mutes (a standing block hides whether a mute stands too).

use std::collections::{HashMap, HashSet};

use futures::future::try_join_all;

use super::keyset::{self, ListPage, ListRange};
use super::{Direction, MuteRequest, Social};
use crate::domain::AccountView;
use crate::domain::relations::{MuteSettings, Relation};
use crate::store::StoreResult;
use crate::store::relations::RelationCursor;

/// How the viewer and one other user stand.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RelationshipView {
    /// The other user.
    pub id: String,
    /// The viewer follows them.
    pub following: bool,
    /// They follow the viewer.
    pub followed_by: bool,
    /// The viewer blocks them.
    pub blocking: bool,
    /// They block the viewer.
    pub blocked_by: bool,
    /// A mute of theirs by the viewer stands now.
    pub muting: bool,
    /// That mute hides their notifications too.
    pub muting_notifications: bool,
}

/// Mutes read per round of the walk that finds the mutes hidden behind blocks.
const MUTE_PAGE: usize = 500;

impl Social {
    /// How `viewer` and each of `others` stand, in the order asked, each once; unknown
    /// users are left out (see the module comment for the reads).
    pub async fn relationships(
        &self,
        viewer: &str,
        others: &[String],
    ) -> StoreResult<Vec<RelationshipView>> {
        let mut seen = HashSet::new();
        let others: Vec<String> = others
            .iter()
            .filter(|id| seen.insert(id.as_str()))
            .cloned()
            .collect();
        let now = self.timelines.now_ms();
        let (found, hidden) = tokio::try_join!(
            self.store.users.authors(viewer, &others),
            self.store.relations.hidden(viewer, now)
        )?;
        let following: HashMap<&str, bool> =
            found.iter().map(|a| (a.id.as_str(), a.followed)).collect();
        let known: Vec<&String> = others
            .iter()
            .filter(|id| following.contains_key(id.as_str()))
            .collect();
        let graph = &self.store.graph;
        let followed_by = try_join_all(known.iter().map(|id| graph.edge(id, viewer)));
        let blocked: Vec<&String> = known
            .iter()
            .copied()
            .filter(|id| hidden.blocks(id))
            .collect();
        let relations = &self.store.relations;
        let directions = try_join_all(blocked.iter().map(|id| async move {
            tokio::try_join!(relations.blocks(viewer, id), relations.blocks(id, viewer))
        }));
        let (followed_by, directions) = tokio::try_join!(followed_by, directions)?;
        let directions: HashMap<&str, (bool, bool)> = blocked
            .iter()
            .map(|id| id.as_str())
            .zip(directions)
            .collect();
        let behind_blocks = match blocked.is_empty() {
            true => HashMap::new(),
            false => self.mutes_of(viewer, &blocked).await?,
        };
        Ok(known
            .into_iter()
            .zip(followed_by)
            .map(|(id, edge)| {
                let (blocking, blocked_by) =
                    directions.get(id.as_str()).copied().unwrap_or_default();
                let (muting, muting_notifications) = match hidden.blocks(id) {
                    true => match behind_blocks.get(id.as_str()) {
                        Some(mute) => (true, mute.notifications),
                        None => (false, false),
                    },
                    false => (hidden.hides(id), hidden.hides_notifications_of(id)),
                };
                RelationshipView {
                    id: id.clone(),
                    following: following[id.as_str()],
                    followed_by: edge.is_some(),
                    blocking,
                    blocked_by,
                    muting,
                    muting_notifications,
                }
            })
            .collect())
    }

    /// The standing mutes by `viewer` of any of `users`: a walk of the viewer's mutes.
    async fn mutes_of<'a>(
        &self,
        viewer: &str,
        users: &[&'a String],
    ) -> StoreResult<HashMap<&'a str, MuteSettings>> {
        let mut wanted: HashMap<&str, &'a str> =
            users.iter().map(|u| (u.as_str(), u.as_str())).collect();
        let mut found = HashMap::new();
        let now = self.timelines.now_ms();
        let mut after: Option<RelationCursor> = None;
        while !wanted.is_empty() {
            let page = self
                .store
                .relations
                .mute_list(viewer, after.take(), now, MUTE_PAGE)
                .await?;
            for relation in &page {
                if let (Some(id), Some(mute)) =
                    (wanted.remove(relation.other.as_str()), relation.mute)
                {
                    found.insert(id, mute);
                }
            }
            match page.last() {
                Some(last) if page.len() == MUTE_PAGE => {
                    after = Some((last.created_ms, last.other.clone()));
                }
                _ => break,
            }
        }
        Ok(found)
    }

    async fn relationship(&self, viewer: &str, other: &str) -> StoreResult<RelationshipView> {
        let found = self.relationships(viewer, &[other.to_owned()]).await?;
        Ok(found
            .into_iter()
            .next()
            .unwrap_or_else(|| RelationshipView {
                id: other.to_owned(),
                ..RelationshipView::default()
            }))
    }

    /// [`Social::follow`], answering how the two stand after it.
    pub async fn follow_account(&self, user: &str, other: &str) -> StoreResult<RelationshipView> {
        self.follow(user, other).await?;
        self.relationship(user, other).await
    }

    /// [`Social::unfollow`], answering how the two stand after it.
    pub async fn unfollow_account(&self, user: &str, other: &str) -> StoreResult<RelationshipView> {
        self.unfollow(user, other).await?;
        self.relationship(user, other).await
    }

    /// [`Social::block`], answering how the two stand after it.
    pub async fn block_account(&self, user: &str, other: &str) -> StoreResult<RelationshipView> {
        self.block(user, other).await?;
        self.relationship(user, other).await
    }

    /// [`Social::unblock`], answering how the two stand after it.
    pub async fn unblock_account(&self, user: &str, other: &str) -> StoreResult<RelationshipView> {
        self.unblock(user, other).await?;
        self.relationship(user, other).await
    }

    /// [`Social::mute`], answering how the two stand after it.
    pub async fn mute_account(
        &self,
        user: &str,
        other: &str,
        request: MuteRequest,
    ) -> StoreResult<RelationshipView> {
        self.mute(user, other, request).await?;
        self.relationship(user, other).await
    }

    /// [`Social::unmute`], answering how the two stand after it.
    pub async fn unmute_account(&self, user: &str, other: &str) -> StoreResult<RelationshipView> {
        self.unmute(user, other).await?;
        self.relationship(user, other).await
    }

    /// A page of `user`'s follow list (`direction`) in `range`, by user id ascending,
    /// with each listed user's profile. `NotFound` for an unknown user.
    pub async fn follow_accounts(
        &self,
        user: &str,
        direction: Direction,
        range: ListRange<String>,
        limit: usize,
    ) -> StoreResult<ListPage<AccountView, String>> {
        self.user(user).await?;
        let (graph, size) = (&self.store.graph, keyset::read_size(&range, limit));
        let read = match (&range, direction) {
            (ListRange::Older { before, .. }, Direction::Following) => {
                graph.following(user, before.as_deref(), size).await?
            }
            (ListRange::Older { before, .. }, Direction::Followers) => {
                graph.followers(user, before.as_deref(), size).await?
            }
            (ListRange::Newer { after }, Direction::Following) => {
                graph.following_below(user, after, size).await?
            }
            (ListRange::Newer { after }, Direction::Followers) => {
                graph.followers_below(user, after, size).await?
            }
        };
        let page = keyset::shape(&range, read, limit, String::clone, |a, b| a < b);
        let users = self.profiles_in_order(&page.items).await?;
        Ok(page.with_items(users))
    }

    /// A page of `user`'s blocks or mutes (those standing now) in `range`, newest
    /// first, with each listed user's profile. `NotFound` for an unknown user.
    pub async fn relation_accounts(
        &self,
        user: &str,
        mutes: bool,
        range: ListRange<RelationCursor>,
        limit: usize,
    ) -> StoreResult<ListPage<(Relation, AccountView), RelationCursor>> {
        self.user(user).await?;
        let (relations, size) = (&self.store.relations, keyset::read_size(&range, limit));
        let now = self.timelines.now_ms();
        let read = match (&range, mutes) {
            (ListRange::Older { before, .. }, true) => {
                relations.mute_list(user, before.clone(), now, size).await?
            }
            (ListRange::Older { before, .. }, false) => {
                relations.block_list(user, before.clone(), size).await?
            }
            (ListRange::Newer { after }, true) => {
                relations
                    .mute_list_newer(user, after.clone(), now, size)
                    .await?
            }
            (ListRange::Newer { after }, false) => {
                relations
                    .block_list_newer(user, after.clone(), size)
                    .await?
            }
        };
        let key = |r: &Relation| (r.created_ms, r.other.clone());
        let page = keyset::shape(&range, read, limit, key, |a, b| a > b);
        let ids: Vec<&str> = page.items.iter().map(|r| r.other.as_str()).collect();
        let mut users = self.profiles(&ids).await?;
        let items: Vec<(Relation, AccountView)> = page
            .items
            .iter()
            .filter_map(|r| users.remove(&r.other).map(|u| (r.clone(), u)))
            .collect();
        Ok(page.with_items(items))
    }
}
