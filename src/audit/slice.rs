//! The sources one user's checks rest on, read page by page: their profile, edges,
//! posts and likes, and their home posts down to a floor.

use std::collections::BTreeSet;

use crate::derived::{FollowSource, PostSource, Sources, Window};
use crate::domain::{Post, PostId, User};
use crate::store::{Store, StoreResult};

/// Rows per query of one user's slice.
pub(super) const PAGE: usize = 1000;

/// A post as a source, live as read.
pub(super) fn post_source(post: &Post) -> PostSource {
    PostSource {
        author: post.author.clone(),
        text: post.text.clone(),
        created: Window::at(post.created_at_ms()),
        deleted: None,
        reply_to: post.reply_to.clone(),
    }
}

/// The user, their edges (with when each follow ran), their live posts and their likes;
/// and the followees flagged merged.
pub(super) async fn slice(store: &Store, user: &User) -> StoreResult<(Sources, BTreeSet<String>)> {
    let id = user.id.as_str();
    let mut s = Sources::default();
    s.users.insert(id.to_owned(), user.display_name.clone());
    let mut merged = BTreeSet::new();
    follows(store, id, &mut s, &mut merged).await?;
    let mut before = None;
    loop {
        let posts = store.content.posts_by_author(id, before, PAGE).await?;
        for post in &posts {
            s.posts.insert(post.id, post_source(post));
        }
        if posts.len() < PAGE {
            break;
        }
        before = posts.last().map(|p| p.id);
    }
    let mut after = None;
    loop {
        let likes = store.audit.likes_of(id, after, PAGE).await?;
        s.likes.extend(likes.iter().map(|p| (id.to_owned(), *p)));
        if likes.len() < PAGE {
            break;
        }
        after = likes.last().copied();
    }
    Ok((s, merged))
}

/// `id`'s follow edges, with when each follow ran, into `s`; the followees flagged
/// merged into `merged`.
pub(super) async fn follows(
    store: &Store,
    id: &str,
    s: &mut Sources,
    merged: &mut BTreeSet<String>,
) -> StoreResult<()> {
    let mut after: Option<String> = None;
    loop {
        let edges = store.audit.follow_edges(id, after.as_deref(), PAGE).await?;
        for edge in &edges {
            let created = Window::at(edge.created_ms);
            s.follows.insert(
                (id.to_owned(), edge.followee.clone()),
                FollowSource { created },
            );
            if edge.merged {
                merged.insert(edge.followee.clone());
            }
        }
        if edges.len() < PAGE {
            return Ok(());
        }
        after = edges.last().map(|e| e.followee.clone());
    }
}

/// Adds `posts` to the slice, live as read.
pub(super) fn add_posts(sources: &mut Sources, posts: &[Post]) {
    for post in posts {
        sources.posts.insert(post.id, post_source(post));
    }
}

/// The posts among `ids` that exist, with their authors as stored.
pub(super) async fn existing(store: &Store, ids: &[PostId]) -> StoreResult<Vec<Post>> {
    let mut posts = Vec::with_capacity(ids.len());
    for chunk in ids.chunks(PAGE) {
        posts.extend(store.content.posts_by_ids(chunk, &[]).await?);
    }
    Ok(posts)
}

/// The live posts of `user` and their followees, newest first, down to `floor`
/// (inclusive) or `cap` posts; `None` past the cap.
pub(super) async fn home(
    store: &Store,
    user: &str,
    floor: Option<PostId>,
    cap: usize,
) -> StoreResult<Option<Vec<Post>>> {
    let mut posts: Vec<Post> = Vec::new();
    let mut before = None;
    loop {
        let page = store.content.home_posts(user, before, PAGE).await?;
        let full = page.len() == PAGE;
        before = page.last().map(|p| p.id);
        posts.extend(page.into_iter().filter(|p| floor.is_none_or(|f| p.id >= f)));
        if posts.len() > cap {
            return Ok(None);
        }
        if !full || before.zip(floor).is_some_and(|(b, f)| b < f) {
            return Ok(Some(posts));
        }
    }
}
