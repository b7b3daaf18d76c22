//! The Mastodon view of accounts (issue 36), against real servers on both stores: the
//! endpoints that answer empty, the `X-RateLimit-*` headers, multipart forms, the
//! accounts and their relationships, blocks, mutes and search, an account's
//! statuses and its last status date. The shared client is here; the tests by topic in
//! `mastodon_accounts/`.

#[path = "mastodon_accounts/accounts.rs"]
mod accounts;
mod common;
#[path = "mastodon_accounts/last_status.rs"]
mod last_status;
#[path = "mastodon_accounts/lists.rs"]
mod lists;
#[path = "mastodon_accounts/names.rs"]
mod names;
#[path = "mastodon_accounts/small.rs"]
mod small;
#[path = "mastodon_accounts/statuses.rs"]
mod statuses;

use common::{Kind, TestConfig, TestServer, fresh_config, kinds};
use reqwest::StatusCode;
use reqwest::header::HeaderMap;
use serde_json::Value;

/// A Mastodon client: bearer tokens, forms, JSON and multipart bodies.
struct Client {
    http: reqwest::Client,
    base: String,
}

struct Answer {
    status: StatusCode,
    headers: HeaderMap,
    text: String,
}

impl Answer {
    fn json(&self) -> Value {
        serde_json::from_str(&self.text).unwrap_or(Value::Null)
    }

    fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).map(|v| v.to_str().unwrap())
    }

    /// The body, after checking the status and that it is JSON, as every Mastodon
    /// answer must be.
    fn expect(&self, status: StatusCode) -> Value {
        assert_eq!(self.status, status, "{}", self.text);
        assert_eq!(
            self.header("content-type"),
            Some("application/json"),
            "{}",
            self.text
        );
        self.json()
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

    async fn send(&self, request: reqwest::RequestBuilder, token: Option<&str>) -> Answer {
        let request = match token {
            Some(token) => request.bearer_auth(token),
            None => request,
        };
        let response = request.send().await.unwrap();
        Answer {
            status: response.status(),
            headers: response.headers().clone(),
            text: response.text().await.unwrap(),
        }
    }

    async fn get(&self, path: &str, token: Option<&str>) -> Answer {
        self.send(self.http.get(format!("{}{path}", self.base)), token)
            .await
    }

    async fn form(
        &self,
        method: reqwest::Method,
        path: &str,
        token: Option<&str>,
        fields: &[(&str, &str)],
    ) -> Answer {
        let request = self
            .http
            .request(method, format!("{}{path}", self.base))
            .header("content-type", "application/x-www-form-urlencoded")
            .body(serde_urlencoded::to_string(fields).unwrap());
        self.send(request, token).await
    }

    async fn post(&self, path: &str, token: Option<&str>, fields: &[(&str, &str)]) -> Answer {
        self.form(reqwest::Method::POST, path, token, fields).await
    }

    /// A `multipart/form-data` body of text fields (and a file part for `file`), as
    /// masto.js's FormData sends it.
    async fn multipart(
        &self,
        method: reqwest::Method,
        path: &str,
        token: Option<&str>,
        fields: &[(&str, &str)],
        file: Option<&str>,
    ) -> Answer {
        let boundary = "----socialiteBoundary7MA4YWxk";
        let mut body = String::new();
        for (name, value) in fields {
            body.push_str(&format!(
                "--{boundary}\r\nContent-Disposition: form-data; name=\"{name}\"\r\n\r\n{value}\r\n"
            ));
        }
        if let Some(name) = file {
            body.push_str(&format!(
                "--{boundary}\r\nContent-Disposition: form-data; name=\"{name}\"; filename=\"a.png\"\r\nContent-Type: image/png\r\n\r\nPNG\r\n"
            ));
        }
        body.push_str(&format!("--{boundary}--\r\n"));
        let request = self
            .http
            .request(method, format!("{}{path}", self.base))
            .header(
                "content-type",
                format!("multipart/form-data; boundary={boundary}"),
            )
            .body(body);
        self.send(request, token).await
    }

    /// A `/v1` user; returns their API token (which holds every scope here).
    async fn user(&self, id: &str, password: Option<&str>) -> String {
        let mut body = serde_json::json!({ "id": id });
        if let Some(password) = password {
            body["password"] = password.into();
        }
        let request = self
            .http
            .post(format!("{}/v1/users", self.base))
            .json(&body);
        let answer = self.send(request, None).await;
        assert_eq!(answer.status, StatusCode::CREATED, "{}", answer.text);
        answer.json()["token"].as_str().unwrap().to_owned()
    }

    /// An OAuth token of `user` (who has `password`) holding exactly `scope`.
    async fn scoped_token(&self, user: &str, password: &str, scope: &str) -> String {
        let app = self
            .post(
                "/api/v1/apps",
                None,
                &[
                    ("client_name", "Test client"),
                    ("redirect_uris", "urn:ietf:wg:oauth:2.0:oob"),
                    ("scopes", scope),
                ],
            )
            .await
            .expect(StatusCode::OK);
        let token = self
            .post(
                "/oauth/token",
                None,
                &[
                    ("grant_type", "password"),
                    ("client_id", app["client_id"].as_str().unwrap()),
                    ("client_secret", app["client_secret"].as_str().unwrap()),
                    ("username", user),
                    ("password", password),
                    ("scope", scope),
                ],
            )
            .await
            .expect(StatusCode::OK);
        token["access_token"].as_str().unwrap().to_owned()
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
