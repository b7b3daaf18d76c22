//! Accounts by id, lookup, follow, block and mute with the Relationship each leaves,
//! the batched relationships, the follow, block and mute lists with their `Link` walks,
//! and update_credentials.

use reqwest::{Method, StatusCode};
use serde_json::Value;

use super::{Answer, Client, servers};

pub(super) fn ids(body: &Value) -> Vec<String> {
    body.as_array()
        .unwrap()
        .iter()
        .map(|v| v["id"].as_str().unwrap().to_owned())
        .collect()
}

/// The `next` URL of a `Link` header, which must come first.
fn next_link(answer: &Answer) -> Option<String> {
    let link = answer.header("link")?;
    let rest = link.strip_prefix('<')?;
    let (url, rel) = rest.split_once('>')?;
    rel.starts_with("; rel=\"next\"").then(|| url.to_owned())
}

/// Every page of a list, through its `Link` headers: the ids in order.
pub(super) async fn walk(client: &Client, first: &str, token: &str) -> Vec<String> {
    let mut all = Vec::new();
    let mut answer = client.get(first, Some(token)).await;
    for _ in 0..20 {
        all.extend(ids(&answer.expect(StatusCode::OK)));
        let Some(next) = next_link(&answer) else {
            return all;
        };
        let path = next
            .strip_prefix(&client.base)
            .expect("links name this server");
        answer = client.get(path, Some(token)).await;
    }
    panic!("{first}: more than 20 pages");
}

fn relationship_flags(r: &Value) -> [bool; 6] {
    [
        "following",
        "followed_by",
        "blocking",
        "blocked_by",
        "muting",
        "muting_notifications",
    ]
    .map(|k| r[k].as_bool().unwrap_or_else(|| panic!("{k} in {r}")))
}

#[tokio::test]
async fn accounts_lookup_follow_block_mute_and_relationships() {
    for (kind, server) in servers("accounts", |_| {}).await {
        let client = Client::of(&server);
        let ann = client.user("ann", Some("ann's password")).await;
        let bob = client.user("bob", None).await;
        let _cat = client.user("cat", None).await;
        let domain = client.base.trim_start_matches("http://").to_owned();

        let account = client.get("/api/v1/accounts/bob", None).await;
        let account = account.expect(StatusCode::OK);
        assert_eq!(
            (&account["id"], &account["acct"], &account["username"]),
            (
                &Value::from("bob"),
                &Value::from("bob"),
                &Value::from("bob")
            )
        );
        for path in ["/api/v1/accounts/nobody", "/api/v1/accounts/no%20such"] {
            let missing = client.get(path, None).await.expect(StatusCode::NOT_FOUND);
            assert!(missing["error"].is_string(), "{kind:?} {path}");
        }
        for acct in ["bob", "@bob", &format!("bob@{domain}")] {
            let path = format!("/api/v1/accounts/lookup?acct={acct}");
            let found = client.get(&path, None).await.expect(StatusCode::OK);
            assert_eq!(found["id"], "bob", "{kind:?} {acct}");
        }
        let elsewhere = client.get("/api/v1/accounts/lookup?acct=bob@elsewhere.example", None);
        elsewhere.await.expect(StatusCode::NOT_FOUND);

        // Follows both ways, then the batched read, in the order asked.
        let followed = client
            .post("/api/v1/accounts/bob/follow", Some(&ann), &[])
            .await;
        let followed = followed.expect(StatusCode::OK);
        assert_eq!(followed["id"], "bob");
        assert_eq!(
            relationship_flags(&followed),
            [true, false, false, false, false, false]
        );
        client
            .post("/api/v1/accounts/ann/follow", Some(&bob), &[])
            .await
            .expect(StatusCode::OK);
        let batch = client
            .get(
                "/api/v1/accounts/relationships?id[]=cat&id[]=nobody&id[]=bob&id[]=cat",
                Some(&ann),
            )
            .await
            .expect(StatusCode::OK);
        assert_eq!(
            ids(&batch),
            ["cat", "bob"],
            "{kind:?}: unknown and repeated ids left out"
        );
        assert_eq!(relationship_flags(&batch[0]), [false; 6]);
        assert_eq!(
            relationship_flags(&batch[1]),
            [true, true, false, false, false, false]
        );
        let single = client
            .get("/api/v1/accounts/relationships?id=bob", Some(&ann))
            .await;
        assert_eq!(ids(&single.expect(StatusCode::OK)), ["bob"]);

        // A mute for an hour that leaves notifications shown.
        let muted = client
            .post(
                "/api/v1/accounts/cat/mute",
                Some(&ann),
                &[("notifications", "false"), ("duration", "3600")],
            )
            .await
            .expect(StatusCode::OK);
        assert_eq!(
            relationship_flags(&muted),
            [false, false, false, false, true, false]
        );
        let bad = client
            .post(
                "/api/v1/accounts/cat/mute",
                Some(&ann),
                &[("duration", "soon")],
            )
            .await;
        bad.expect(StatusCode::UNPROCESSABLE_ENTITY);

        // A block removes the follows both ways; each side sees its direction.
        let blocked = client
            .post("/api/v1/accounts/bob/block", Some(&ann), &[])
            .await;
        let blocked = blocked.expect(StatusCode::OK);
        assert_eq!(
            relationship_flags(&blocked),
            [false, false, true, false, false, false]
        );
        let seen_by_bob = client
            .get("/api/v1/accounts/relationships?id[]=ann", Some(&bob))
            .await
            .expect(StatusCode::OK);
        assert_eq!(
            relationship_flags(&seen_by_bob[0]),
            [false, false, false, true, false, false]
        );
        let refused = client
            .post("/api/v1/accounts/ann/follow", Some(&bob), &[])
            .await;
        refused.expect(StatusCode::FORBIDDEN);
        // A mute behind a block still shows.
        let both = client
            .post("/api/v1/accounts/bob/mute", Some(&ann), &[])
            .await;
        assert_eq!(
            relationship_flags(&both.expect(StatusCode::OK)),
            [false, false, true, false, true, true]
        );

        // The lists, newest first, one account a page.
        assert_eq!(walk(&client, "/api/v1/blocks?limit=1", &ann).await, ["bob"]);
        assert_eq!(
            walk(&client, "/api/v1/mutes?limit=1", &ann).await,
            ["bob", "cat"]
        );
        let bad_cursor = client
            .get("/api/v1/mutes?max_id=nonsense", Some(&ann))
            .await;
        bad_cursor.expect(StatusCode::UNPROCESSABLE_ENTITY);

        let unblocked = client
            .post("/api/v1/accounts/bob/unblock", Some(&ann), &[])
            .await;
        let unblocked = unblocked.expect(StatusCode::OK);
        assert_eq!(
            relationship_flags(&unblocked),
            [false, false, false, false, true, true]
        );
        let unmuted = client
            .post("/api/v1/accounts/bob/unmute", Some(&ann), &[])
            .await;
        assert_eq!(
            relationship_flags(&unmuted.expect(StatusCode::OK)),
            [false; 6]
        );
        let unfollowed = client
            .post("/api/v1/accounts/bob/unfollow", Some(&ann), &[])
            .await;
        unfollowed.expect(StatusCode::OK);
        let missing = client
            .post("/api/v1/accounts/nobody/block", Some(&ann), &[])
            .await;
        missing.expect(StatusCode::NOT_FOUND);
        let own = client
            .post("/api/v1/accounts/ann/follow", Some(&ann), &[])
            .await;
        own.expect(StatusCode::UNPROCESSABLE_ENTITY);

        // Scopes: a read-only token reads relationships and cannot follow or block.
        let read = client.scoped_token("ann", "ann's password", "read").await;
        client
            .get("/api/v1/accounts/relationships?id[]=bob", Some(&read))
            .await
            .expect(StatusCode::OK);
        for path in ["/api/v1/accounts/bob/follow", "/api/v1/accounts/bob/block"] {
            client
                .post(path, Some(&read), &[])
                .await
                .expect(StatusCode::FORBIDDEN);
        }
        let follow_only = client
            .scoped_token("ann", "ann's password", "write:follows")
            .await;
        let blocked = client.post("/api/v1/accounts/bob/mute", Some(&follow_only), &[]);
        blocked.await.expect(StatusCode::FORBIDDEN);
        client
            .post("/api/v1/accounts/bob/follow", Some(&follow_only), &[])
            .await
            .expect(StatusCode::OK);
        server.stop().await;
    }
}

#[tokio::test]
async fn follow_lists_walk_by_link_and_credentials_update() {
    for (kind, server) in servers("follow lists", |_| {}).await {
        let client = Client::of(&server);
        let ann = client.user("ann", None).await;
        let mut followers = Vec::new();
        for id in ["bo", "cy", "di"] {
            let token = client.user(id, None).await;
            let path = "/api/v1/accounts/ann/follow";
            client
                .post(path, Some(&token), &[])
                .await
                .expect(StatusCode::OK);
            followers.push(id.to_owned());
        }
        let walked = walk(&client, "/api/v1/accounts/ann/followers?limit=2", &ann).await;
        assert_eq!(walked, followers, "{kind:?}");
        let walked = walk(&client, "/api/v1/accounts/bo/following?limit=1", &ann).await;
        assert_eq!(walked, ["ann"]);
        // Ahead of a cursor: lower ids on a list by id ascending.
        let newer = client.get("/api/v1/accounts/ann/followers?since_id=cy", None);
        assert_eq!(ids(&newer.await.expect(StatusCode::OK)), ["bo"], "{kind:?}");
        client
            .get("/api/v1/accounts/nobody/followers", None)
            .await
            .expect(StatusCode::NOT_FOUND);

        let renamed = client
            .multipart(
                Method::PATCH,
                "/api/v1/accounts/update_credentials",
                Some(&ann),
                &[
                    ("display_name", "Ann A."),
                    ("note", "ignored"),
                    ("locked", "false"),
                ],
                None,
            )
            .await
            .expect(StatusCode::OK);
        assert_eq!(renamed["display_name"], "Ann A.");
        assert_eq!(renamed["source"]["privacy"], "public");
        let me = client
            .get("/api/v1/accounts/verify_credentials", Some(&ann))
            .await;
        let me = me.expect(StatusCode::OK);
        assert_eq!(me["display_name"], "Ann A.", "{kind:?}");
        assert_eq!(me["followers_count"], 3);
        let empty = client
            .form(
                Method::PATCH,
                "/api/v1/accounts/update_credentials",
                Some(&ann),
                &[("display_name", "")],
            )
            .await;
        empty.expect(StatusCode::UNPROCESSABLE_ENTITY);
        server.stop().await;
    }
}
