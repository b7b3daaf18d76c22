//! What one timeline entry must carry, given the sources. An entry names its post and
//! the post's author; with content embedded it also carries the post's text and a copy
//! of the author's display name, stamped with the user version it was read at
//! ([`NameStamp`](crate::domain::NameStamp)). Entries written before names were
//! embedded carry no stamp, and entries of linked content neither text nor stamp: what
//! an entry does not carry is not compared, and everything it carries is.
//!
//! A stamp's name may trail its author's profile only while the rename is on its way to
//! the timelines, which is eventual (a checker decides when that is over, as the audit's
//! window does); a stamp is never newer than the profile, since every stamp is a copy of
//! a profile read, and a newer one would keep every later rename from replacing it.

use std::fmt;

use super::Sources;
use crate::domain::TimelineEntry;

/// One field of a stored entry that differs from what the sources say it must carry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EntryFault {
    /// The entry names `held` as its author; the post's author is `post`.
    Author { held: String, post: String },
    /// The embedded text is `held`; the post's is `post`.
    Text { held: String, post: String },
    /// The name stamp says `held`; the author's profile says `profile`.
    Name { held: String, profile: String },
    /// The stamp's version `held` is newer than the profile's `profile`.
    Version { held: u64, profile: u64 },
    /// The entry names `held` as the author of the post it answers; the post says
    /// `post` (`None`: not a reply).
    ReplyTo {
        held: Option<String>,
        post: Option<String>,
    },
}

/// At most 40 characters of `text`, quoted.
fn quoted(text: &str) -> String {
    const SHOWN: usize = 40;
    match text.char_indices().nth(SHOWN) {
        Some((cut, _)) => format!("{:?}...", &text[..cut]),
        None => format!("{text:?}"),
    }
}

impl fmt::Display for EntryFault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EntryFault::Author { held, post } => {
                write!(f, "names {held} as its author, the post's is {post}")
            }
            EntryFault::Text { held, post } => write!(
                f,
                "carries the text {}, the post's is {}",
                quoted(held),
                quoted(post)
            ),
            EntryFault::Name { held, profile } => write!(
                f,
                "carries the name {}, the author's profile says {}",
                quoted(held),
                quoted(profile)
            ),
            EntryFault::Version { held, profile } => write!(
                f,
                "carries a name stamped at version {held}, newer than the author's profile \
                 ({profile})"
            ),
            EntryFault::ReplyTo { held, post } => write!(
                f,
                "names {held:?} as the author of the post it answers, the post says {post:?}"
            ),
        }
    }
}

impl Sources {
    /// How `entry` differs from what the sources say it must carry: its post's author,
    /// and where it carries them, the post's text and the author's display name (of
    /// `users`), stamped at no newer a version than the profile's (of `versions`, where
    /// known). Nothing for an entry whose post is not among the sources: a deleted post
    /// is a fault of the timeline that holds it (see [`super::cache_faults`]).
    pub fn entry_faults(&self, entry: &TimelineEntry) -> Vec<EntryFault> {
        let Some(post) = self.posts.get(&entry.id) else {
            return Vec::new();
        };
        let mut faults = Vec::new();
        if entry.author != post.author {
            faults.push(EntryFault::Author {
                held: entry.author.clone(),
                post: post.author.clone(),
            });
        }
        let parent = post.reply_to.as_ref().map(|r| r.author.clone());
        if entry.reply_to_author != parent {
            faults.push(EntryFault::ReplyTo {
                held: entry.reply_to_author.clone(),
                post: parent,
            });
        }
        if let Some(text) = entry.text.as_ref().filter(|t| **t != post.text) {
            faults.push(EntryFault::Text {
                held: text.clone(),
                post: post.text.clone(),
            });
        }
        if let Some(stamp) = &entry.name {
            if let Some(name) = self.users.get(&post.author)
                && stamp.display_name != *name
            {
                faults.push(EntryFault::Name {
                    held: stamp.display_name.clone(),
                    profile: name.clone(),
                });
            }
            if let Some(version) = self.versions.get(&post.author)
                && stamp.version > *version
            {
                faults.push(EntryFault::Version {
                    held: stamp.version,
                    profile: *version,
                });
            }
        }
        faults
    }
}

#[cfg(test)]
mod tests {
    use super::super::{PostSource, Window};
    use super::*;
    use crate::domain::{NameStamp, PostId};

    #[test]
    fn every_field_an_entry_carries_is_held_to_its_post_and_author() {
        let id = PostId::at(5, 0);
        let mut s = Sources::default();
        s.posts.insert(
            id,
            PostSource {
                author: "ann".into(),
                text: "hello".into(),
                created: Window::at(5),
                deleted: None,
                reply_to: None,
            },
        );
        s.users.insert("ann".into(), "Ann".into());
        s.versions.insert("ann".into(), 2);
        let stamp = |name: &str, version| {
            Some(NameStamp {
                display_name: name.into(),
                version,
            })
        };
        let entry = TimelineEntry {
            id,
            author: "ann".into(),
            text: Some("hello".into()),
            name: stamp("Ann", 2),
            reply_to_author: None,
            repost_of: None,
        };
        assert!(s.entry_faults(&entry).is_empty());
        let linked = TimelineEntry {
            text: None,
            name: None,
            reply_to_author: None,
            repost_of: None,
            ..entry.clone()
        };
        assert!(s.entry_faults(&linked).is_empty(), "nothing carried");
        let wrong = TimelineEntry {
            id,
            author: "bob".into(),
            text: Some("hullo".into()),
            name: stamp("Anne", 3),
            reply_to_author: None,
            repost_of: None,
        };
        let faults = s.entry_faults(&wrong);
        assert_eq!(faults.len(), 4, "{faults:?}");
        assert_eq!(
            faults[1].to_string(),
            r#"carries the text "hullo", the post's is "hello""#
        );
        let older = TimelineEntry {
            name: stamp("Ann", 1),
            reply_to_author: None,
            repost_of: None,
            ..entry.clone()
        };
        assert!(s.entry_faults(&older).is_empty(), "the same name, older");
        let gone = TimelineEntry {
            id: PostId::at(6, 0),
            ..wrong
        };
        assert!(s.entry_faults(&gone).is_empty(), "not an entry's fault");
    }
}
