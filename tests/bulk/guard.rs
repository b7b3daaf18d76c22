//! Serving and loading exclude each other, in either order, whatever the workers: each
//! side registers in one atomic step of the store (`BulkStore::enter_serving`,
//! `BulkStore::begin_load`), so neither can pass its check while the other passes its
//! own. Proven by order, not by timing: the second to come is refused.

use socialite::bulk::Loader;
use socialite::domain::{FeedStrategy, now_ms};
use socialite::store::bulk::Exclusion;

use super::common::kinds;
use super::config;

/// The port itself, on two handles of one store (two processes): a load begun refuses
/// a server; a registered server refuses a load; each gone, the other is let in.
#[tokio::test]
async fn the_bulk_port_lets_serving_or_loading_in_never_both() {
    for kind in kinds("the_bulk_port_lets_serving_or_loading_in_never_both") {
        let test = config(kind, FeedStrategy::Cache);
        let loader = socialite::app::open_store(&test.config).await.unwrap();
        let server = socialite::app::open_store(&test.config).await.unwrap();

        loader.bulk.begin_load(now_ms()).await.unwrap().unwrap();
        let refused = server.bulk.enter_serving("server-1").await.unwrap();
        assert!(
            matches!(refused, Err(Exclusion::Loading { .. })),
            "{kind:?}: {refused:?}"
        );
        loader.bulk.finish_load().await.unwrap();

        server
            .bulk
            .enter_serving("server-1")
            .await
            .unwrap()
            .unwrap();
        // A second registration of the same handle is counted.
        server
            .bulk
            .enter_serving("server-1")
            .await
            .unwrap()
            .unwrap();
        let refused = loader.bulk.begin_load(now_ms()).await.unwrap();
        assert!(
            matches!(refused, Err(Exclusion::Serving { .. })),
            "{kind:?}: {refused:?}"
        );
        assert_eq!(loader.bulk.load_in_progress().await.unwrap(), None);
        server.bulk.leave_serving().await.unwrap();
        let refused = loader.bulk.begin_load(now_ms()).await.unwrap();
        assert!(refused.is_err(), "{kind:?}: one registration is left");
        server.bulk.leave_serving().await.unwrap();

        loader.bulk.begin_load(now_ms()).await.unwrap().unwrap();
        assert!(loader.bulk.load_in_progress().await.unwrap().is_some());
        loader.bulk.finish_load().await.unwrap();
        server
            .bulk
            .enter_serving("server-1")
            .await
            .unwrap()
            .unwrap();
        server.bulk.leave_serving().await.unwrap();
    }
}

/// A load begun, then a server: refused. A server started with its workers off (it
/// holds no lease), then a load or an import: refused. Stopped, the load runs.
#[tokio::test]
async fn serve_and_import_refuse_each_other_in_both_orders() {
    for kind in kinds("serve_and_import_refuse_each_other_in_both_orders") {
        let mut test = config(kind, FeedStrategy::Cache);
        let settings = socialite::bulk::derive_settings(&test.config);
        let store = socialite::app::open_store(&test.config).await.unwrap();
        let loader = Loader::begin(store, settings.clone()).await.unwrap();
        let refused = socialite::app::spawn(&test.config)
            .await
            .err()
            .expect("a server beside a running load is refused");
        assert!(
            refused.to_string().contains("bulk load"),
            "{kind:?}: {refused:#}"
        );
        loader.finish().await.unwrap();

        test.config.workers.enabled = false;
        let server = socialite::app::spawn(&test.config).await.unwrap();
        let store = socialite::app::open_store(&test.config).await.unwrap();
        let refused = Loader::begin(store.clone(), settings.clone())
            .await
            .err()
            .expect("a load beside a server without workers is refused");
        assert!(
            refused.to_string().contains("is running on this store"),
            "{kind:?}: {refused:#}"
        );
        assert_eq!(store.bulk.load_in_progress().await.unwrap(), None);
        let dir = tempfile::tempdir().unwrap();
        let users = dir.path().join("users.jsonl");
        std::fs::write(&users, "{\"id\":\"ann\"}\n").unwrap();
        let files = socialite::bulk::import::ImportFiles {
            users: Some(users),
            ..Default::default()
        };
        let refused = socialite::bulk::import::run(store.clone(), settings.clone(), &files)
            .await
            .expect_err("an import beside a server is refused");
        assert!(
            refused.to_string().contains("is running on this store"),
            "{kind:?}: {refused:#}"
        );
        assert_eq!(store.users.user("ann").await.unwrap(), None, "{kind:?}");

        server.stop().await.unwrap();
        socialite::bulk::import::run(store.clone(), settings, &files)
            .await
            .unwrap();
        assert!(store.users.user("ann").await.unwrap().is_some(), "{kind:?}");
    }
}
