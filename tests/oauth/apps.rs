//! Apps: registered from forms and JSON, and the server metadata listing what is
//! served.

use reqwest::StatusCode;
use serde_json::json;

use crate::{Client, servers};

#[tokio::test]
async fn apps_register_from_forms_and_json_and_the_metadata_lists_what_is_served() {
    for (kind, server) in servers("apps_register", |_| {}).await {
        let client = Client::of(&server);
        // A form with a list of redirect URIs (Rails' `key[]=`).
        let form = client
            .form(
                "/api/v1/apps",
                None,
                &[
                    ("client_name", "Form app"),
                    ("redirect_uris[]", "https://a.example/cb"),
                    ("redirect_uris[]", "urn:ietf:wg:oauth:2.0:oob"),
                    ("scopes", "read write"),
                ],
            )
            .await;
        assert_eq!(form.status, StatusCode::OK, "{kind:?}: {}", form.text);
        let app = form.json();
        assert_eq!(
            app["redirect_uris"],
            json!(["https://a.example/cb", "urn:ietf:wg:oauth:2.0:oob"])
        );
        assert_eq!(app["scopes"], json!(["read", "write"]));
        assert!(app["client_secret"].as_str().unwrap().len() >= 40);
        // JSON, URIs newline separated, as toot sends.
        let json_app = client
            .json(
                "/api/v1/apps",
                None,
                json!({"client_name": "toot", "redirect_uris": "https://b.example/cb\nhttps://c.example/cb", "scopes": "read write follow"}),
            )
            .await;
        assert_eq!(json_app.status, StatusCode::OK, "{}", json_app.text);
        assert_eq!(
            json_app.json()["redirect_uris"].as_array().unwrap().len(),
            2
        );
        // Bad input is a 422 in `{"error"}`: a URI with a fragment, an unknown scope.
        for (uris, scopes) in [
            ("https://a.example/cb#x", "read"),
            ("https://a.example/cb", "admin:read"),
        ] {
            let bad = client
                .form(
                    "/api/v1/apps",
                    None,
                    &[
                        ("client_name", "x"),
                        ("redirect_uris", uris),
                        ("scopes", scopes),
                    ],
                )
                .await;
            assert_eq!(
                bad.status,
                StatusCode::UNPROCESSABLE_ENTITY,
                "{uris} {scopes}"
            );
            assert!(bad.content_type.starts_with("application/json"));
            assert!(bad.json()["error"].is_string(), "{}", bad.text);
        }
        // The app's own token names it.
        let creds = (
            app["client_id"].as_str().unwrap().to_owned(),
            app["client_secret"].as_str().unwrap().to_owned(),
        );
        let token = client
            .form(
                "/oauth/token",
                None,
                &[
                    ("grant_type", "client_credentials"),
                    ("client_id", &creds.0),
                    ("client_secret", &creds.1),
                ],
            )
            .await;
        assert_eq!(token.status, StatusCode::OK, "{}", token.text);
        let token = token.json();
        assert_eq!(token["token_type"], "Bearer");
        assert_eq!(token["scope"], "read write");
        let verified = client
            .get(
                "/api/v1/apps/verify_credentials",
                token["access_token"].as_str(),
            )
            .await;
        assert_eq!(verified.status, StatusCode::OK, "{}", verified.text);
        assert_eq!(verified.json()["name"], "Form app");
        assert!(verified.json()["client_secret"].is_null());
        // A wrong secret is invalid_client.
        let wrong = client
            .form(
                "/oauth/token",
                None,
                &[
                    ("grant_type", "client_credentials"),
                    ("client_id", &creds.0),
                    ("client_secret", "nope"),
                ],
            )
            .await;
        assert_eq!(wrong.status, StatusCode::UNAUTHORIZED);
        assert_eq!(wrong.json()["error"], "invalid_client");
        let unsupported = client
            .form(
                "/oauth/token",
                None,
                &[
                    ("grant_type", "implicit"),
                    ("client_id", &creds.0),
                    ("client_secret", &creds.1),
                ],
            )
            .await;
        assert_eq!(unsupported.json()["error"], "unsupported_grant_type");
        let meta = client
            .get("/.well-known/oauth-authorization-server", None)
            .await
            .json();
        assert_eq!(
            meta["grant_types_supported"],
            json!([
                "authorization_code",
                "client_credentials",
                "password",
                "refresh_token"
            ])
        );
        assert_eq!(meta["code_challenge_methods_supported"], json!(["S256"]));
        assert_eq!(
            meta["token_endpoint"],
            format!("{}/oauth/token", server.base)
        );
        server.stop().await;
    }
}
