//! What the embedded bulk load writes to the event log for the reposts test.

use socialite::domain::PostId;

use super::super::common::Api;

/// The embedded load's event log (MongoDB's capped log is not rebuilt): one
/// `post.reposted` per loaded repost, naming the repost, its reposter, the post and its
/// author, as the events worker writes them, and the reply's `post.created` naming what
/// it answers.
pub async fn assert_loaded_log(api: &Api, p: &impl Fn(i64) -> PostId, given: PostId, label: &str) {
    let (_, page) = api.get("/v1/events?limit=1000").await;
    let events = page["events"].as_array().unwrap();
    let of = |kind: &str| -> Vec<&serde_json::Value> {
        events.iter().filter(|e| e["type"] == kind).collect()
    };
    assert_eq!(of("post.created").len(), 4, "{label}: {page}");
    let mut reposted: Vec<(String, String, String)> = of("post.reposted")
        .iter()
        .map(|e| {
            let d = &e["payload"];
            assert!(d["repost"].is_string(), "{label}: {e}");
            let field = |k: &str| d[k].as_str().unwrap_or_default().to_owned();
            (field("user"), field("post"), field("author"))
        })
        .collect();
    reposted.sort();
    let pair = |u: &str, k: i64, a: &str| (u.to_owned(), p(k).to_string(), a.to_owned());
    assert_eq!(
        reposted,
        vec![
            pair("ann", 2, "ann"),
            pair("bob", 1, "ann"),
            pair("cat", 1, "ann"),
            pair("cat", 3, "bob"),
        ],
        "{label}: {page}"
    );
    let with_given = of("post.reposted")
        .into_iter()
        .filter(|e| e["payload"]["repost"] == given.to_string())
        .count();
    assert_eq!(with_given, 1, "{label}: the repost's own id: {page}");
    let reply = of("post.created")
        .into_iter()
        .find(|e| e["payload"]["post"] == p(4).to_string())
        .expect("the reply's event");
    assert_eq!(
        reply["payload"]["in_reply_to"]["post"],
        p(3).to_string(),
        "{label}: {reply}"
    );
    assert_eq!(
        reply["payload"]["in_reply_to"]["author"], "bob",
        "{label}: {reply}"
    );
}
