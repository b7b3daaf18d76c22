//! `socialite seed` through the bulk loader: the data set `seed::plan` describes (the
//! same users, edges and texts for the same seed), drawn as it is written so that no
//! more than a batch is held in memory, then derived data built in bulk.
//!
//! Times: every user is created at the seed's base time, every follow, block and mute
//! 1 ms later (a timed mute lasting from there), and
//! post `k` of the plan (round by round, every user in turn) at `base + 2 + k` ms, so
//! posts are 1 ms apart, in plan order, and the newest is about now. A repost is made
//! its plan's delay after its post, at the latest 1 ms after the newest post, with an id
//! at that time whose tail is unique per (reposter, post) and never 0 (the posts').
//! The reposts are drawn beside the follows (`seed/reposts.rs`) and held, a few bytes
//! each, until the posts are written. A re-run keeps the
//! base of the first run (it reads `u0`'s creation time), so it writes the same ids,
//! which the store skips: an interrupted seed finishes when run again.

use std::path::Path;
use std::sync::{Arc, Mutex};

use anyhow::Context;
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;

use super::{BATCH, LoadReport, Loader, Source};
use crate::domain::relations::MuteSettings;
use crate::domain::{PostId, now_ms};
use crate::seed::{Draws, Replies, Reposts, SeedArgs, SeedRepost, user_id};
use crate::store::Store;
use crate::store::bulk::{
    DeriveSettings, FollowRow, PostRow, RelationRow, RepostRow, Rows, TokenRow, UserRow,
};

/// Writes a user id into `rows` without a temporary `String`.
fn intern_user<R>(rows: &mut Rows<R>, index: usize) -> crate::store::bulk::Span {
    use std::fmt::Write;
    rows.intern_with(|s| {
        let _ = write!(s, "u{index}");
    })
}

/// The base time of the data set: that of an earlier run, or one that puts the newest
/// post at about now.
async fn base_time(store: &Store, args: &SeedArgs) -> anyhow::Result<i64> {
    if let Some(first) = store.users.user(&user_id(0)).await? {
        return Ok(first.created_at_ms);
    }
    Ok(now_ms() - 2 - (args.users * args.posts_per_user) as i64)
}

/// Seeds the store; with `tokens_out`, also issues every user an API token and writes
/// them to that file as a JSON array, the token of `u{i}` at index `i`.
pub async fn run(
    store: Store,
    settings: DeriveSettings,
    args: SeedArgs,
    tokens_out: Option<&Path>,
) -> anyhow::Result<LoadReport> {
    let base = base_time(&store, &args).await?;
    let mut loader = Loader::begin(store, settings).await?;
    let users = args.users;
    let produce = move |send: &mut dyn FnMut(Rows<UserRow>) -> anyhow::Result<()>| {
        for start in (0..users).step_by(BATCH) {
            let mut rows = Rows::with_capacity(BATCH.min(users - start), 16);
            for index in start..(start + BATCH).min(users) {
                let id = intern_user(&mut rows, index);
                rows.push(UserRow {
                    id,
                    display_name: id,
                    created_at_ms: base,
                });
            }
            send(rows)?;
        }
        Ok(())
    };
    loader
        .load(Source::Users, users as u64, produce, |s, rows| async move {
            s.bulk.insert_users(rows).await
        })
        .await?;
    if let Some(path) = tokens_out {
        tokens(&mut loader, users, base, path.to_owned()).await?;
    }

    // One generator for the follows and then the posts, drawn in `plan`'s order; each
    // producer holds it while it runs, one after the other.
    let draws = Arc::new(Mutex::new(Draws::new(&args)));
    let shared = draws.clone();
    let (blocks, mutes) = crate::seed::social::relations(&args);
    let mut drawer = Reposts::new(&args, &blocks);
    let reposts: Arc<Mutex<Vec<SeedRepost>>> = Arc::default();
    let drawn = reposts.clone();
    let produce = move |send: &mut dyn FnMut(Rows<FollowRow>) -> anyhow::Result<()>| {
        let mut draws = shared.lock().unwrap_or_else(|p| p.into_inner());
        let mut drawn = drawn.lock().unwrap_or_else(|p| p.into_inner());
        let mut rows = Rows::with_capacity(BATCH, 12);
        let mut chosen = Vec::new();
        for follower in 1..users {
            draws.follows_of(follower, &mut chosen);
            for &followee in &chosen {
                drawn.extend(drawer.of_follow(follower, followee));
                let (follower, followee) = (
                    intern_user(&mut rows, follower),
                    intern_user(&mut rows, followee),
                );
                rows.push(FollowRow {
                    follower,
                    followee,
                    created_at_ms: base + 1,
                });
            }
            if rows.len() >= BATCH {
                send(std::mem::replace(&mut rows, Rows::with_capacity(BATCH, 12)))?;
            }
        }
        if !rows.is_empty() {
            send(rows)?;
        }
        Ok(())
    };
    // How many follows there are is known only once drawn: the bar's length estimates
    // it (the mean of Zipf(max_follows, 0.99) is about max_follows / 6).
    let expected = (users as u64).saturating_mul(args.max_follows.min(users) as u64 / 6 + 1);
    loader
        .load(Source::Follows, expected, produce, |s, rows| async move {
            s.bulk.insert_follows(rows).await
        })
        .await?;

    let posts = users * args.posts_per_user;
    let mut replies = Replies::new(&args);
    let produce = move |send: &mut dyn FnMut(Rows<PostRow>) -> anyhow::Result<()>| {
        let mut draws = draws.lock().unwrap_or_else(|p| p.into_inner());
        let mut rows = Rows::with_capacity(BATCH, 90);
        let id_of = |k: usize| PostId::at(base + 2 + k as i64, 0);
        for k in 0..posts {
            let author = intern_user(&mut rows, k % users);
            let text = rows.intern_with(|s| draws.text(s));
            rows.push(PostRow {
                id: id_of(k),
                author,
                text,
                reply_to: replies.parent(k).map(id_of),
            });
            if rows.len() == BATCH {
                send(std::mem::replace(&mut rows, Rows::with_capacity(BATCH, 90)))?;
            }
        }
        if !rows.is_empty() {
            send(rows)?;
        }
        Ok(())
    };
    loader
        .load(Source::Posts, posts as u64, produce, |s, rows| async move {
            s.bulk.insert_posts(rows).await
        })
        .await?;
    let reposts = std::mem::take(&mut *reposts.lock().unwrap_or_else(|p| p.into_inner()));
    write_reposts(&mut loader, &args, base, reposts).await?;
    relations(&mut loader, base, blocks, mutes).await?;
    loader.finish().await
}

/// The plan's reposts (`seed/reposts.rs`), after the posts whose authors they take.
async fn write_reposts(
    loader: &mut Loader,
    args: &SeedArgs,
    base: i64,
    reposts: Vec<SeedRepost>,
) -> anyhow::Result<()> {
    let users = args.users;
    let expected = reposts.len() as u64;
    let produce = move |send: &mut dyn FnMut(Rows<RepostRow>) -> anyhow::Result<()>| {
        let post_ms = |k: usize| base + 2 + k as i64;
        for chunk in reposts.chunks(BATCH) {
            let mut rows = Rows::with_capacity(chunk.len(), 8);
            for repost in chunk {
                let user = intern_user(&mut rows, repost.user);
                rows.push(RepostRow {
                    id: PostId::at(repost.at_ms(post_ms), repost.id_tail(users)),
                    user,
                    post: PostId::at(post_ms(repost.post), 0),
                });
            }
            send(rows)?;
        }
        Ok(())
    };
    loader
        .load(Source::Reposts, expected, produce, |s, rows| async move {
            s.bulk.insert_reposts(rows).await
        })
        .await?;
    Ok(())
}

/// The plan's blocks and mutes (`seed/social.rs`), made 1 ms after the users.
async fn relations(
    loader: &mut Loader,
    base: i64,
    blocks: Vec<(usize, usize)>,
    mutes: Vec<crate::seed::SeedMute>,
) -> anyhow::Result<()> {
    let at = base + 1;
    for (source, mute) in [(Source::Blocks, false), (Source::Mutes, true)] {
        let mut rows = Rows::with_capacity(blocks.len().max(mutes.len()), 12);
        if mute {
            for m in &mutes {
                let (user, other) = (
                    intern_user(&mut rows, m.user),
                    intern_user(&mut rows, m.other),
                );
                let settings = MuteSettings {
                    notifications: m.notifications,
                    until_ms: m.lasts_ms.map(|ms| at + ms),
                };
                rows.push(RelationRow {
                    user,
                    other,
                    created_at_ms: at,
                    mute: Some(settings),
                });
            }
        } else {
            for &(user, other) in &blocks {
                let (user, other) = (intern_user(&mut rows, user), intern_user(&mut rows, other));
                rows.push(RelationRow {
                    user,
                    other,
                    created_at_ms: at,
                    mute: None,
                });
            }
        }
        let expected = rows.len() as u64;
        let produce =
            move |send: &mut dyn FnMut(Rows<RelationRow>) -> anyhow::Result<()>| send(rows);
        loader
            .load(source, expected, produce, |s, rows| async move {
                s.bulk.insert_relations(rows).await
            })
            .await?;
    }
    Ok(())
}

/// Issues every user a token and writes the values to `path` (only hashes are stored).
async fn tokens(
    loader: &mut Loader,
    users: usize,
    at: i64,
    path: std::path::PathBuf,
) -> anyhow::Result<()> {
    let produce = move |send: &mut dyn FnMut(Rows<TokenRow>) -> anyhow::Result<()>| {
        let mut issued: Vec<String> = Vec::with_capacity(users);
        for start in (0..users).step_by(BATCH) {
            let mut rows = Rows::with_capacity(BATCH.min(users - start), 24);
            for index in start..(start + BATCH).min(users) {
                let token = URL_SAFE_NO_PAD.encode(rand::random::<[u8; 32]>());
                let user = intern_user(&mut rows, index);
                let token_id = rows.intern(&hex::encode(rand::random::<[u8; 8]>()));
                rows.push(TokenRow {
                    hash: crate::service::auth::hash(&token),
                    user,
                    token_id,
                    created_at_ms: at,
                });
                issued.push(token);
            }
            send(rows)?;
        }
        let json = serde_json::to_vec(&issued)?;
        std::fs::write(&path, json).with_context(|| format!("writing {}", path.display()))
    };
    loader
        .load(
            Source::Tokens,
            users as u64,
            produce,
            |s, rows| async move { s.bulk.insert_tokens(rows).await },
        )
        .await?;
    Ok(())
}
