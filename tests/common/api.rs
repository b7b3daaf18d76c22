//! The JSON client for a server under test ([`Api`]), which checks every error is a
//! complete problem+json body, and the credentials it learns from responses and sends
//! as the user each request acts for.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use reqwest::StatusCode;
use serde_json::{Value, json};

/// What the harness learnt from the API: each user's token (from `POST /v1/users`) and
/// each post's author, so that requests go out as the user they act for.
#[derive(Clone, Default)]
pub struct Credentials {
    tokens: Arc<Mutex<HashMap<String, String>>>,
    authors: Arc<Mutex<HashMap<String, String>>>,
}

impl Credentials {
    pub fn token(&self, user: &str) -> Option<String> {
        self.tokens.lock().unwrap().get(user).cloned()
    }

    pub fn set_token(&self, user: &str, token: &str) {
        self.tokens
            .lock()
            .unwrap()
            .insert(user.to_owned(), token.to_owned());
    }

    /// The user a request to `path` acts as: the `{id}` of `/v1/users/{id}/...`, or the
    /// author of the post in `/v1/posts/{post_id}`.
    fn acting_user(&self, path: &str) -> Option<String> {
        let path = path.split('?').next().unwrap_or(path);
        if let Some(rest) = path.strip_prefix("/v1/users/") {
            return rest.split('/').next().map(str::to_owned);
        }
        let post = path.strip_prefix("/v1/posts/")?;
        self.authors.lock().unwrap().get(post).cloned()
    }

    /// Keeps tokens and post authors found in a response body.
    fn learn(&self, body: &Value) {
        if let (Some(id), Some(token)) = (body["id"].as_str(), body["token"].as_str())
            && body.get("display_name").is_some()
        {
            self.set_token(id, token);
        }
        let posts = std::iter::once(body).chain(body["items"].as_array().into_iter().flatten());
        let mut authors = self.authors.lock().unwrap();
        for post in posts {
            if let (Some(id), Some(author)) = (post["id"].as_str(), post["author"].as_str()) {
                authors.insert(id.to_owned(), author.to_owned());
            }
        }
    }
}

/// How a request authenticates.
#[derive(Debug, Clone, Copy)]
pub enum As<'a> {
    /// As the user the path acts for, when the harness knows their token.
    Owner,
    /// With no credentials.
    Nobody,
    /// With this bearer token.
    Token(&'a str),
}

/// A JSON client for one server. Every 4xx and 5xx it sees must be a complete
/// problem+json body. Requests carry the token of the user they act for.
pub struct Api {
    pub(super) client: reqwest::Client,
    pub(super) base: String,
    pub(super) credentials: Credentials,
}

impl Api {
    pub fn new(client: reqwest::Client, base: impl Into<String>) -> Api {
        Api {
            client,
            base: base.into(),
            credentials: Credentials::default(),
        }
    }

    /// Another server on the same database, with the credentials learnt so far.
    pub fn at(&self, base: impl Into<String>) -> Api {
        Api {
            client: self.client.clone(),
            base: base.into(),
            credentials: self.credentials.clone(),
        }
    }

    pub fn credentials(&self) -> &Credentials {
        &self.credentials
    }

    /// `user`'s token, which `POST /v1/users` returned.
    pub fn token(&self, user: &str) -> String {
        self.credentials
            .token(user)
            .unwrap_or_else(|| panic!("no token known for {user}"))
    }

    pub fn base(&self) -> &str {
        &self.base
    }

    pub async fn send(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<Value>,
    ) -> (StatusCode, Value) {
        self.send_as(As::Owner, method, path, body).await
    }

    pub async fn send_as(
        &self,
        who: As<'_>,
        method: reqwest::Method,
        path: &str,
        body: Option<Value>,
    ) -> (StatusCode, Value) {
        let mut request = self.client.request(method, format!("{}{path}", self.base));
        let token = match who {
            As::Owner => self
                .credentials
                .acting_user(path)
                .and_then(|user| self.credentials.token(&user)),
            As::Nobody => None,
            As::Token(token) => Some(token.to_owned()),
        };
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        if let Some(body) = body {
            request = request.json(&body);
        }
        let response = request.send().await.unwrap();
        let status = response.status();
        let problem = response
            .headers()
            .get("content-type")
            .is_some_and(|v| v == "application/problem+json");
        let text = response.text().await.unwrap();
        let value: Value = if text.is_empty() {
            Value::Null
        } else {
            serde_json::from_str(&text).unwrap_or(Value::String(text))
        };
        if status.is_success() {
            self.credentials.learn(&value);
        }
        if status.is_client_error() || status.is_server_error() {
            assert!(problem, "{status} must be problem+json: {value}");
            assert_eq!(value["status"], status.as_u16(), "{value}");
            assert!(
                value["title"].is_string()
                    && value["type"].is_string()
                    && value["detail"].is_string(),
                "{value}"
            );
        }
        (status, value)
    }

    pub async fn get(&self, path: &str) -> (StatusCode, Value) {
        self.send(reqwest::Method::GET, path, None).await
    }

    /// The items of every page of `path`, following `next_cursor` as the query
    /// parameter `param` (`before` or `cursor`); each page must answer 200.
    pub async fn walk(&self, path: &str, param: &str) -> Vec<Value> {
        let sep = if path.contains('?') { '&' } else { '?' };
        let mut items = Vec::new();
        let mut page_path = path.to_owned();
        loop {
            let (status, page) = self.get(&page_path).await;
            assert_eq!(status, StatusCode::OK, "GET {page_path}: {page}");
            items.extend(
                page["items"]
                    .as_array()
                    .expect("a page's items")
                    .iter()
                    .cloned(),
            );
            match page["next_cursor"].as_str() {
                Some(next) => page_path = format!("{path}{sep}{param}={next}"),
                None => return items,
            }
        }
    }

    pub async fn post(&self, path: &str, body: Value) -> (StatusCode, Value) {
        self.send(reqwest::Method::POST, path, Some(body)).await
    }

    pub async fn put(&self, path: &str) -> (StatusCode, Value) {
        self.send(reqwest::Method::PUT, path, None).await
    }

    pub async fn delete(&self, path: &str) -> (StatusCode, Value) {
        self.send(reqwest::Method::DELETE, path, None).await
    }

    pub async fn patch(&self, path: &str, body: Value) -> (StatusCode, Value) {
        self.send(reqwest::Method::PATCH, path, Some(body)).await
    }

    pub async fn user(&self, id: &str) {
        let (status, _) = self.post("/v1/users", json!({ "id": id })).await;
        assert_eq!(status, StatusCode::CREATED);
    }

    pub async fn say(&self, id: &str, text: &str) -> String {
        let (status, body) = self
            .post(&format!("/v1/users/{id}/posts"), json!({ "text": text }))
            .await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
        body["id"].as_str().unwrap().to_owned()
    }
}
