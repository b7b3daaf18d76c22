//! Reposts in home timelines (issue 35, section 4), on both stores and under every
//! strategy: a follower is served the repost with its reposter and original; an
//! unrepost and the original's delete take it away at once; a block or mute of the
//! reposter or of the original's author hides it; each post is served once (the
//! original wins, else the first repost); a large audience gets it from the timelines
//! worker (under `hybrid` a celebrity's repost is merged at read time instead:
//! `repost_timelines/hybrid.rs`); and a kept page never shows what a fresh read would
//! not. The worker's fan-out, an entry a race left behind, and a strategy switch are in
//! `repost_timelines/upkeep.rs`.

mod common;
#[path = "repost_timelines/hybrid.rs"]
mod hybrid;
#[path = "repost_timelines/rounds.rs"]
mod rounds;
#[path = "repost_timelines/upkeep.rs"]
mod upkeep;

use bytes::Bytes;
use socialite::domain::{FeedStrategy, PostId};
use socialite::feed::{FeedSettings, TimelineItem, TimelinePage};
use socialite::service::{MuteRequest, Social};
use socialite::store::Store;

use common::{fresh_store, kinds};

fn settings(strategy: FeedStrategy) -> FeedSettings {
    FeedSettings {
        strategy,
        inline_fanout_max: u64::MAX,
        ..FeedSettings::default()
    }
}

fn social(store: &Store, settings: &FeedSettings) -> Social {
    common::social(store.clone(), settings)
}

/// What a served item is, in short: `post <id>` or `repost <id> of <original> by
/// <reposter>`.
fn show(item: &TimelineItem) -> String {
    match &item.repost_of {
        None => format!("{} by {}", item.id, item.author),
        Some(of) => format!("{} of {} by {}", item.id, of.id, item.author),
    }
}

/// `reader`'s whole timeline, walked in pages of 2 (so a walk crosses page bounds and
/// the cache's end), as [`show`] lines; checked for no post served twice.
async fn walk(social: &Social, reader: &str) -> Vec<String> {
    let (mut before, mut items) = (None, Vec::new());
    loop {
        let page = social.timeline(reader, before, 2).await.unwrap();
        items.extend(page.items.iter().cloned());
        match page.next_cursor {
            Some(next) => before = Some(next),
            None => break,
        }
    }
    let mut posts: Vec<PostId> = items
        .iter()
        .map(|i| i.repost_of.as_ref().map_or(i.id, |o| o.id))
        .collect();
    let served = posts.len();
    posts.sort_unstable();
    posts.dedup();
    assert_eq!(posts.len(), served, "a post served twice: {items:?}");
    items.iter().map(show).collect()
}

fn repost_line(repost: PostId, original: PostId, reposter: &str) -> String {
    format!("{repost} of {original} by {reposter}")
}

fn post_line(post: PostId, author: &str) -> String {
    format!("{post} by {author}")
}

const FOREVER: MuteRequest = MuteRequest {
    notifications: true,
    duration_ms: None,
};

/// The users of every scenario: `reader` follows `bob` and `cat`, not `ann`, whose
/// post `bob` reposts.
async fn cast(social: &Social) {
    for id in ["reader", "ann", "bob", "cat"] {
        social.create_user(id, &id.to_uppercase()).await.unwrap();
    }
    for followee in ["bob", "cat"] {
        social.follow("reader", followee).await.unwrap();
    }
}

#[tokio::test]
async fn a_repost_is_served_to_followers_and_goes_with_its_unrepost_and_its_original() {
    for kind in kinds("a_repost_is_served_to_followers") {
        for strategy in FeedStrategy::ALL {
            let t = fresh_store(kind).await;
            let social = social(&t.store, &settings(strategy));
            cast(&social).await;
            let at = format!("{kind:?} {strategy}");
            // The reader's cache exists before the repost (the fan-out's path).
            walk(&social, "reader").await;
            let original = social.post("ann", "worth passing on").await.unwrap().id;
            let (reposted, _) = social.repost("bob", original).await.unwrap();
            let repost = reposted.repost.id;
            let page = social.timeline("reader", None, 10).await.unwrap();
            assert_eq!(page.items.len(), 1, "{at}: {page:?}");
            let item = &page.items[0];
            assert_eq!(item.id, repost, "{at}: under the repost's id");
            assert_eq!(item.author, "bob", "{at}");
            assert_eq!(item.author_display_name, "BOB", "{at}");
            assert_eq!(item.text, "worth passing on", "{at}");
            let of = item.repost_of.as_ref().expect("a repost item");
            assert_eq!(
                (of.id, of.author.as_str(), of.author_display_name.as_str()),
                (original, "ann", "ANN"),
                "{at}"
            );
            // The reposter's own timeline holds it too.
            assert_eq!(
                walk(&social, "bob").await,
                [repost_line(repost, original, "bob")],
                "{at}"
            );

            // An unrepost takes it away at once.
            social.unrepost("bob", original).await.unwrap();
            assert_eq!(walk(&social, "reader").await, Vec::<String>::new(), "{at}");
            assert_eq!(walk(&social, "bob").await, Vec::<String>::new(), "{at}");

            // So does the original's delete.
            let (again, _) = social.repost("bob", original).await.unwrap();
            assert_eq!(
                walk(&social, "reader").await,
                [repost_line(again.repost.id, original, "bob")],
                "{at}"
            );
            social.delete_post(original).await.unwrap();
            assert_eq!(walk(&social, "reader").await, Vec::<String>::new(), "{at}");
        }
    }
}

#[tokio::test]
async fn a_follow_brings_the_followees_reposts_and_an_unfollow_takes_them() {
    for kind in kinds("a_follow_brings_the_followees_reposts") {
        for strategy in FeedStrategy::ALL {
            let t = fresh_store(kind).await;
            let social = social(&t.store, &settings(strategy));
            for id in ["reader", "ann", "dan"] {
                social.create_user(id, id).await.unwrap();
            }
            let at = format!("{kind:?} {strategy}");
            walk(&social, "reader").await;
            let original = social.post("ann", "older").await.unwrap().id;
            let (reposted, _) = social.repost("dan", original).await.unwrap();
            social.follow("reader", "dan").await.unwrap();
            assert_eq!(
                walk(&social, "reader").await,
                [repost_line(reposted.repost.id, original, "dan")],
                "{at}"
            );
            social.unfollow("reader", "dan").await.unwrap();
            assert_eq!(walk(&social, "reader").await, Vec::<String>::new(), "{at}");
        }
    }
}

#[tokio::test]
async fn blocks_and_mutes_of_the_reposter_or_the_original_author_hide_a_repost() {
    for kind in kinds("blocks_and_mutes_hide_a_repost") {
        for strategy in FeedStrategy::ALL {
            let t = fresh_store(kind).await;
            let social = social(&t.store, &settings(strategy));
            cast(&social).await;
            let at = format!("{kind:?} {strategy}");
            walk(&social, "reader").await;
            let original = social.post("ann", "passed on").await.unwrap().id;
            let (reposted, _) = social.repost("bob", original).await.unwrap();
            let shown = vec![repost_line(reposted.repost.id, original, "bob")];
            assert_eq!(walk(&social, "reader").await, shown, "{at}");
            for hidden in ["bob", "ann"] {
                social.mute("reader", hidden, FOREVER).await.unwrap();
                assert_eq!(
                    walk(&social, "reader").await,
                    Vec::<String>::new(),
                    "{at}: {hidden} muted"
                );
                social.unmute("reader", hidden).await.unwrap();
                assert_eq!(walk(&social, "reader").await, shown, "{at}: unmuted");
            }
            // The original's author blocks the reader: the repost goes (blocking the
            // reposter would remove the follow, which hides it anyway).
            social.block("ann", "reader").await.unwrap();
            assert_eq!(
                walk(&social, "reader").await,
                Vec::<String>::new(),
                "{at}: ann blocks the reader"
            );
            social.unblock("ann", "reader").await.unwrap();
            assert_eq!(walk(&social, "reader").await, shown, "{at}: unblocked");
        }
    }
}

#[tokio::test]
async fn each_post_is_served_once_the_original_first_else_the_first_repost() {
    for kind in kinds("each_post_is_served_once") {
        for strategy in FeedStrategy::ALL {
            let t = fresh_store(kind).await;
            let social = social(&t.store, &settings(strategy));
            cast(&social).await;
            social.create_user("eve", "EVE").await.unwrap();
            social.follow("reader", "eve").await.unwrap();
            let at = format!("{kind:?} {strategy}");
            walk(&social, "reader").await;
            // A followee's post reposted by another followee: the original only.
            let followed = social.post("eve", "by a followee").await.unwrap().id;
            social.repost("bob", followed).await.unwrap();
            assert_eq!(
                walk(&social, "reader").await,
                [post_line(followed, "eve")],
                "{at}: the original wins"
            );
            social.unrepost("bob", followed).await.unwrap();

            // Two followees repost a post of someone the reader does not follow: the
            // first to arrive only, and the second once the first is undone.
            let original = social.post("ann", "twice passed on").await.unwrap().id;
            let (first, _) = social.repost("bob", original).await.unwrap();
            let (second, _) = social.repost("cat", original).await.unwrap();
            let mut expected = vec![
                repost_line(first.repost.id, original, "bob"),
                post_line(followed, "eve"),
            ];
            assert_eq!(walk(&social, "reader").await, expected, "{at}: first wins");
            social.unrepost("bob", original).await.unwrap();
            expected[0] = repost_line(second.repost.id, original, "cat");
            assert_eq!(walk(&social, "reader").await, expected, "{at}: then cat's");
            // Following the original's author makes the original win at once.
            social.follow("reader", "ann").await.unwrap();
            expected[0] = post_line(original, "ann");
            expected.sort_unstable_by(|a, b| b.cmp(a));
            assert_eq!(walk(&social, "reader").await, expected, "{at}: then ann's");
        }
    }
}

fn render(page: TimelinePage) -> anyhow::Result<Bytes> {
    let items: Vec<String> = page.items.iter().map(show).collect();
    Ok(serde_json::to_vec(&items)?.into())
}

/// `reader`'s first page of 2 as served through the kept pages (read twice, so the
/// second may be kept), checked against a fresh read.
async fn kept(social: &Social, reader: &str, step: &str) -> Vec<String> {
    let mut served = Vec::new();
    for _ in 0..2 {
        let body = social
            .rendered_timeline(reader, None, 2, render)
            .await
            .unwrap();
        served = serde_json::from_slice::<Vec<String>>(&body).unwrap();
    }
    let fresh = social.timeline(reader, None, 2).await.unwrap();
    let fresh: Vec<String> = fresh.items.iter().map(show).collect();
    assert_eq!(
        served, fresh,
        "{step}: a kept page differs from a fresh read"
    );
    served
}

/// A kept page is never served past a change of what its reposts may show, even one
/// that writes nothing the reader's cache holds: the first repost of a post, below the
/// cache, undone, lets a later one in the page be served.
#[tokio::test]
async fn a_kept_page_is_never_served_past_a_change_of_its_reposts() {
    for kind in kinds("a_kept_page_is_never_served_past_a_change_of_its_reposts") {
        for strategy in [FeedStrategy::Cache, FeedStrategy::Hybrid] {
            let t = fresh_store(kind).await;
            let settings = FeedSettings {
                cache_size: 5,
                ..settings(strategy)
            };
            let social = social(&t.store, &settings);
            cast(&social).await;
            let at = format!("{kind:?} {strategy}");
            let original = social.post("ann", "passed on").await.unwrap().id;
            let (first, _) = social.repost("bob", original).await.unwrap();
            let mut filler = Vec::new();
            for n in 0..5 {
                filler.push(social.post("cat", &format!("filler {n}")).await.unwrap().id);
            }
            // The cache is built now: bob's repost lies below its 5 entries, and the
            // pages below are read whole from it (so they may be kept).
            kept(&social, "reader", &at).await;
            let (second, _) = social.repost("cat", original).await.unwrap();
            let page = kept(&social, "reader", &at).await;
            assert_eq!(
                page,
                [post_line(filler[4], "cat"), post_line(filler[3], "cat")],
                "{at}: cat's repost is not the first"
            );
            social.unrepost("bob", original).await.unwrap();
            let page = kept(&social, "reader", &at).await;
            assert_eq!(
                page,
                [
                    repost_line(second.repost.id, original, "cat"),
                    post_line(filler[4], "cat")
                ],
                "{at}: cat's repost is the first now"
            );
            assert!(first.repost.id < second.repost.id);
            // An unrepost of a repost a kept page shows.
            social.unrepost("cat", original).await.unwrap();
            let page = kept(&social, "reader", &at).await;
            assert_eq!(
                page,
                [post_line(filler[4], "cat"), post_line(filler[3], "cat")],
                "{at}: unreposted"
            );
        }
    }
}
