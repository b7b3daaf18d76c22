//! `GET`/`POST /api/v1/markers` on real servers, both stores: a form or JSON sets a
//! timeline's marker, kept as sent, its version moving by one at each write; a read
//! answers the timelines asked for that have one; scopes as Mastodon asks; bad input
//! is a 422 that says why.

use reqwest::StatusCode;
use serde_json::json;

use super::client::Masto;
use crate::common::{TestServer, fresh_config, kinds};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn markers_are_kept_per_timeline_and_their_version_moves() {
    for kind in kinds("markers_are_kept_per_timeline_and_their_version_moves") {
        let server = TestServer::start(fresh_config(kind)).await;
        let masto = Masto::of(&server);
        let ann = crate::oauth_token(&server, "ann", "read write").await;
        let both = "/api/v1/markers?timeline[]=home&timeline[]=notifications";
        // Nothing written: no keys.
        let read = masto.get(both, Some(&ann)).await;
        assert_eq!((read.status, &read.body), (StatusCode::OK, &json!({})));
        // A form sets home at version 1.
        let set = masto
            .form(
                "/api/v1/markers",
                &ann,
                &[("home[last_read_id]", "113000000000000001")],
            )
            .await;
        assert_eq!(set.status, StatusCode::OK, "{kind:?}: {}", set.body);
        assert_eq!(set.body["home"]["last_read_id"], "113000000000000001");
        assert_eq!(set.body["home"]["version"], 1);
        assert!(
            set.body["home"]["updated_at"]
                .as_str()
                .unwrap()
                .ends_with('Z')
        );
        assert!(set.body.get("notifications").is_none(), "{}", set.body);
        // JSON sets both: home moves to 2, notifications starts at 1.
        let body = json!({
            "home": {"last_read_id": "113000000000000009"},
            "notifications": {"last_read_id": "42"},
            "public": {"last_read_id": "ignored"},
        });
        let set = masto.json("/api/v1/markers", &ann, body).await;
        assert_eq!(set.status, StatusCode::OK, "{}", set.body);
        assert_eq!(set.body["home"]["version"], 2, "{kind:?}");
        assert_eq!(set.body["notifications"]["version"], 1);
        assert!(set.body.get("public").is_none());
        // The reads answer what was written, for the timelines asked for only.
        let read = masto.get(both, Some(&ann)).await;
        assert_eq!(read.body, set.body, "{kind:?}");
        let home = masto
            .get(
                "/api/v1/markers?timeline[]=home&timeline[]=lists",
                Some(&ann),
            )
            .await;
        assert_eq!(home.body, json!({"home": set.body["home"]}));
        let none = masto.get("/api/v1/markers", Some(&ann)).await;
        assert_eq!((none.status, &none.body), (StatusCode::OK, &json!({})));
        // Another user has none of ann's.
        let bob = crate::oauth_token(&server, "bob", "read write").await;
        assert_eq!(masto.get(both, Some(&bob)).await.body, json!({}));
        server.stop().await;
    }
}

#[tokio::test]
async fn markers_need_their_scopes_and_refuse_bad_ids() {
    for kind in kinds("markers_need_their_scopes_and_refuse_bad_ids") {
        let server = TestServer::start(fresh_config(kind)).await;
        let masto = Masto::of(&server);
        let path = "/api/v1/markers?timeline[]=home";
        // No token; a token without read:statuses or write:statuses.
        assert_eq!(masto.get(path, None).await.status, StatusCode::UNAUTHORIZED);
        let accounts = crate::oauth_token(&server, "cy", "read:accounts").await;
        assert_eq!(
            masto.get(path, Some(&accounts)).await.status,
            StatusCode::FORBIDDEN
        );
        let form = [("home[last_read_id]", "1")];
        let refused = masto.form("/api/v1/markers", &accounts, &form).await;
        assert_eq!(refused.status, StatusCode::FORBIDDEN);
        // A read-only token reads, and may not write.
        let reader = crate::oauth_token(&server, "cy", "read:statuses").await;
        assert_eq!(masto.get(path, Some(&reader)).await.status, StatusCode::OK);
        let refused = masto.form("/api/v1/markers", &reader, &form).await;
        assert_eq!(refused.status, StatusCode::FORBIDDEN, "{kind:?}");
        // write:statuses writes; bad ids are 422 and write nothing.
        let writer = crate::oauth_token(&server, "cy", "write:statuses").await;
        let long = "9".repeat(65);
        for bad in ["", "12 34", long.as_str(), "ünïcode"] {
            let answer = masto
                .form("/api/v1/markers", &writer, &[("home[last_read_id]", bad)])
                .await;
            assert_eq!(answer.status, StatusCode::UNPROCESSABLE_ENTITY, "{bad:?}");
            assert!(
                answer.body["error"]
                    .as_str()
                    .unwrap()
                    .contains("last_read_id")
            );
        }
        for body in [
            json!({"home": "1"}),
            json!({"home": {}}),
            json!({"home": {"last_read_id": [1]}}),
        ] {
            let answer = masto.json("/api/v1/markers", &writer, body.clone()).await;
            assert_eq!(answer.status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
        }
        // A bad id beside a good one writes neither.
        let both = [
            ("home[last_read_id]", "7"),
            ("notifications[last_read_id]", ""),
        ];
        let answer = masto.form("/api/v1/markers", &writer, &both).await;
        assert_eq!(answer.status, StatusCode::UNPROCESSABLE_ENTITY);
        assert_eq!(
            masto.get(path, Some(&reader)).await.body,
            json!({}),
            "{kind:?}"
        );
        let ok = masto.form("/api/v1/markers", &writer, &form).await;
        assert_eq!(ok.body["home"]["version"], 1, "{}", ok.body);
        server.stop().await;
    }
}
