//! The account lists both ways (issue 36): followers, following, blocks, mutes,
//! favourited_by and reblogged_by take `since_id` (the list's head, cut at a cursor)
//! and `min_id` (the page just ahead of a cursor, in the list's order), and their
//! `Link` names `next` first, then `prev`; walking `prev` back from the last page
//! finds every account of the forward walk, on both stores.

use reqwest::StatusCode;

use super::accounts::{ids, walk};
use super::{Answer, Client, servers};

/// The `rel` URL of the answer's `Link`, as a path of this server.
fn link(client: &Client, answer: &Answer, rel: &str) -> Option<String> {
    let header = answer.header("link")?;
    header.split(", ").find_map(|part| {
        let (url, tail) = part.strip_prefix('<')?.split_once('>')?;
        (tail == format!("; rel=\"{rel}\""))
            .then(|| url.strip_prefix(&client.base).unwrap().to_owned())
    })
}

/// The value of `key` in a path's query, decoded.
fn param(path: &str, key: &str) -> String {
    let query = path.split_once('?').unwrap().1;
    let pairs: Vec<(String, String)> = serde_urlencoded::from_str(query).unwrap();
    pairs.into_iter().find(|(k, _)| k == key).unwrap().1
}

/// `list` (a path without a query) held to Mastodon's paging both ways, with pages of
/// two; `all` is its forward walk. Returns nothing: every check asserts.
async fn both_ways(client: &Client, list: &str, token: &str, all: &[String]) {
    // Forward to the last page, each `Link` with `next` first.
    let mut answer = client.get(&format!("{list}?limit=2"), Some(token)).await;
    let first_link = answer.header("link").unwrap().to_owned();
    assert!(
        first_link.starts_with('<') && first_link.contains("; rel=\"next\", <"),
        "{first_link}"
    );
    while let Some(next) = link(client, &answer, "next") {
        let page = client.get(&next, Some(token)).await;
        if ids(&page.expect(StatusCode::OK)).is_empty() {
            break;
        }
        answer = page;
    }
    // Back by `prev`: each page is the one just ahead, in the list's order.
    let mut back: Vec<Vec<String>> = vec![ids(&answer.expect(StatusCode::OK))];
    while let Some(prev) = link(client, &answer, "prev") {
        answer = client.get(&prev, Some(token)).await;
        let page = ids(&answer.expect(StatusCode::OK));
        if page.is_empty() {
            assert!(
                answer.header("link").is_none(),
                "{list}: an empty page links nowhere"
            );
            break;
        }
        assert!(page.len() <= 2, "{list}: {page:?}");
        back.push(page);
        assert!(back.len() < 20, "{list}: the walk back does not end");
    }
    back.reverse();
    assert_eq!(back.concat(), all, "{list}: prev pages back to the head");

    // The cursor of the third account, from a `next` link.
    let three = client.get(&format!("{list}?limit=3"), Some(token)).await;
    let cursor = param(&link(client, &three, "next").unwrap(), "max_id");
    let since = client
        .get(&format!("{list}?since_id={cursor}"), Some(token))
        .await;
    assert_eq!(
        ids(&since.expect(StatusCode::OK)),
        all[..2],
        "{list}: cut at since_id"
    );
    assert!(
        link(client, &since, "next").is_none(),
        "{list}: a cut page reached since_id"
    );
    assert!(link(client, &since, "prev").is_some(), "{list}");
    let behind = format!("{list}?since_id={cursor}&max_id={cursor}");
    let behind = client.get(&behind, Some(token)).await;
    assert!(ids(&behind.expect(StatusCode::OK)).is_empty(), "{list}");
    let just = client
        .get(&format!("{list}?min_id={cursor}&limit=1"), Some(token))
        .await;
    assert_eq!(
        ids(&just.expect(StatusCode::OK)),
        all[1..2],
        "{list}: just ahead"
    );
    let both = format!("{list}?min_id={cursor}&max_id={cursor}");
    client
        .get(&both, Some(token))
        .await
        .expect(StatusCode::UNPROCESSABLE_ENTITY);
    let nonsense = client.get(&format!("{list}?min_id=%20"), Some(token)).await;
    nonsense.expect(StatusCode::UNPROCESSABLE_ENTITY);
}

#[tokio::test]
async fn account_lists_page_both_ways_with_since_id_and_min_id() {
    for (kind, server) in servers("account lists both ways", |_| {}).await {
        let client = Client::of(&server);
        let ann = client.user("ann", None).await;
        let gus = client.user("gus", None).await;
        let status = client
            .post("/api/v1/statuses", Some(&ann), &[("status", "hi")])
            .await;
        let status = status.expect(StatusCode::OK)["id"]
            .as_str()
            .unwrap()
            .to_owned();
        let five = ["bo", "cy", "di", "ed", "fy"];
        for id in five {
            let token = client.user(id, None).await;
            let follow = format!("/api/v1/accounts/{id}/follow");
            client
                .post(&follow, Some(&ann), &[])
                .await
                .expect(StatusCode::OK);
            let back = "/api/v1/accounts/ann/follow";
            client
                .post(back, Some(&token), &[])
                .await
                .expect(StatusCode::OK);
            for act in ["favourite", "reblog"] {
                let path = format!("/api/v1/statuses/{status}/{act}");
                client
                    .post(&path, Some(&token), &[])
                    .await
                    .expect(StatusCode::OK);
            }
            for act in ["block", "mute"] {
                let path = format!("/api/v1/accounts/{id}/{act}");
                client
                    .post(&path, Some(&gus), &[])
                    .await
                    .expect(StatusCode::OK);
            }
        }
        let by_id: Vec<String> = five.iter().map(|s| (*s).to_owned()).collect();
        for (list, token) in [
            ("/api/v1/accounts/ann/followers".to_owned(), &ann),
            ("/api/v1/accounts/ann/following".to_owned(), &ann),
            ("/api/v1/blocks".to_owned(), &gus),
            ("/api/v1/mutes".to_owned(), &gus),
            (format!("/api/v1/statuses/{status}/favourited_by"), &ann),
            (format!("/api/v1/statuses/{status}/reblogged_by"), &ann),
        ] {
            let all = walk(&client, &format!("{list}?limit=2"), token).await;
            let mut sorted = all.clone();
            sorted.sort();
            assert_eq!(sorted, by_id, "{kind:?} {list}: every account once");
            if list.ends_with("by") {
                // Newest first: the last to act leads.
                assert_eq!(all, ["fy", "ed", "di", "cy", "bo"], "{kind:?} {list}");
            }
            both_ways(&client, &list, token, &all).await;
        }
    }
}
