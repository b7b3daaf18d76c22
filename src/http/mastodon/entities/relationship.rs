//! The Relationship entity: how the viewer and one account stand, as a profile page
//! and the follow, block and mute buttons read it.

use serde::Serialize;
use utoipa::ToSchema;

use crate::service::RelationshipView;

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Relationship {
    /// The other account's id.
    #[schema(example = "bob")]
    pub id: String,
    /// The viewer follows the account.
    pub following: bool,
    /// Always true when following: reposts are never hidden per follow.
    pub showing_reblogs: bool,
    /// Always false: no per-follow notifications.
    pub notifying: bool,
    /// Always null: no language filter per follow.
    pub languages: Option<Vec<String>>,
    /// The account follows the viewer.
    pub followed_by: bool,
    /// The viewer blocks the account.
    pub blocking: bool,
    /// The account blocks the viewer.
    pub blocked_by: bool,
    /// The viewer mutes the account (a mute that stands now).
    pub muting: bool,
    /// The mute hides the account's notifications too.
    pub muting_notifications: bool,
    /// Always false: follows need no approval here.
    pub requested: bool,
    pub requested_by: bool,
    /// Always false: no federation.
    pub domain_blocking: bool,
    pub endorsed: bool,
    /// Always empty: no private notes.
    pub note: String,
}

impl Relationship {
    pub fn new(standing: &RelationshipView) -> Relationship {
        Relationship {
            id: standing.id.clone(),
            following: standing.following,
            showing_reblogs: standing.following,
            notifying: false,
            languages: None,
            followed_by: standing.followed_by,
            blocking: standing.blocking,
            blocked_by: standing.blocked_by,
            muting: standing.muting,
            muting_notifications: standing.muting_notifications,
            requested: false,
            requested_by: false,
            domain_blocking: false,
            endorsed: false,
            note: String::new(),
        }
    }
}
