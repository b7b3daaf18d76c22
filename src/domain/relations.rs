//! Blocks and mutes: sources, like follows, that hide one user's posts from another.
//!
//! A block stands both ways: neither user's posts reach the other, and no follow
//! between them may exist while it stands. A mute hides the muted user's posts from the
//! muter alone, for ever or until `until_ms`, and may also hide their notifications.
//! What a reader is hidden at one instant is a [`Hidden`], read once per timeline page.

use std::collections::HashSet;

/// The settings of one mute.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MuteSettings {
    /// Whether the muted user's notifications are hidden too.
    pub notifications: bool,
    /// When the mute stops filtering, by the server's clock; `None`: never.
    pub until_ms: Option<i64>,
}

/// One of a user's blocks or mutes, as listed (newest first).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Relation {
    /// The blocked or muted user.
    pub other: String,
    pub created_ms: i64,
    /// For a mute, its settings; `None` for a block.
    pub mute: Option<MuteSettings>,
}

/// The users hidden from one reader at one instant: the users the reader blocks, the
/// users who block the reader, and the users the reader mutes with no expiry or one
/// after that instant. It holds until [`Hidden::expires_ms`] (the earliest expiry among
/// the timed mutes it contains) unless a block or mute changes meanwhile.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Hidden {
    users: HashSet<String>,
    /// Of those, the users hidden by a block either way (a subset of `users`).
    blocked: HashSet<String>,
    /// Of the muted users, those whose mute leaves their notifications shown.
    notifications_shown: HashSet<String>,
    expires_ms: Option<i64>,
}

impl Hidden {
    /// Adds a user hidden by a block, in either direction.
    pub fn add_block(&mut self, user: String) {
        self.users.insert(user.clone());
        self.blocked.insert(user);
    }

    /// Adds a user the reader mutes; call only for mutes that stand at the instant the
    /// set describes.
    pub fn add_mute(&mut self, user: String, mute: MuteSettings) {
        if !mute.notifications {
            self.notifications_shown.insert(user.clone());
        }
        self.users.insert(user);
        if let Some(until) = mute.until_ms {
            self.expires_ms = Some(self.expires_ms.map_or(until, |e| e.min(until)));
        }
    }

    /// Whether posts by `user` are hidden from the reader.
    pub fn hides(&self, user: &str) -> bool {
        self.users.contains(user)
    }

    /// Whether a block stands between the reader and `user`, either way.
    pub fn blocks(&self, user: &str) -> bool {
        self.blocked.contains(user)
    }

    /// Whether notifications caused by `user` are hidden from the reader: a block
    /// either way, or a mute with `notifications` set.
    pub fn hides_notifications_of(&self, user: &str) -> bool {
        self.users.contains(user)
            && (self.blocked.contains(user) || !self.notifications_shown.contains(user))
    }

    /// The earliest expiry among the timed mutes it contains: the set may differ from
    /// then on. `None`: it holds until a block or mute changes.
    pub fn expires_ms(&self) -> Option<i64> {
        self.expires_ms
    }

    pub fn is_empty(&self) -> bool {
        self.users.is_empty()
    }

    /// The users whose notifications are hidden from the reader, in no order.
    pub fn notifications_hidden(&self) -> Vec<String> {
        self.users
            .iter()
            .filter(|u| self.hides_notifications_of(u))
            .cloned()
            .collect()
    }

    pub fn len(&self) -> usize {
        self.users.len()
    }
}

/// The longest mute a request may ask for: ten years.
pub const MAX_MUTE_MS: i64 = 10 * 366 * 86_400_000;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_earliest_expiry_is_kept_and_blocks_hide_notifications() {
        let mut hidden = Hidden::default();
        assert!(hidden.is_empty());
        hidden.add_block("bob".into());
        hidden.add_mute(
            "cat".into(),
            MuteSettings {
                notifications: false,
                until_ms: Some(50),
            },
        );
        hidden.add_mute(
            "dan".into(),
            MuteSettings {
                notifications: true,
                until_ms: Some(20),
            },
        );
        hidden.add_mute(
            "eve".into(),
            MuteSettings {
                notifications: true,
                until_ms: None,
            },
        );
        assert_eq!(hidden.expires_ms(), Some(20));
        assert!(["bob", "cat", "dan", "eve"].iter().all(|u| hidden.hides(u)));
        assert!(!hidden.hides("ann"));
        assert!(hidden.blocks("bob") && !hidden.blocks("cat"));
        assert!(hidden.hides_notifications_of("bob"));
        assert!(!hidden.hides_notifications_of("cat"));
        assert!(hidden.hides_notifications_of("dan"));
        assert!(!hidden.hides_notifications_of("ann"));
    }
}
