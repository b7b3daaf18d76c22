//! Reads: fanout on read over many followees, and (real MongoDB only) the plans of
//! bucket reads and rollovers.

use futures::TryStreamExt;
use socialite::domain::{BucketKind, FeedStrategy, PostId};

use crate::common::{self, fresh_store, kinds};
use crate::{entries, names, newest_first, settings, social, users_following, walk};

#[tokio::test]
async fn fanout_on_read_merges_more_than_300_followees() {
    for kind in kinds("fanout_on_read_merges_more_than_300_followees") {
        let t = fresh_store(kind).await;
        let social = social(&t.store, &settings(FeedStrategy::FanoutOnRead, true));
        let authors = names("a", 320);
        users_following(
            &t.store,
            &["reader".to_owned(), "stranger".to_owned()],
            None,
        )
        .await;
        users_following(&t.store, &authors, None).await;
        for author in &authors {
            t.store.graph.follow("reader", author, 0).await.unwrap();
        }
        // Posts in an order that interleaves every batch of 100 authors.
        let mut expected = Vec::new();
        for i in 0..400 {
            let author = &authors[(i * 37) % authors.len()];
            expected.push(social.post(author, &format!("p{i}")).await.unwrap().id);
        }
        expected.push(social.post("reader", "mine").await.unwrap().id);
        social.post("stranger", "not followed").await.unwrap();
        let expected = newest_first(expected);
        assert_eq!(walk(&social, "reader", 25).await, expected, "{kind:?}");
        let page = social
            .timeline("reader", Some(expected[99]), 7)
            .await
            .unwrap();
        let ids: Vec<PostId> = page.items.iter().map(|i| i.id).collect();
        assert_eq!(ids, expected[100..107], "{kind:?}: a page below a cursor");
    }
}

/// Real MongoDB only. The profiler records the plans of the adapter's own operations:
/// no bucket read sorts in memory, and a rollover past five full buckets examines at
/// most two documents per operation.
#[tokio::test]
async fn bucket_reads_and_rollovers_use_indexes_on_real_mongodb() {
    use mongodb::bson::{Bson, Document, doc};
    let Some((db, uri)) = common::real_mongodb("explain", "explain checks").await else {
        return;
    };
    let store = socialite::store::mongo::connect(&uri).await;
    let (timelines, u) = (&store.unwrap().timelines, vec!["u".to_owned()]);
    let e = entries(1_700_000_000_000, 11);
    for entry in &e[..10] {
        timelines
            .sized_push(&u, std::slice::from_ref(entry), 2)
            .await
            .unwrap();
    }
    for chunk in e.chunks(3) {
        timelines.timed_push(&u, 1, chunk, 3).await.unwrap();
    }
    db.run_command(doc! { "profile": 2 }).await.unwrap();
    timelines.sized_push(&u, &e[10..], 2).await.unwrap();
    for kind in [BucketKind::Sized, BucketKind::Timed] {
        timelines.buckets(kind, "u", None, 0, 2, 10).await.unwrap();
        timelines
            .buckets(kind, "u", Some(e[6].id), 1, 2, 10)
            .await
            .unwrap();
    }
    db.run_command(doc! { "profile": 0 }).await.unwrap();
    let profile = db.collection::<Document>("system.profile");
    let ops: Vec<Document> = profile
        .find(doc! { "ns": { "$regex": "_buckets$" } })
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    let number = |op: &Document, key| match op.get(key) {
        Some(Bson::Int32(n)) => i64::from(*n),
        Some(Bson::Int64(n)) => *n,
        _ => 0,
    };
    let is_read = |op: &Document| {
        op.get_document("command")
            .and_then(|c| c.get_document("sort"))
            .is_ok_and(|sort| sort.contains_key("mx"))
    };
    assert_eq!(ops.iter().filter(|op| is_read(op)).count(), 4, "{ops:#?}");
    assert!(
        ops.iter().any(|op| op.get_str("op") == Ok("insert")),
        "{ops:#?}"
    );
    for op in &ops {
        assert_ne!(
            op.get_bool("hasSortStage"),
            Ok(true),
            "an in-memory sort: {op:#?}"
        );
        if is_read(op) {
            assert!(
                op.get_str("planSummary").unwrap_or("").contains("IXSCAN"),
                "{op:#?}"
            );
        } else {
            assert!(number(op, "docsExamined") <= 2, "a rollover scan: {op:#?}");
        }
    }
}
