//! What the virtual clients share: the cluster, the model behind a lock (never held
//! across an `.await`), the run's clock, the HTTP client that tells a refused request
//! (never executed) from a lost one (outcome unknown), and the run's counters.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use rand::RngExt;
use reqwest::{Method, StatusCode};
use serde_json::Value;

use super::cluster::{Cluster, Target, Topology};
use super::model::{Clock, Model};

/// How a request ended.
#[derive(Debug)]
pub enum Reply {
    Answer(StatusCode, Value),
    /// Never reached a server: it surely did nothing.
    Refused,
    /// Sent, and the answer never came (killed process, timeout): outcome unknown.
    Lost,
}

impl Reply {
    pub fn status(&self) -> Option<StatusCode> {
        match self {
            Reply::Answer(s, _) => Some(*s),
            _ => None,
        }
    }
}

/// The generator every random choice of a run comes from.
pub type Rng = rand::rngs::Xoshiro256PlusPlus;

#[derive(Default)]
pub struct Stats {
    pub ops: AtomicU64,
    pub kills: AtomicU64,
    pub aborts: AtomicU64,
    pub lost: AtomicU64,
    pub reads_checked: AtomicU64,
    /// Events delivered to stream sessions.
    pub streamed: AtomicU64,
    /// Notifications served after their cause was surely undone (see `oracle::notes`).
    pub stale_notifications: AtomicU64,
    /// Reposts acknowledged, and repost items served in home timelines (each checked).
    pub reposts: AtomicU64,
    pub reposts_served: AtomicU64,
    /// Home-timeline walks and notification reads sent to the Mastodon view
    /// (`oracle::masto`), each checked like a `/v1` one.
    pub masto_reads: AtomicU64,
    /// Dismissals and clears of notifications answered 2xx (`notes/dismiss.rs`), and
    /// Mastodon `since_id`/`min_id` pages read and checked (`oracle::paging`).
    pub dismissals: AtomicU64,
    pub clears: AtomicU64,
    pub newer_pages: AtomicU64,
}

impl Stats {
    pub fn bump(counter: &AtomicU64) {
        counter.fetch_add(1, Ordering::Relaxed);
    }
}

pub struct World {
    pub topology: Topology,
    pub seed: u64,
    pub cluster: Cluster,
    pub model: Mutex<Model>,
    pub clock: Clock,
    pub http: reqwest::Client,
    pub stats: Stats,
    /// Lease versions when the run began, per worker.
    pub baseline: Mutex<std::collections::BTreeMap<String, u64>>,
}

impl World {
    pub fn now(&self) -> i64 {
        self.clock.now()
    }

    pub fn model(&self) -> std::sync::MutexGuard<'_, Model> {
        self.model.lock().unwrap()
    }

    /// A running process, waiting while none is.
    pub async fn pick(&self, rng: &mut Rng) -> Target {
        loop {
            let up = self.cluster.up();
            if !up.is_empty() {
                return up[rng.random_range(0..up.len())].clone();
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    pub fn token(&self, user: &str) -> String {
        self.model().users[user].token.clone()
    }

    /// `user`'s OAuth access token for the Mastodon view (`oracle::masto::sign_in`).
    pub fn masto_token(&self, user: &str) -> String {
        self.model().users[user].masto_token.clone()
    }

    pub async fn call(
        &self,
        target: &Target,
        method: Method,
        path: &str,
        token: Option<&str>,
        body: Option<Value>,
    ) -> Reply {
        self.call_linked(target, method, path, token, body).await.0
    }

    /// [`World::call`], and the answer's `Link` header (Mastodon's paging).
    pub async fn call_linked(
        &self,
        target: &Target,
        method: Method,
        path: &str,
        token: Option<&str>,
        body: Option<Value>,
    ) -> (Reply, Option<String>) {
        let mut request = self.http.request(method, format!("{}{path}", target.base));
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        if let Some(body) = body {
            request = request.json(&body);
        }
        let response = match request.send().await {
            Ok(r) => r,
            Err(e) if e.is_connect() => return (Reply::Refused, None),
            Err(_) => {
                Stats::bump(&self.stats.lost);
                return (Reply::Lost, None);
            }
        };
        let status = response.status();
        let link = response
            .headers()
            .get("link")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let Ok(text) = response.text().await else {
            Stats::bump(&self.stats.lost);
            return (Reply::Lost, None);
        };
        let value = serde_json::from_str(&text).unwrap_or(Value::String(text));
        if status == StatusCode::INTERNAL_SERVER_ERROR {
            self.model()
                .violation(format!("500 from {} {path}: {value}", target.base));
        }
        (Reply::Answer(status, value), link)
    }

    /// A read that must succeed while the process is up: `None` when the process went
    /// away or was busy (503), so that nothing is checked.
    pub async fn read(&self, target: &Target, path: &str, token: Option<&str>) -> Option<Value> {
        self.read_linked(target, path, token).await.map(|(v, _)| v)
    }

    /// [`World::read`], and the answer's `Link` header.
    pub async fn read_linked(
        &self,
        target: &Target,
        path: &str,
        token: Option<&str>,
    ) -> Option<(Value, Option<String>)> {
        let (reply, link) = self
            .call_linked(target, Method::GET, path, token, None)
            .await;
        match reply {
            Reply::Answer(StatusCode::OK, v) => Some((v, link)),
            Reply::Answer(StatusCode::SERVICE_UNAVAILABLE, _) | Reply::Refused | Reply::Lost => {
                None
            }
            Reply::Answer(status, v) => {
                self.model()
                    .violation(format!("GET {path} on {}: {status} {v}", target.base));
                None
            }
        }
    }
}
