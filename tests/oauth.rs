//! Sign-in to the Mastodon API (issue 36), against real servers on both stores: apps,
//! each OAuth grant (PKCE's failures included), scopes, revocation, registration,
//! passwords, and the authorize page's CSRF check, sign-in limits and redirect rule.
//! The shared client is here; the tests by topic in `oauth/`.

#[path = "oauth/accounts.rs"]
mod accounts;
#[path = "oauth/apps.rs"]
mod apps;
#[path = "oauth/authorize.rs"]
mod authorize;
mod common;
#[path = "oauth/grants.rs"]
mod grants;
#[path = "oauth/refresh.rs"]
mod refresh;

use common::{Kind, TestConfig, TestServer, fresh_config, kinds};
use reqwest::StatusCode;
use serde_json::Value;

/// A client that does not follow redirects, speaking forms and JSON.
struct Client {
    http: reqwest::Client,
    base: String,
}

struct Answer {
    status: StatusCode,
    location: Option<String>,
    content_type: String,
    text: String,
}

impl Answer {
    fn json(&self) -> Value {
        serde_json::from_str(&self.text).unwrap_or(Value::Null)
    }
}

impl Client {
    fn of(server: &TestServer) -> Client {
        Client {
            http: reqwest::Client::builder()
                .redirect(reqwest::redirect::Policy::none())
                .build()
                .unwrap(),
            base: server.base.clone(),
        }
    }

    async fn send(&self, request: reqwest::RequestBuilder) -> Answer {
        let response = request.send().await.unwrap();
        let header = |name| {
            response
                .headers()
                .get(name)
                .map(|v: &reqwest::header::HeaderValue| v.to_str().unwrap().to_owned())
        };
        let location = header("location");
        let content_type = header("content-type").unwrap_or_default();
        let status = response.status();
        Answer {
            status,
            location,
            content_type,
            text: response.text().await.unwrap(),
        }
    }

    async fn form(&self, path: &str, token: Option<&str>, fields: &[(&str, &str)]) -> Answer {
        let mut request = self
            .http
            .post(format!("{}{path}", self.base))
            .header("content-type", "application/x-www-form-urlencoded")
            .body(serde_urlencoded::to_string(fields).unwrap());
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        self.send(request).await
    }

    async fn json(&self, path: &str, token: Option<&str>, body: Value) -> Answer {
        let mut request = self.http.post(format!("{}{path}", self.base)).json(&body);
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        self.send(request).await
    }

    async fn get(&self, path: &str, token: Option<&str>) -> Answer {
        let mut request = self.http.get(format!("{}{path}", self.base));
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        self.send(request).await
    }

    /// A `/v1` user, with a password when given; returns their API token.
    async fn user(&self, id: &str, password: Option<&str>) -> String {
        let mut body = serde_json::json!({ "id": id });
        if let Some(password) = password {
            body["password"] = password.into();
        }
        let answer = self.json("/v1/users", None, body).await;
        assert_eq!(answer.status, StatusCode::CREATED, "{}", answer.text);
        answer.json()["token"].as_str().unwrap().to_owned()
    }

    /// An app with `redirect_uris` and `scopes`: (client_id, client_secret).
    async fn app(&self, redirect_uris: &str, scopes: &str) -> (String, String) {
        let answer = self
            .form(
                "/api/v1/apps",
                None,
                &[
                    ("client_name", "Test client"),
                    ("redirect_uris", redirect_uris),
                    ("scopes", scopes),
                ],
            )
            .await;
        assert_eq!(answer.status, StatusCode::OK, "{}", answer.text);
        let app = answer.json();
        (
            app["client_id"].as_str().unwrap().to_owned(),
            app["client_secret"].as_str().unwrap().to_owned(),
        )
    }

    /// The password grant: the answer.
    async fn password_grant(
        &self,
        app: &(String, String),
        user: &str,
        password: &str,
        scope: &str,
    ) -> Answer {
        self.form(
            "/oauth/token",
            None,
            &[
                ("grant_type", "password"),
                ("client_id", &app.0),
                ("client_secret", &app.1),
                ("username", user),
                ("password", password),
                ("scope", scope),
            ],
        )
        .await
    }
}

async fn servers(test: &str, configure: impl Fn(&mut TestConfig)) -> Vec<(Kind, TestServer)> {
    let mut all = Vec::new();
    for kind in kinds(test) {
        let mut config = fresh_config(kind);
        configure(&mut config);
        all.push((kind, TestServer::start(config).await));
    }
    all
}
