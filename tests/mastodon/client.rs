//! A Mastodon client for the tests: bearer tokens, forms and JSON, every answer's
//! status, headers and JSON body, and a check that every answer is JSON.

use reqwest::StatusCode;
use reqwest::header::{CONTENT_TYPE, HeaderMap};
use serde_json::Value;

use crate::common::TestServer;

pub struct Masto {
    http: reqwest::Client,
    base: String,
}

pub struct Answer {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Value,
}

impl Answer {
    /// The `Link` header, or "".
    pub fn link(&self) -> &str {
        self.headers.get("link").map_or("", |v| v.to_str().unwrap())
    }

    /// The URL of the `rel` link, as a path and query.
    pub fn link_path(&self, rel: &str, base: &str) -> Option<String> {
        self.link().split(", ").find_map(|part| {
            let (url, r) = part.split_once(">; rel=\"")?;
            (r.trim_end_matches('"') == rel).then(|| {
                url.trim_start_matches('<')
                    .trim_start_matches(base)
                    .to_owned()
            })
        })
    }
}

impl Masto {
    pub fn of(server: &TestServer) -> Masto {
        Masto {
            http: reqwest::Client::new(),
            base: server.base.clone(),
        }
    }

    pub fn base(&self) -> &str {
        &self.base
    }

    async fn send(&self, request: reqwest::RequestBuilder, token: Option<&str>) -> Answer {
        let request = match token {
            Some(token) => request.bearer_auth(token),
            None => request,
        };
        let response = request.send().await.unwrap();
        let status = response.status();
        let headers = response.headers().clone();
        let text = response.text().await.unwrap();
        let content_type = headers
            .get(CONTENT_TYPE)
            .map_or("", |v| v.to_str().unwrap());
        assert!(
            content_type.starts_with("application/json"),
            "{status} answered as {content_type:?}: {text}"
        );
        let body: Value = serde_json::from_str(&text).unwrap();
        if !status.is_success() {
            assert!(body["error"].is_string(), "{status}: {text}");
        }
        Answer {
            status,
            headers,
            body,
        }
    }

    pub async fn get(&self, path: &str, token: Option<&str>) -> Answer {
        self.send(self.http.get(format!("{}{path}", self.base)), token)
            .await
    }

    pub async fn delete(&self, path: &str, token: &str) -> Answer {
        self.send(
            self.http.delete(format!("{}{path}", self.base)),
            Some(token),
        )
        .await
    }

    pub async fn form(&self, path: &str, token: &str, fields: &[(&str, &str)]) -> Answer {
        let request = self
            .http
            .post(format!("{}{path}", self.base))
            .header(CONTENT_TYPE, "application/x-www-form-urlencoded")
            .body(serde_urlencoded::to_string(fields).unwrap());
        self.send(request, Some(token)).await
    }

    pub async fn json(&self, path: &str, token: &str, body: Value) -> Answer {
        let request = self.http.post(format!("{}{path}", self.base)).json(&body);
        self.send(request, Some(token)).await
    }

    /// Posts `text` as the token's user; the new status.
    pub async fn toot(&self, token: &str, text: &str) -> Value {
        let answer = self
            .form("/api/v1/statuses", token, &[("status", text)])
            .await;
        assert_eq!(answer.status, StatusCode::OK, "{}", answer.body);
        answer.body
    }
}

impl Masto {
    /// Posts with an `Idempotency-Key`; the answer's status.
    pub async fn send_with_key(&self, token: &str, key: &str) -> StatusCode {
        let request = self
            .http
            .post(format!("{}/api/v1/statuses", self.base))
            .header("idempotency-key", key)
            .json(&serde_json::json!({"status": "keyed"}));
        self.send(request, Some(token)).await.status
    }
}
