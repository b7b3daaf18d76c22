//! Search of accounts by display-name words: prefix of a word, any case, exact id
//! matches first, and a rename's old words no longer found.

use reqwest::{Method, StatusCode};
use serde_json::Value;

use super::{Client, servers};

fn ids(found: &Value) -> Vec<String> {
    found["accounts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["id"].as_str().unwrap().to_owned())
        .collect()
}

async fn rename(client: &Client, token: &str, name: &str) {
    let fields = [("display_name", name)];
    let path = "/api/v1/accounts/update_credentials";
    let answer = client.form(Method::PATCH, path, Some(token), &fields).await;
    assert_eq!(answer.expect(StatusCode::OK)["display_name"], name);
}

#[tokio::test]
async fn search_finds_accounts_by_display_name_words_and_forgets_old_names() {
    for (kind, server) in servers("name search", |_| {}).await {
        let client = Client::of(&server);
        let ann = client.user("ann", None).await;
        let al = client.user("al", None).await;
        let zed = client.user("zed", None).await;
        rename(&client, &ann, "Alice Liddell").await;
        rename(&client, &zed, "Zoë Alison").await;
        rename(&client, &al, "Bob").await;
        let search = |q: &str| {
            let path = format!("/api/v2/search?type=accounts&q={q}");
            let client = &client;
            let ann = ann.clone();
            async move { client.get(&path, Some(&ann)).await.expect(StatusCode::OK) }
        };
        assert_eq!(ids(&search("lidd").await), ["ann"], "{kind:?}");
        assert_eq!(ids(&search("LIDD").await), ["ann"], "{kind:?}: any case");
        assert_eq!(ids(&search("zo%C3%AB").await), ["zed"], "{kind:?}: Unicode");
        assert!(
            ids(&search("iddell").await).is_empty(),
            "{kind:?}: a word's start"
        );
        // The id prefix first (`al`, exact), then names by (word, id): `alice` of ann,
        // `alison` of zed.
        assert_eq!(ids(&search("al").await), ["al", "ann", "zed"], "{kind:?}");
        assert_eq!(
            ids(&search("ali%20lid").await),
            ["ann"],
            "{kind:?}: every word"
        );
        // Found under its longest word (`alison`, zed's), a hit must match every word.
        assert!(
            ids(&search("alison%20lidd").await).is_empty(),
            "{kind:?}: every word, checked against the name"
        );
        // A name hit is rendered with its last status, from the same read.
        let hi = client.post("/api/v1/statuses", Some(&zed), &[("status", "hi")]);
        hi.await.expect(StatusCode::OK);
        let found = search("alis").await;
        assert_eq!(ids(&found), ["zed"], "{kind:?}");
        assert!(
            found["accounts"][0]["last_status_at"].is_string(),
            "{kind:?}: {found}"
        );
        let one = client.get("/api/v2/search?type=accounts&q=ali&limit=1", Some(&ann));
        assert_eq!(ids(&one.await.expect(StatusCode::OK)), ["ann"], "{kind:?}");

        rename(&client, &ann, "Ann Hathaway").await;
        assert!(
            ids(&search("lidd").await).is_empty(),
            "{kind:?}: old words gone"
        );
        assert_eq!(
            ids(&search("hath").await),
            ["ann"],
            "{kind:?}: new words found"
        );
        server.settle().await;
        assert!(
            ids(&search("lidd").await).is_empty(),
            "{kind:?}: after the workers"
        );
        server.stop().await;
    }
}
