//! An Account's `last_status_at`: the UTC date of the account's newest post or repost
//! that exists, null with none, lowered when the newest goes; in every place an
//! Account is rendered (checked here: verify_credentials, by id, lookup, a follow list,
//! search, and a Status's account and reblogger).

use reqwest::{Method, StatusCode};
use serde_json::Value;
use socialite::domain::now_ms;

use super::Client;
use crate::common::{TestServer, fresh_config, kinds};

const DAY_MS: i64 = 86_400_000;

/// The date part of a Status's `created_at` (RFC 3339 in UTC).
fn date_of(status: &Value) -> String {
    let created = status["created_at"].as_str().unwrap();
    created.split_once('T').unwrap().0.to_owned()
}

/// Every rendering of `user`'s account a test can ask for without a post of theirs:
/// verify_credentials (with `token`), by id, lookup, `viewer`'s following list and
/// search; each one's `last_status_at`.
async fn rendered(client: &Client, user: &str, token: &str, viewer: &str) -> Vec<Value> {
    let mut found = Vec::new();
    let own = client.get("/api/v1/accounts/verify_credentials", Some(token));
    found.push(own.await.expect(StatusCode::OK));
    for path in [
        format!("/api/v1/accounts/{user}"),
        format!("/api/v1/accounts/lookup?acct={user}"),
    ] {
        found.push(client.get(&path, None).await.expect(StatusCode::OK));
    }
    let list = format!("/api/v1/accounts/{viewer}/following");
    let list = client.get(&list, None).await.expect(StatusCode::OK);
    found.extend(list.as_array().unwrap().iter().cloned());
    let search = format!("/api/v2/search?q={user}&type=accounts");
    let search = client
        .get(&search, Some(token))
        .await
        .expect(StatusCode::OK);
    found.extend(search["accounts"].as_array().unwrap().iter().cloned());
    assert_eq!(found.len(), 5, "{found:?}");
    for account in &found {
        assert_eq!(account["id"], user, "{account}");
    }
    found.iter().map(|a| a["last_status_at"].clone()).collect()
}

#[tokio::test]
async fn last_status_at_is_the_date_of_the_newest_existing_post_or_repost() {
    for kind in kinds("last_status_at") {
        let test = fresh_config(kind);
        let store = socialite::app::open_store(&test.config).await.unwrap();
        let server = TestServer::start_on(test, store.clone()).await;
        let client = Client::of(&server);
        let ann = client.user("ann", None).await;
        let bob = client.user("bob", None).await;
        client
            .post("/api/v1/accounts/ann/follow", Some(&bob), &[])
            .await
            .expect(StatusCode::OK);
        let null = vec![Value::Null; 5];
        assert_eq!(
            rendered(&client, "ann", &ann, "bob").await,
            null,
            "{kind:?}"
        );

        // A post three days old, written to the store (the API dates posts now).
        let old = store
            .content
            .insert_post("ann", "long ago", None, now_ms() - 3 * DAY_MS)
            .await
            .unwrap()
            .post
            .id
            .as_u128(); // the Mastodon view's id
        let old_path = format!("/api/v1/statuses/{old}");
        let old_status = client.get(&old_path, Some(&bob)).await;
        let old_date = date_of(&old_status.expect(StatusCode::OK));
        let old_dates = vec![Value::from(old_date.clone()); 5];
        assert_eq!(
            rendered(&client, "ann", &ann, "bob").await,
            old_dates,
            "{kind:?}"
        );

        let new = client.post("/api/v1/statuses", Some(&ann), &[("status", "now")]);
        let new = new.await.expect(StatusCode::OK);
        let new_date = date_of(&new);
        assert_ne!(new_date, old_date, "{kind:?}");
        assert_eq!(
            new["account"]["last_status_at"],
            new_date.as_str(),
            "{kind:?}"
        );
        let new_dates = vec![Value::from(new_date.clone()); 5];
        assert_eq!(
            rendered(&client, "ann", &ann, "bob").await,
            new_dates,
            "{kind:?}"
        );
        let shown = client.get(&old_path, Some(&bob)).await;
        let shown = shown.expect(StatusCode::OK);
        assert_eq!(
            shown["account"]["last_status_at"],
            new_date.as_str(),
            "{kind:?}: a status's account is as of the read"
        );
        let home = client.get("/api/v1/timelines/home", Some(&bob));
        let home = home.await.expect(StatusCode::OK);
        assert_eq!(home[0]["id"], new["id"], "{kind:?}");
        assert_eq!(home[0]["account"]["last_status_at"], new_date.as_str());

        // A repost is a status of the reposter's.
        let bobs = client.get("/api/v1/accounts/bob", None).await;
        assert_eq!(bobs.expect(StatusCode::OK)["last_status_at"], Value::Null);
        let reblog = format!("{old_path}/reblog");
        let reblog = client.post(&reblog, Some(&bob), &[]).await;
        let reblog = reblog.expect(StatusCode::OK);
        assert_eq!(
            reblog["account"]["last_status_at"],
            date_of(&reblog).as_str(),
            "{kind:?}: the reblogger's"
        );
        assert_eq!(
            reblog["reblog"]["account"]["last_status_at"],
            new_date.as_str(),
            "{kind:?}: the author's"
        );
        let unreblog = format!("{old_path}/unreblog");
        client
            .post(&unreblog, Some(&bob), &[])
            .await
            .expect(StatusCode::OK);
        let bobs = client.get("/api/v1/accounts/bob", None).await;
        assert_eq!(
            bobs.expect(StatusCode::OK)["last_status_at"],
            Value::Null,
            "{kind:?}: the repost is gone"
        );

        // Deleting the newest lowers it; deleting the last makes it null.
        let new_id = new["id"].as_str().unwrap();
        let delete = |id: String| {
            let (client, ann) = (&client, &ann);
            async move {
                let path = format!("/api/v1/statuses/{id}");
                let deleted = client.form(Method::DELETE, &path, Some(ann), &[]).await;
                deleted.expect(StatusCode::OK);
            }
        };
        delete(new_id.to_owned()).await;
        assert_eq!(
            rendered(&client, "ann", &ann, "bob").await,
            old_dates,
            "{kind:?}: lowered"
        );
        delete(old.to_string()).await;
        assert_eq!(
            rendered(&client, "ann", &ann, "bob").await,
            null,
            "{kind:?}: none left"
        );
    }
}
