//! Blocks and mutes (issue 35, sections 1 and 2), on every backend: the graph rules and
//! the follow/block race here (`relations/graph.rs`), home timelines and kept pages
//! under every strategy with mute expiry by the injectable clock
//! (`relations/timelines.rs`), the HTTP API and the blocked caller's reads
//! (`relations/http.rs`), and the live stream (`relations/stream.rs`).

mod common;
#[path = "relations/fallback.rs"]
mod fallback;
#[path = "relations/graph.rs"]
mod graph;
#[path = "relations/hidden.rs"]
mod hidden;
#[path = "relations/http.rs"]
mod http;
#[path = "stream/sse.rs"]
mod sse;
#[path = "relations/stream.rs"]
mod stream;
#[path = "relations/timelines.rs"]
mod timelines;

use socialite::domain::FeedStrategy;
use socialite::feed::FeedSettings;
use socialite::service::Social;
use socialite::store::Store;

fn settings(strategy: FeedStrategy) -> FeedSettings {
    FeedSettings {
        strategy,
        inline_fanout_max: u64::MAX,
        ..FeedSettings::default()
    }
}

fn social(store: &Store, settings: &FeedSettings) -> Social {
    crate::common::social(store.clone(), settings)
}
