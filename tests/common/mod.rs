//! Shared test harness: fresh stores and servers on every backend under test.
//!
//! The embedded backend always runs. MongoDB runs when `SOCIALITE_TEST_MONGODB_URI`
//! points at a server (the README's test command starts the stand-in); otherwise each
//! test says plainly that it skipped MongoDB.

#![allow(dead_code)]

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use reqwest::StatusCode;
use serde_json::{Value, json};
use socialite::app::{RunningServer, spawn};
use socialite::config::{Backend, Config};
use socialite::store::Store;
use socialite::store::embedded::{EmbeddedStore, Synchronous};

/// Starts the real binary serving on a free port, with `env` on top of a quiet
/// environment, and returns it with its base URL once it reports its address.
pub fn start_binary(
    args: &[&str],
    env: &[(&str, &std::ffi::OsStr)],
) -> (std::process::Child, String) {
    use std::io::{BufRead, BufReader};
    use std::process::{Command, Stdio};
    let mut command = Command::new(env!("CARGO_BIN_EXE_socialite"));
    command
        .args(["serve", "--listen", "127.0.0.1:0"])
        .args(args)
        .env("NO_COLOR", "1")
        .env("RUST_LOG", "info")
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    for (key, value) in env {
        command.env(key, value);
    }
    let mut child = command.spawn().expect("the binary starts");
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if let Some(at) = line.find("listening on http://") {
                let _ = tx.send(line[at + "listening on ".len()..].trim().to_owned());
            }
        }
    });
    let base = rx
        .recv_timeout(std::time::Duration::from_secs(30))
        .expect("the server reports its address");
    (child, base)
}

/// Creates user `id` (display name `id`) through the port.
pub async fn create_user(store: &Store, id: &str) {
    store
        .users
        .create_user(&socialite::domain::NewUser {
            id: id.into(),
            display_name: id.into(),
            created_at_ms: socialite::domain::now_ms(),
        })
        .await
        .unwrap();
}

pub const MONGO_ENV: &str = "SOCIALITE_TEST_MONGODB_URI";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Embedded,
    Mongo,
}

/// The backends this run tests, announcing a skipped MongoDB once per call site.
pub fn kinds(test: &str) -> Vec<Kind> {
    if mongo_base_uri().is_some() {
        vec![Kind::Embedded, Kind::Mongo]
    } else {
        eprintln!(
            "{test}: MongoDB adapter SKIPPED: {MONGO_ENV} is not set (run the README's test command to start the stand-in server)"
        );
        vec![Kind::Embedded]
    }
}

pub fn mongo_base_uri() -> Option<String> {
    std::env::var(MONGO_ENV)
        .ok()
        .filter(|uri| !uri.trim().is_empty())
}

/// A unique database name per test, so tests never share state.
pub fn fresh_name(prefix: &str) -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos();
    format!(
        "t_{prefix}_{}_{}_{nanos}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

/// `base` with its database path replaced by `database`.
pub fn mongo_uri_with_database(base: &str, database: &str) -> String {
    let (scheme, rest) = base.split_once("://").expect("a mongodb:// URI");
    let (hosts_and_path, query) = match rest.split_once('?') {
        Some((head, query)) => (head, Some(query)),
        None => (rest, None),
    };
    let hosts = hosts_and_path.split('/').next().unwrap();
    match query {
        Some(query) => format!("{scheme}://{hosts}/{database}?{query}"),
        None => format!("{scheme}://{hosts}/{database}"),
    }
}

/// A fresh store; keep the guard alive as long as the store.
pub struct TestStore {
    pub store: Store,
    pub kind: Kind,
    _dir: Option<tempfile::TempDir>,
}

impl TestStore {
    /// The embedded database file, for tests that write what no port would.
    pub fn embedded_file(&self) -> Option<PathBuf> {
        self._dir.as_ref().map(|dir| dir.path().join("t.db"))
    }
}

pub async fn fresh_store(kind: Kind) -> TestStore {
    match kind {
        Kind::Embedded => {
            let dir = tempfile::tempdir().unwrap();
            let store = Store::new(Arc::new(
                EmbeddedStore::open(&dir.path().join("t.db"), Synchronous::Normal).unwrap(),
            ));
            TestStore {
                store,
                kind,
                _dir: Some(dir),
            }
        }
        Kind::Mongo => {
            let base = mongo_base_uri().expect("MongoDB URI");
            let uri = mongo_uri_with_database(&base, &fresh_name("store"));
            let store = socialite::store::mongo::connect(&uri)
                .await
                .expect("connecting to MongoDB");
            TestStore {
                store,
                kind,
                _dir: None,
            }
        }
    }
}

/// A configuration on a fresh database, listening on a free port.
pub struct TestConfig {
    pub config: Config,
    pub dir: tempfile::TempDir,
}

pub fn fresh_config(kind: Kind) -> TestConfig {
    let dir = tempfile::tempdir().unwrap();
    let mut config = Config::default();
    config.server.listen = "127.0.0.1:0".parse().unwrap();
    config.storage.path = dir.path().join("socialite.db");
    if kind == Kind::Mongo {
        config.storage.backend = Backend::Mongodb;
        config.storage.mongodb_uri = Some(mongo_uri_with_database(
            &mongo_base_uri().expect("MongoDB URI"),
            &fresh_name("http"),
        ));
    }
    TestConfig { config, dir }
}

pub struct TestServer {
    pub base: String,
    pub client: reqwest::Client,
    /// The credentials every [`Api`] of this server shares.
    pub credentials: Credentials,
    pub server: RunningServer,
    pub data_dir: PathBuf,
    _dir: tempfile::TempDir,
}

impl TestServer {
    pub async fn start(test: TestConfig) -> TestServer {
        let server = spawn(&test.config).await.expect("server starts");
        TestServer::around(server, test)
    }

    /// As [`TestServer::start`], with the clock the rate limits read.
    pub async fn start_with_clock(
        test: TestConfig,
        clock: Arc<dyn socialite::workers::Clock>,
    ) -> TestServer {
        let store = socialite::app::open_store(&test.config)
            .await
            .expect("store opens");
        let server = socialite::app::spawn_with_clock(&test.config, store, clock)
            .await
            .expect("server starts");
        TestServer::around(server, test)
    }

    fn around(server: RunningServer, test: TestConfig) -> TestServer {
        TestServer {
            base: format!("http://{}", server.addr),
            client: reqwest::Client::new(),
            credentials: Credentials::default(),
            server,
            data_dir: test.dir.path().to_path_buf(),
            _dir: test.dir,
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{}", self.base, path)
    }

    /// Waits until the server's workers have applied every change written so far.
    pub async fn settle(&self) {
        self.server
            .state
            .workers
            .settle(std::time::Duration::from_secs(30))
            .await
            .expect("the workers catch up");
    }

    pub fn api(&self) -> Api {
        Api {
            client: self.client.clone(),
            base: self.base.clone(),
            credentials: self.credentials.clone(),
        }
    }

    pub async fn stop(self) {
        self.server.stop().await.expect("server stops cleanly");
    }
}

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
    client: reqwest::Client,
    base: String,
    credentials: Credentials,
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
pub mod faults;

/// The line a test prints when the event log cannot run on the MongoDB it was given.
pub const EVENT_LOG_SKIPPED: &str =
    "SKIPPED: needs a real MongoDB (capped collections, tailable cursors)";

/// The backends whose store can keep an event log: embedded always, MongoDB only when
/// the server has capped collections (not the stand-in), otherwise announced as skipped.
pub async fn event_log_kinds(test: &str) -> Vec<Kind> {
    let mut found = vec![Kind::Embedded];
    for kind in kinds(test) {
        if kind != Kind::Mongo {
            continue;
        }
        let t = fresh_store(kind).await;
        let bounds = socialite::store::LogBounds {
            max_count: 1000,
            max_bytes: 1 << 20,
        };
        match t.store.events.prepare_log(bounds).await {
            Ok(()) => found.push(kind),
            Err(_) => {
                use std::io::Write;
                // Written past the test harness's capture, so that the run's log shows it.
                let line = format!("{EVENT_LOG_SKIPPED}\n");
                std::io::stderr().write_all(line.as_bytes()).unwrap();
            }
        }
    }
    found
}
