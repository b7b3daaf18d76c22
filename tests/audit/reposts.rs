//! The reposts a timeline must hold: a standing repost taken out of a follower's cache
//! or buckets behind the service's back is named by the audit as missing, and mended by
//! `--repair`; a repost that seen once drops for a reader (the original in their
//! timeline, or an older repost of it) is never required, so its absence is no finding.

use socialite::app::build_state;
use socialite::audit::{self, Kind as Audited};
use socialite::config::Config;
use socialite::domain::{BucketKind, FeedStrategy, TimelineKind};
use socialite::store::Store;

use super::common::kinds;
use super::{assert_clean, audit_of, config, settle_and_stop, skip_the_workers_past_it, world};

/// Reads `user`'s timeline through a fresh process state (its workers stopped after);
/// the ids it serves.
async fn served(config: &Config, store: &Store, user: &str) -> Vec<String> {
    let state = build_state(config, store.clone()).await.unwrap();
    let page = state.social.timeline(user, None, 50).await.unwrap();
    state.workers.stop().await;
    page.items.iter().map(|i| i.id.to_string()).collect()
}

#[tokio::test]
async fn a_repost_missing_from_a_timeline_is_named_and_repaired() {
    for kind in kinds("a_repost_missing_from_a_timeline_is_named_and_repaired") {
        for strategy in [
            FeedStrategy::Cache,
            FeedStrategy::Hybrid,
            FeedStrategy::SizedBuckets,
        ] {
            let label = format!("{kind:?}/{strategy}");
            let (config, _dir) = config(kind, strategy);
            let store = world(&config).await;
            let state = build_state(&config, store.clone()).await.unwrap();
            let social = &state.social;
            // bob follows eve (her only follower, so `hybrid` fans her out), not cat:
            // cat's post reaches him as eve's repost, and eve as her own. bob's repost
            // of it, later, is seen once's to drop for everyone: for bob an older repost
            // of it stands, for ann (who follows cat) and cat the original is served.
            social.follow("bob", "eve").await.unwrap();
            let cat = social.post("cat", "worth passing on").await.unwrap();
            let first = social.repost("eve", cat.id).await.unwrap().0.repost;
            let later = social.repost("bob", cat.id).await.unwrap().0.repost;
            settle_and_stop(&state).await;
            skip_the_workers_past_it(&store).await;
            assert_clean(&audit_of(&store, &config).await, &label);
            let timeline = match strategy {
                FeedStrategy::SizedBuckets => TimelineKind::Buckets(BucketKind::Sized),
                _ => TimelineKind::Cache,
            };

            store
                .timelines
                .remove_post_entries(timeline, later.id)
                .await
                .unwrap();
            skip_the_workers_past_it(&store).await;
            assert_clean(
                &audit_of(&store, &config).await,
                &format!("{label}: a repost seen once drops is not required"),
            );

            store
                .timelines
                .remove_post_entries(timeline, first.id)
                .await
                .unwrap();
            skip_the_workers_past_it(&store).await;
            let report = audit_of(&store, &config).await;
            assert_eq!(
                report.wrong_kinds(),
                [Audited::Timelines],
                "{label}: {report}"
            );
            // bob's and eve's own: no one else's timeline serves it.
            assert_eq!(
                report.wrong_count(Audited::Timelines),
                2,
                "{label}: {report}"
            );
            let what = match strategy {
                FeedStrategy::SizedBuckets => "sized buckets",
                _ => "cache",
            };
            for owner in ["bob", "eve"] {
                let named = format!(
                    "{owner}'s {what} misses repost {} by eve of {} by cat",
                    first.id, cat.id
                );
                assert!(report.to_string().contains(&named), "{label}: {report}");
            }

            let done = audit::repair::repair(&config, &store, &report)
                .await
                .unwrap();
            assert!(!done.is_empty(), "{label}");
            skip_the_workers_past_it(&store).await;
            assert_clean(
                &audit_of(&store, &config).await,
                &format!("{label}, repaired"),
            );
            let items = served(&config, &store, "bob").await;
            assert!(
                items.contains(&first.id.to_string()),
                "{label}: bob is served eve's repost again: {items:?}"
            );
            assert!(!items.contains(&later.id.to_string()), "{label}: {items:?}");
        }
    }
}
