//! When a revoked token stops working: at once in the process that revoked it, even for
//! a verification that read the token before the revocation committed; in another
//! process once its cached verification is `auth.token_cache_ttl` old.

use std::sync::Arc;
use std::time::Duration;

use reqwest::{Method, StatusCode};
use serde_json::json;
use socialite::app::{open_store, spawn_with_clock, spawn_with_store};
use socialite::config::HumanDuration;
use socialite::service::auth::hash;
use socialite::workers::ManualClock;

use crate::common::faults::PausingTokens;
use crate::common::{Api, As, fresh_config, kinds};

const TIMELINE: &str = "/v1/users/ann/timeline";

/// A verification holds after reading the token; the token is revoked meanwhile (204);
/// released, it may answer, but must not leave the token in the cache: the next request
/// with it is 401. (Before the fix it re-cached the token for the whole TTL.)
#[tokio::test]
async fn a_verification_racing_a_revocation_cannot_bring_the_token_back() {
    for kind in kinds("a_verification_racing_a_revocation_cannot_bring_the_token_back") {
        let test = fresh_config(kind);
        let mut store = open_store(&test.config).await.unwrap();
        let tokens = PausingTokens::new(store.tokens.clone());
        store.tokens = tokens.clone();
        let server = spawn_with_store(&test.config, store).await.unwrap();
        let api = Api::new(reqwest::Client::new(), format!("http://{}", server.addr));
        api.user("ann").await;
        // Never used yet, so its first use reads storage.
        let (status, victim) = api.post("/v1/users/ann/tokens", json!({})).await;
        assert_eq!(status, StatusCode::CREATED, "{kind:?}");
        let (token, id) = (victim["token"].as_str().unwrap(), &victim["id"]);

        let (read, release) = tokens.pause(hash(token));
        let racing = {
            let api = Api::new(reqwest::Client::new(), api.base());
            let token = token.to_owned();
            tokio::spawn(async move {
                api.send_as(As::Token(&token), Method::GET, TIMELINE, None)
                    .await
                    .0
            })
        };
        read.await.unwrap();
        let path = format!("/v1/users/ann/tokens/{}", id.as_str().unwrap());
        assert_eq!(
            api.delete(&path).await.0,
            StatusCode::NO_CONTENT,
            "{kind:?}"
        );
        release.send(()).unwrap();
        assert_eq!(
            racing.await.unwrap(),
            StatusCode::OK,
            "{kind:?}: it read the token before the revocation"
        );

        let (status, body) = api
            .send_as(As::Token(token), Method::GET, TIMELINE, None)
            .await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{kind:?}: {body}");
        // Other tokens are still cached and served as before.
        assert_eq!(api.get(TIMELINE).await.0, StatusCode::OK, "{kind:?}");
        server.stop().await.unwrap();
    }
}

/// Revoked by another process (straight through the store, so this process's cache is
/// not told): still accepted while the cached verification is younger than
/// `auth.token_cache_ttl` by this server's clock, refused once it is that old.
#[tokio::test]
async fn another_process_revocation_takes_effect_after_the_cache_ttl() {
    for kind in kinds("another_process_revocation_takes_effect_after_the_cache_ttl") {
        let ttl = Duration::from_secs(300);
        let mut test = fresh_config(kind);
        test.config.auth.token_cache_ttl = HumanDuration(ttl);
        let store = open_store(&test.config).await.unwrap();
        let clock = Arc::new(ManualClock::at(1_000_000));
        let server = spawn_with_clock(&test.config, store.clone(), clock.clone())
            .await
            .unwrap();
        let api = Api::new(reqwest::Client::new(), format!("http://{}", server.addr));
        let (status, ann) = api.post("/v1/users", json!({ "id": "ann" })).await;
        assert_eq!(status, StatusCode::CREATED);
        assert_eq!(
            api.get(TIMELINE).await.0,
            StatusCode::OK,
            "{kind:?}: cached"
        );

        let id = ann["token_id"].as_str().unwrap();
        assert!(store.tokens.revoke_token("ann", id).await.unwrap());
        assert_eq!(
            api.get(TIMELINE).await.0,
            StatusCode::OK,
            "{kind:?}: served from the cache within the TTL, as documented"
        );
        clock.advance(ttl.as_millis() as i64 - 1);
        assert_eq!(api.get(TIMELINE).await.0, StatusCode::OK, "{kind:?}");
        clock.advance(1);
        assert_eq!(
            api.get(TIMELINE).await.0,
            StatusCode::UNAUTHORIZED,
            "{kind:?}: refused once the verification is auth.token_cache_ttl old"
        );
        server.stop().await.unwrap();
    }
}
