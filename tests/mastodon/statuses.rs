//! Statuses on real servers, both stores: create (form and JSON), get, delete (with
//! `text`), context, favourite, reblog; the content HTML and the arrays filled from the
//! text; refusals as 4xx `{"error"}`; blocks as 404; scopes enforced.

use reqwest::StatusCode;
use serde_json::json;

use super::client::Masto;
use crate::common::{TestServer, fresh_config, kinds};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn statuses_are_created_read_liked_reposted_and_deleted() {
    for kind in kinds("statuses_are_created_read_liked_reposted_and_deleted") {
        let server = TestServer::start(fresh_config(kind)).await;
        let api = server.api();
        for u in ["al", "bo", "cy"] {
            api.user(u).await;
        }
        let (al, bo, cy) = (api.token("al"), api.token("bo"), api.token("cy"));
        let masto = Masto::of(&server);
        let base = masto.base().to_owned();

        // A form, with fields clients send that ask for nothing this server lacks.
        let first = masto
            .form(
                "/api/v1/statuses",
                &al,
                &[
                    ("status", "hi @bo & <all> #Rust"),
                    ("visibility", "public"),
                    ("sensitive", "false"),
                    ("spoiler_text", ""),
                    ("language", "en"),
                ],
            )
            .await;
        assert_eq!(first.status, StatusCode::OK, "{kind:?}: {}", first.body);
        let s = &first.body;
        let id = s["id"].as_str().unwrap().to_owned();
        assert!(id.len() == 29 && !id.starts_with('0'), "a decimal id: {id}");
        assert_eq!(s["account"]["id"], "al");
        assert_eq!(s["account"]["acct"], "al");
        assert_eq!(s["visibility"], "public");
        assert!(s["created_at"].as_str().unwrap().ends_with('Z'));
        assert_eq!(
            s["content"],
            format!(
                "<p>hi <span class=\"h-card\"><a href=\"{base}/@bo\" class=\"u-url mention\">@<span>bo</span></a></span> \
                 &amp; &lt;all&gt; <a href=\"{base}/tags/rust\" class=\"mention hashtag\" rel=\"tag\">#<span>Rust</span></a></p>"
            )
        );
        assert_eq!(s["mentions"][0]["acct"], "bo");
        assert_eq!(s["tags"][0]["name"], "rust");
        for empty in ["media_attachments", "emojis"] {
            assert_eq!(s[empty], json!([]), "{empty}");
        }
        assert!(s["card"].is_null() && s["poll"].is_null() && s["reblog"].is_null());
        assert!(s.get("text").is_none(), "text only answers a delete");

        // A reply, as JSON.
        let reply = masto
            .json(
                "/api/v1/statuses",
                &bo,
                json!({"status": "welcome", "in_reply_to_id": id}),
            )
            .await;
        assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
        let reply_id = reply.body["id"].as_str().unwrap().to_owned();
        assert_eq!(reply.body["in_reply_to_id"], id.as_str());
        assert_eq!(reply.body["in_reply_to_account_id"], "al");

        let context = masto
            .get(&format!("/api/v1/statuses/{reply_id}/context"), Some(&cy))
            .await;
        assert_eq!(context.body["ancestors"][0]["id"], id.as_str());
        assert_eq!(context.body["descendants"], json!([]));
        let context = masto
            .get(&format!("/api/v1/statuses/{id}/context"), None)
            .await;
        assert_eq!(
            context.status,
            StatusCode::OK,
            "a public read needs no token"
        );
        assert_eq!(context.body["descendants"][0]["id"], reply_id.as_str());

        // Favourite and reblog, each answered as it now stands for the caller.
        let path = |action: &str| format!("/api/v1/statuses/{id}/{action}");
        let liked = masto.form(&path("favourite"), &cy, &[]).await;
        assert_eq!(liked.status, StatusCode::OK, "{}", liked.body);
        assert_eq!(liked.body["favourited"], true);
        let boosted = masto.form(&path("reblog"), &cy, &[]).await;
        assert_eq!(boosted.status, StatusCode::OK, "{}", boosted.body);
        assert_ne!(boosted.body["id"], id.as_str(), "a repost has its own id");
        assert_eq!(boosted.body["account"]["id"], "cy");
        assert_eq!(boosted.body["reblog"]["id"], id.as_str());
        assert_eq!(boosted.body["reblog"]["reblogged"], true);
        assert_eq!(boosted.body["reblog"]["reblogs_count"], 1);
        let seen = masto
            .get(&format!("/api/v1/statuses/{id}"), Some(&cy))
            .await;
        assert_eq!(
            (&seen.body["favourited"], &seen.body["reblogged"]),
            (&json!(true), &json!(true))
        );
        assert_eq!(seen.body["replies_count"], 1);
        let others = masto
            .get(&format!("/api/v1/statuses/{id}"), Some(&bo))
            .await;
        assert_eq!(
            (&others.body["favourited"], &others.body["reblogged"]),
            (&json!(false), &json!(false)),
            "flags are the viewer's own"
        );
        let undone = masto.form(&path("unfavourite"), &cy, &[]).await;
        assert_eq!(undone.body["favourited"], false);
        let undone = masto.form(&path("unreblog"), &cy, &[]).await;
        assert_eq!(undone.body["id"], id.as_str());
        assert_eq!(undone.body["reblogged"], false);

        // Only the author deletes (another's status is not found, as on Mastodon, and
        // stays); the answer carries the source text.
        let refused = masto.delete(&format!("/api/v1/statuses/{id}"), &bo).await;
        assert_eq!(refused.status, StatusCode::NOT_FOUND, "{}", refused.body);
        let kept = masto
            .get(&format!("/api/v1/statuses/{id}"), Some(&al))
            .await;
        assert_eq!(kept.status, StatusCode::OK, "{}", kept.body);
        let deleted = masto.delete(&format!("/api/v1/statuses/{id}"), &al).await;
        assert_eq!(deleted.status, StatusCode::OK, "{}", deleted.body);
        assert_eq!(deleted.body["text"], "hi @bo & <all> #Rust");
        assert_eq!(deleted.body["id"], id.as_str());
        let gone = masto
            .get(&format!("/api/v1/statuses/{id}"), Some(&al))
            .await;
        assert_eq!(gone.status, StatusCode::NOT_FOUND);
        let again = masto.delete(&format!("/api/v1/statuses/{id}"), &al).await;
        assert_eq!(again.status, StatusCode::NOT_FOUND);
        server.stop().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_cannot_be_posted_is_refused_and_blocks_hide_statuses() {
    for kind in kinds("what_cannot_be_posted_is_refused_and_blocks_hide_statuses") {
        let server = TestServer::start(fresh_config(kind)).await;
        let api = server.api();
        for u in ["al", "bo"] {
            api.user(u).await;
        }
        let (al, bo) = (api.token("al"), api.token("bo"));
        let masto = Masto::of(&server);
        for fields in [
            vec![("status", "x"), ("media_ids[]", "1")],
            vec![("status", "x"), ("visibility", "direct")],
            vec![("status", "x"), ("spoiler_text", "cw")],
            vec![("status", "   ")],
            vec![],
        ] {
            let answer = masto.form("/api/v1/statuses", &al, &fields).await;
            assert_eq!(
                answer.status,
                StatusCode::UNPROCESSABLE_ENTITY,
                "{fields:?}: {}",
                answer.body
            );
        }
        let media = masto
            .json(
                "/api/v1/statuses",
                &al,
                json!({"status": "x", "media_ids": ["7"]}),
            )
            .await;
        assert_eq!(media.status, StatusCode::UNPROCESSABLE_ENTITY);
        let empty_media = masto
            .json(
                "/api/v1/statuses",
                &al,
                json!({"status": "x", "media_ids": []}),
            )
            .await;
        assert_eq!(empty_media.status, StatusCode::OK, "{}", empty_media.body);
        let long = "é".repeat(501);
        let too_long = masto
            .form("/api/v1/statuses", &al, &[("status", &long)])
            .await;
        assert_eq!(too_long.status, StatusCode::UNPROCESSABLE_ENTITY);
        let key = masto
            .send_with_key(&al, "x".repeat(300).as_str(), "x")
            .await;
        assert_eq!(key.status, StatusCode::UNPROCESSABLE_ENTITY);
        // A retry with the same key answers the first status and posts nothing.
        let first = masto.send_with_key(&al, "a-key", "keyed").await;
        let retry = masto.send_with_key(&al, "a-key", "changed").await;
        assert_eq!(
            (first.status, retry.status),
            (StatusCode::OK, StatusCode::OK)
        );
        assert_eq!(retry.body["id"], first.body["id"], "{kind:?}");
        assert_eq!(retry.body["content"], "<p>keyed</p>");
        let other = masto.send_with_key(&bo, "a-key", "keyed").await;
        assert_ne!(other.body["id"], first.body["id"], "keys are per user");

        // Ids are decimal: the same post's /v1 hex form, a leading zero, a snowflake
        // below 2^64 and an unknown id name no status.
        let known = first.body["id"].as_str().unwrap();
        let number: u128 = known.parse().unwrap();
        for path in [
            "/api/v1/statuses/nope".to_owned(),
            "/api/v1/statuses/79228162514264337593543950335".to_owned(),
            format!("/api/v1/statuses/{number:024x}"),
            format!("/api/v1/statuses/0{known}"),
            format!("/api/v1/statuses/{}", (number >> 64) << 16),
        ] {
            assert_eq!(
                masto.get(&path, Some(&al)).await.status,
                StatusCode::NOT_FOUND
            );
        }
        let unknown_parent = masto
            .form(
                "/api/v1/statuses",
                &al,
                &[
                    ("status", "x"),
                    ("in_reply_to_id", "79228162514264337593543950335"),
                ],
            )
            .await;
        assert_eq!(unknown_parent.status, StatusCode::NOT_FOUND);
        assert_eq!(
            masto
                .get("/api/v1/statuses/nope", Some("bad-token"))
                .await
                .status,
            StatusCode::UNAUTHORIZED
        );

        // al blocks bo: al's status does not exist for bo, nor can bo act on it.
        let id = masto.toot(&al, "mine").await["id"]
            .as_str()
            .unwrap()
            .to_owned();
        let (status, _) = api.put("/v1/users/al/blocks/bo").await;
        assert_eq!(status, StatusCode::NO_CONTENT);
        assert_eq!(
            masto
                .get(&format!("/api/v1/statuses/{id}"), Some(&bo))
                .await
                .status,
            StatusCode::NOT_FOUND
        );
        for action in ["favourite", "reblog", "context"] {
            let path = format!("/api/v1/statuses/{id}/{action}");
            let answer = match action {
                "context" => masto.get(&path, Some(&bo)).await,
                _ => masto.form(&path, &bo, &[]).await,
            };
            assert_eq!(
                answer.status,
                StatusCode::NOT_FOUND,
                "{action}: {}",
                answer.body
            );
        }
        let reply = masto
            .form(
                "/api/v1/statuses",
                &bo,
                &[("status", "x"), ("in_reply_to_id", &id)],
            )
            .await;
        assert_eq!(reply.status, StatusCode::NOT_FOUND, "{}", reply.body);
        server.stop().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scopes_are_enforced_on_statuses() {
    for kind in kinds("scopes_are_enforced_on_statuses") {
        let server = TestServer::start(fresh_config(kind)).await;
        let masto = Masto::of(&server);
        let read = super::oauth_token(&server, "al", "read").await;
        let write = super::oauth_token(&server, "al", "write:statuses").await;
        let id = masto.toot(&write, "by a write:statuses token").await["id"]
            .as_str()
            .unwrap()
            .to_owned();
        let refused = masto
            .form("/api/v1/statuses", &read, &[("status", "x")])
            .await;
        assert_eq!(refused.status, StatusCode::FORBIDDEN, "{}", refused.body);
        let like = masto
            .form(&format!("/api/v1/statuses/{id}/favourite"), &write, &[])
            .await;
        assert_eq!(
            like.status,
            StatusCode::FORBIDDEN,
            "write:favourites is another scope"
        );
        let read_it = masto
            .get(&format!("/api/v1/statuses/{id}"), Some(&read))
            .await;
        assert_eq!(read_it.status, StatusCode::OK);
        let no_read = masto
            .get(&format!("/api/v1/statuses/{id}"), Some(&write))
            .await;
        assert_eq!(no_read.status, StatusCode::FORBIDDEN);
        assert_eq!(
            masto
                .get("/api/v1/timelines/home", Some(&write))
                .await
                .status,
            StatusCode::FORBIDDEN
        );
        assert_eq!(
            masto
                .get("/api/v1/notifications", Some(&write))
                .await
                .status,
            StatusCode::FORBIDDEN
        );
        server.stop().await;
    }
}
