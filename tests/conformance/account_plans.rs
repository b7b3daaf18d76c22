//! (Real MongoDB only) the plans of the account reads, as the profiler records them: the
//! account search's `accounts_by_prefix` and the pages' `accounts` read each profile once
//! and find each user's newest post and repost by a seek of its index, never a scan.

use futures::TryStreamExt;
use mongodb::bson::{Bson, Document, doc};
use socialite::domain::now_ms;

use crate::common;

/// Posts each user writes, and reposts each makes: enough that reading a user's whole
/// range of either index examines more keys than the bound on a seek per user.
const EACH: usize = 10;

/// A count the profiler recorded (absent: 0).
fn number(doc: &Document, key: &str) -> i64 {
    match doc.get(key) {
        Some(Bson::Int32(n)) => i64::from(*n),
        Some(Bson::Int64(n)) => *n,
        _ => 0,
    }
}

/// How many users an operation asked about: the length of the `$in` of its filter (a
/// find's, or its pipeline's first `$match`), else its limit (the range find).
fn asked(op: &Document) -> i64 {
    let command = op.get_document("command").unwrap();
    let filter = match command.get_array("pipeline") {
        Ok(pipeline) => pipeline[0]
            .as_document()
            .and_then(|stage| stage.get_document("$match").ok())
            .unwrap(),
        Err(_) => command.get_document("filter").unwrap(),
    };
    let (_, condition) = filter.iter().next().unwrap();
    match condition.as_document().map(|c| c.get_array("$in")) {
        Some(Ok(ids)) => ids.len() as i64,
        _ => number(command, "limit"),
    }
}

/// The collection an operation read and how: `find` or `aggregate`.
fn read_of(op: &Document) -> (String, &'static str) {
    let command = op.get_document("command").unwrap();
    let kind = ["find", "aggregate"]
        .into_iter()
        .find(|kind| command.contains_key(kind))
        .unwrap_or("other");
    let ns = op.get_str("ns").unwrap();
    (ns.split_once('.').unwrap().1.to_owned(), kind)
}

/// Real MongoDB only. With the profiler on, an `accounts_by_prefix` and an `accounts`
/// read: one find of the profiles each and one aggregation of the posts and one of the
/// reposts each, nothing more; none scans a collection or sorts in memory; each examines
/// at most one document per user asked about and a few keys per user.
#[tokio::test]
async fn account_reads_use_indexes_on_real_mongodb() {
    let Some((db, uri)) = common::real_mongodb("account_plans", "profiler checks").await else {
        return;
    };
    let store = socialite::store::mongo::connect(&uri).await.unwrap();
    for id in ["pa", "pb", "pc", "pd", "qa"] {
        common::create_user(&store, id).await;
    }
    // `pa`, `pb` and `qa` post; then each reposts every post of the next (`pc`, `pd`:
    // none), so every repost is newer than every post.
    let posters = ["pa", "pb", "qa"];
    let mut posts = Vec::new();
    for author in posters {
        let mut own = Vec::new();
        for _ in 0..EACH {
            let inserted = store.content.insert_post(author, "hi", None, now_ms());
            own.push(inserted.await.unwrap().post.id);
        }
        posts.push(own);
    }
    let mut newest = Vec::new();
    for (i, user) in posters.iter().enumerate() {
        for post in &posts[(i + 1) % posters.len()] {
            let reposted = store.reposts.repost(user, *post, now_ms()).await.unwrap();
            newest.push(reposted.repost.id);
        }
    }
    db.run_command(doc! { "profile": 2 }).await.unwrap();
    let by_prefix = store.users.accounts_by_prefix("p", 2).await.unwrap();
    let ids = ["pa", "qa", "nobody"].map(String::from);
    let mut by_ids = store.users.accounts(&ids).await.unwrap();
    db.run_command(doc! { "profile": 0 }).await.unwrap();

    let last = |found: &[socialite::domain::AccountView]| {
        found
            .iter()
            .map(|a| (a.user.id.clone(), a.last_status))
            .collect::<Vec<_>>()
    };
    let (pa, pb, qa) = (
        Some(newest[EACH - 1]),
        Some(newest[2 * EACH - 1]),
        Some(newest[3 * EACH - 1]),
    );
    assert_eq!(
        last(&by_prefix),
        [("pa".to_owned(), pa), ("pb".to_owned(), pb)]
    );
    by_ids.sort_by(|a, b| a.user.id.cmp(&b.user.id));
    assert_eq!(
        last(&by_ids),
        [("pa".to_owned(), pa), ("qa".to_owned(), qa)]
    );

    let read: Vec<String> = ["users", "content", "reposts"]
        .iter()
        .map(|coll| format!("{}.{coll}", db.name()))
        .collect();
    let ops: Vec<Document> = db
        .collection::<Document>("system.profile")
        .find(doc! { "ns": { "$in": read } })
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    let mut reads: Vec<(String, &str)> = ops.iter().map(read_of).collect();
    reads.sort();
    let expected = [
        ("content", "aggregate"),
        ("content", "aggregate"),
        ("reposts", "aggregate"),
        ("reposts", "aggregate"),
        ("users", "find"),
        ("users", "find"),
    ];
    let expected: Vec<(String, &str)> = expected
        .iter()
        .map(|(coll, kind)| ((*coll).to_owned(), *kind))
        .collect();
    assert_eq!(reads, expected, "{ops:#?}");
    for op in &ops {
        let plan = op.get_str("planSummary").unwrap_or("");
        assert!(
            !plan.is_empty() && !plan.contains("COLLSCAN"),
            "a scan: {op:#?}"
        );
        assert_ne!(
            op.get_bool("hasSortStage"),
            Ok(true),
            "an in-memory sort: {op:#?}"
        );
        let users = asked(op);
        assert!((1..=3).contains(&users), "{op:#?}");
        assert!(
            number(op, "docsExamined") <= users,
            "more documents than users: {op:#?}"
        );
        assert!(
            number(op, "keysExamined") <= 3 * users + 2,
            "more than a seek per user: {op:#?}"
        );
    }
}
