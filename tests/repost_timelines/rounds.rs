//! Seen-once across a page's read rounds, proven deterministically: a page that needs a
//! second round (its first one's entries mostly hidden) is held between the two
//! (`faults::gate("page.round")`) while the reader follows the author of a post the
//! first round served as a repost; the second round then finds the original itself.
//! The page still shows the post once (the checker's fixed seed 5 found it twice, as
//! a repost and as itself, under `hybrid`, before `2dda7a6`).

use std::sync::Arc;

use socialite::domain::{FeedStrategy, PostId};
use socialite::faults;

use super::common::{fresh_store, kinds};
use super::{FOREVER, settings, social};

#[tokio::test]
async fn a_follow_between_a_pages_rounds_does_not_show_a_post_twice() {
    for kind in kinds("a_follow_between_a_pages_rounds_does_not_show_a_post_twice") {
        for strategy in FeedStrategy::ALL {
            let at = format!("{kind:?} {strategy}");
            let t = fresh_store(kind).await;
            let social = Arc::new(social(&t.store, &settings(strategy)));
            // A reader name of its own per run: the gate is keyed by the reader.
            let reader = format!("r_{kind:?}_{strategy}").replace('-', "_");
            for id in [reader.as_str(), "ann", "bob", "cat"] {
                social.create_user(id, id).await.unwrap();
            }
            for followee in ["bob", "cat"] {
                social.follow(&reader, followee).await.unwrap();
            }
            social.mute(&reader, "cat", FOREVER).await.unwrap();
            // Newest first, the reader's entries: bob's repost of ann's post, then four
            // of cat's (muted), then nothing of ann's (not followed yet).
            let original = social.post("ann", "the original").await.unwrap().id;
            for n in 0..4 {
                social.post("cat", &format!("muted {n}")).await.unwrap();
            }
            let (reposted, _) = social.repost("bob", original).await.unwrap();
            let repost = reposted.repost.id;
            // The reader's cache is built before the page under test.
            social.timeline(&reader, None, 1).await.unwrap();

            let gate = faults::hold("page.round", &reader);
            let read = {
                let (social, reader) = (social.clone(), reader.clone());
                tokio::spawn(async move { social.timeline(&reader, None, 3).await })
            };
            gate.reached.notified().await;
            // Between the rounds: the reader follows the original's author (the follow
            // backfills ann's post where timelines are materialised).
            social.follow(&reader, "ann").await.unwrap();
            gate.release.notify_one();
            let page = read.await.unwrap().unwrap();
            let shown: Vec<(PostId, Option<PostId>)> = page
                .items
                .iter()
                .map(|i| (i.id, i.repost_of.as_ref().map(|o| o.id)))
                .collect();
            let originals = shown
                .iter()
                .filter(|(id, of)| of.unwrap_or(*id) == original)
                .count();
            assert_eq!(originals, 1, "{at}: the post once: {shown:?}");
            assert_eq!(
                shown[0],
                (repost, Some(original)),
                "{at}: the first round's choice stands: {shown:?}"
            );
        }
    }
}
