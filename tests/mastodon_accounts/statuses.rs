//! An account's statuses on real servers, both stores: its filters, `Link` walks,
//! `since_id` and `min_id` pages (the page just above an id, newest first, with `prev`
//! naming its newest), also far below the newest, where the page is searched for.

use reqwest::StatusCode;
use serde_json::Value;

use super::accounts::{ids, walk};
use super::{Client, servers};

#[tokio::test]
async fn an_accounts_statuses_filter_replies_and_reblogs_and_walk_by_link() {
    for (kind, server) in servers("account statuses", |_| {}).await {
        let client = Client::of(&server);
        let ann = client.user("ann", None).await;
        let bob = client.user("bob", None).await;
        let post = |token: String, fields: Vec<(&'static str, String)>| {
            let client = &client;
            async move {
                let fields: Vec<(&str, &str)> =
                    fields.iter().map(|(k, v)| (*k, v.as_str())).collect();
                let status = client.post("/api/v1/statuses", Some(&token), &fields).await;
                status.expect(StatusCode::OK)["id"]
                    .as_str()
                    .unwrap()
                    .to_owned()
            }
        };
        let bobs = post(bob.clone(), vec![("status", "bob's".into())]).await;
        let root = post(ann.clone(), vec![("status", "root".into())]).await;
        let own_reply = post(
            ann.clone(),
            vec![("status", "more".into()), ("in_reply_to_id", root.clone())],
        )
        .await;
        let other_reply = post(
            ann.clone(),
            vec![
                ("status", "@bob hi".into()),
                ("in_reply_to_id", bobs.clone()),
            ],
        )
        .await;
        let reblog = client
            .post(&format!("/api/v1/statuses/{bobs}/reblog"), Some(&ann), &[])
            .await
            .expect(StatusCode::OK);
        let reblog = reblog["id"].as_str().unwrap().to_owned();
        let last = post(ann.clone(), vec![("status", "last".into())]).await;

        let all = walk(&client, "/api/v1/accounts/ann/statuses?limit=2", &bob).await;
        assert_eq!(
            all,
            [&last, &reblog, &other_reply, &own_reply, &root].map(String::clone),
            "{kind:?}: newest first"
        );
        let no_replies = walk(
            &client,
            "/api/v1/accounts/ann/statuses?limit=2&exclude_replies=true",
            &bob,
        )
        .await;
        assert_eq!(
            no_replies,
            [&last, &reblog, &own_reply, &root].map(String::clone),
            "{kind:?}"
        );
        let no_reblogs = walk(
            &client,
            "/api/v1/accounts/ann/statuses?limit=1&exclude_reblogs=true&exclude_replies=true",
            &bob,
        )
        .await;
        assert_eq!(
            no_reblogs,
            [&last, &own_reply, &root].map(String::clone),
            "{kind:?}"
        );
        // Readable without a token, as on Mastodon; `since_id` cuts the newest page
        // there, and the `Link`'s `prev` names the page's newest.
        let anonymous = client
            .get("/api/v1/accounts/ann/statuses?limit=40", None)
            .await;
        assert_eq!(ids(&anonymous.expect(StatusCode::OK)), all, "{kind:?}");
        let since = client
            .get(
                &format!("/api/v1/accounts/ann/statuses?limit=1&since_id={other_reply}"),
                Some(&bob),
            )
            .await;
        assert_eq!(
            ids(&since.expect(StatusCode::OK)),
            std::slice::from_ref(&last),
            "{kind:?}"
        );
        let link = since.header("link").unwrap_or_default();
        let prev = format!("min_id={last}>; rel=\"prev\"");
        assert!(link.contains(&prev), "{kind:?}: {link}");
        let newest = client
            .get(
                &format!("/api/v1/accounts/ann/statuses?since_id={other_reply}"),
                Some(&bob),
            )
            .await;
        assert_eq!(
            ids(&newest.expect(StatusCode::OK)),
            [last.clone(), reblog.clone()],
            "{kind:?}: cut at since_id"
        );
        let link = newest.header("link").unwrap_or_default();
        assert!(
            !link.contains("\"next\""),
            "{kind:?}: nothing below a cut page"
        );

        // min_id: the page just above it, newest first, as a `max_id` walk filters it.
        let above = |query: String| {
            let (client, bob) = (&client, &bob);
            async move {
                let path = format!("/api/v1/accounts/ann/statuses?{query}");
                let answer = client.get(&path, Some(bob)).await;
                let ids = ids(&answer.expect(StatusCode::OK));
                (ids, answer.header("link").unwrap_or_default().to_owned())
            }
        };
        let (page, link) = above(format!("limit=2&min_id={root}")).await;
        assert_eq!(
            page,
            [&other_reply, &own_reply].map(String::clone),
            "{kind:?}"
        );
        let prev = format!("min_id={other_reply}>; rel=\"prev\"");
        assert!(link.contains(&prev), "{kind:?}: {link}");
        let next = format!("max_id={own_reply}>; rel=\"next\"");
        assert!(
            link.starts_with('<') && link.contains(&next),
            "{kind:?}: {link}"
        );
        let (page, _) = above(format!("limit=2&min_id={root}&exclude_replies=true")).await;
        assert_eq!(page, [&reblog, &own_reply].map(String::clone), "{kind:?}");
        let (page, _) = above(format!("limit=2&min_id={other_reply}")).await;
        assert_eq!(page, [&last, &reblog].map(String::clone), "{kind:?}");
        let (page, link) = above(format!("min_id={last}")).await;
        assert!(page.is_empty() && link.is_empty(), "{kind:?}: {link}");
        client
            .get(
                &format!("/api/v1/accounts/ann/statuses?min_id={root}&max_id={last}"),
                Some(&bob),
            )
            .await
            .expect(StatusCode::UNPROCESSABLE_ENTITY);
        let pinned = client
            .get("/api/v1/accounts/ann/statuses?pinned=true", Some(&bob))
            .await;
        assert_eq!(pinned.expect(StatusCode::OK), Value::Array(Vec::new()));
        let page = client
            .get("/api/v1/accounts/ann/statuses?limit=1", Some(&bob))
            .await;
        let page = page.expect(StatusCode::OK);
        assert_eq!(page[0]["account"]["id"], "ann");
        client
            .get("/api/v1/accounts/nobody/statuses", Some(&bob))
            .await
            .expect(StatusCode::NOT_FOUND);

        // Blocked by the author: nothing.
        client
            .post("/api/v1/accounts/bob/block", Some(&ann), &[])
            .await
            .expect(StatusCode::OK);
        let hidden = client
            .get("/api/v1/accounts/ann/statuses", Some(&bob))
            .await;
        assert_eq!(hidden.expect(StatusCode::OK), Value::Array(Vec::new()));
        server.stop().await;
    }
}

/// `min_id` far below the newest (more entries above it than a window walk takes): the
/// page is still the one just above it, at each point of the list.
#[tokio::test]
async fn min_id_far_below_the_newest_is_the_page_just_above_it() {
    for (kind, server) in servers("min_id far below", |_| {}).await {
        let client = Client::of(&server);
        let cat = client.user("cat", None).await;
        let mut posted = Vec::new();
        for i in 0..14 {
            let fields = [("status", format!("number {i}"))];
            let fields: Vec<(&str, &str)> = fields.iter().map(|(k, v)| (*k, v.as_str())).collect();
            let answer = client.post("/api/v1/statuses", Some(&cat), &fields).await;
            posted.push(
                answer.expect(StatusCode::OK)["id"]
                    .as_str()
                    .unwrap()
                    .to_owned(),
            );
        }
        for at in [0, 4, 11] {
            for limit in [1, 2] {
                let path = format!(
                    "/api/v1/accounts/cat/statuses?limit={limit}&min_id={}",
                    posted[at]
                );
                let page = ids(&client.get(&path, None).await.expect(StatusCode::OK));
                let want: Vec<String> = posted[at + 1..at + 1 + limit]
                    .iter()
                    .rev()
                    .cloned()
                    .collect();
                assert_eq!(page, want, "{kind:?}: {path}");
            }
        }
        server.stop().await;
    }
}
