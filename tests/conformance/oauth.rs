//! The sign-in port on both stores: passwords on users, apps, codes taken once (and
//! swept once expired), access tokens found by hash and revoked only by their app.

use socialite::store::{AccessRecord, AppRecord, CodeRecord, StoreError};

use crate::common::{TestStore, fresh_store, kinds};

#[tokio::test]
async fn the_oauth_port_keeps_secrets_by_hash_and_spends_codes_once() {
    for kind in kinds("the_oauth_port_keeps_secrets_by_hash_and_spends_codes_once") {
        let TestStore { store, .. } = &fresh_store(kind).await;
        let oauth = &store.oauth;
        // Passwords: only on existing users, replaced by a new one.
        assert!(!oauth.set_password("ann", "$argon2id$x").await.unwrap());
        crate::common::create_user(store, "ann").await;
        assert_eq!(oauth.password_hash("ann").await.unwrap(), None, "{kind:?}");
        assert!(oauth.set_password("ann", "$argon2id$one").await.unwrap());
        assert!(oauth.set_password("ann", "$argon2id$two").await.unwrap());
        assert_eq!(
            oauth.password_hash("ann").await.unwrap().as_deref(),
            Some("$argon2id$two")
        );
        assert_eq!(oauth.password_hash("nobody").await.unwrap(), None);
        let user = store.users.user("ann").await.unwrap().unwrap();
        assert_eq!(user.id, "ann", "{kind:?}: the profile reads as before");
        // Apps.
        let app = AppRecord {
            client_id: "c1".into(),
            secret_hash: [7; 32],
            name: "App".into(),
            redirect_uris: vec![
                "https://a.example/cb".into(),
                "urn:ietf:wg:oauth:2.0:oob".into(),
            ],
            scopes: "read write".into(),
            website: None,
            created_at_ms: 1_700_000_000_000,
        };
        oauth.insert_app(&app).await.unwrap();
        assert!(matches!(
            oauth.insert_app(&app).await,
            Err(StoreError::Conflict(_))
        ));
        assert_eq!(
            oauth.app("c1").await.unwrap(),
            Some(app.clone()),
            "{kind:?}"
        );
        assert_eq!(oauth.app("c2").await.unwrap(), None);
        // Codes: taken once; an expired one swept by the next insert.
        let code = |expires: i64| CodeRecord {
            client_id: "c1".into(),
            user: "ann".into(),
            redirect_uri: "https://a.example/cb".into(),
            scopes: "read".into(),
            challenge: Some("x".repeat(43)),
            expires_at_ms: expires,
        };
        oauth
            .insert_code(&[1; 32], &code(2_000), 1_000)
            .await
            .unwrap();
        oauth
            .insert_code(&[2; 32], &code(1_500), 1_000)
            .await
            .unwrap();
        assert!(matches!(
            oauth.insert_code(&[1; 32], &code(2_000), 1_000).await,
            Err(StoreError::Conflict(_))
        ));
        let (one, two) = tokio::join!(oauth.take_code(&[1; 32]), oauth.take_code(&[1; 32]));
        let taken: Vec<_> = [one.unwrap(), two.unwrap()].into_iter().flatten().collect();
        assert_eq!(
            taken,
            vec![code(2_000)],
            "{kind:?}: one of two racing takes gets it"
        );
        oauth
            .insert_code(&[3; 32], &code(9_000), 1_600)
            .await
            .unwrap();
        assert_eq!(
            oauth.take_code(&[2; 32]).await.unwrap(),
            None,
            "{kind:?}: swept once expired"
        );
        assert_eq!(oauth.take_code(&[3; 32]).await.unwrap(), Some(code(9_000)));
        // Access tokens.
        let access = AccessRecord {
            id: "t1".into(),
            user: None,
            client_id: "c1".into(),
            scopes: "read".into(),
            created_at_ms: 5,
        };
        oauth.insert_access(&[4; 32], &access).await.unwrap();
        assert!(matches!(
            oauth.insert_access(&[4; 32], &access).await,
            Err(StoreError::Conflict(_))
        ));
        assert_eq!(
            oauth.access_by_hash(&[4; 32]).await.unwrap(),
            Some(access.clone())
        );
        assert!(
            !oauth.revoke_access(&[4; 32], "c2").await.unwrap(),
            "{kind:?}"
        );
        assert!(oauth.access_by_hash(&[4; 32]).await.unwrap().is_some());
        assert!(oauth.revoke_access(&[4; 32], "c1").await.unwrap());
        assert_eq!(oauth.access_by_hash(&[4; 32]).await.unwrap(), None);
    }
}
