//! Users loaded by `socialite import` are found by the words of their display names:
//! the bulk loader writes the name word index with the profiles, on both stores.

use socialite::domain::FeedStrategy;

use super::common::kinds;
use super::config;

#[tokio::test]
async fn imported_users_are_found_by_name_words() {
    for kind in kinds("imported_users_are_found_by_name_words") {
        let test = config(kind, FeedStrategy::Cache);
        let store = socialite::app::open_store(&test.config).await.unwrap();
        let settings = socialite::bulk::derive_settings(&test.config);
        let dir = tempfile::tempdir().unwrap();
        let users = dir.path().join("users.jsonl");
        let lines = [
            r#"{"id":"u1","display_name":"Alice Liddell"}"#,
            r#"{"id":"u2","display_name":"Zoë ALPHA"}"#,
            r#"{"id":"u3"}"#,
        ];
        std::fs::write(&users, lines.join("\n") + "\n").unwrap();
        let files = socialite::bulk::import::ImportFiles {
            users: Some(users),
            ..Default::default()
        };
        socialite::bulk::import::run(store.clone(), settings, &files)
            .await
            .unwrap();
        let found = |prefix: &'static str| {
            let store = store.clone();
            async move {
                let entries = store
                    .users
                    .name_word_entries(prefix, None, 10)
                    .await
                    .unwrap();
                entries
                    .into_iter()
                    .map(|e| (e.word, e.user))
                    .collect::<Vec<_>>()
            }
        };
        let pair = |w: &str, u: &str| (w.to_owned(), u.to_owned());
        assert_eq!(
            found("al").await,
            [pair("alice", "u1"), pair("alpha", "u2")],
            "{kind:?}"
        );
        assert_eq!(found("lidd").await, [pair("liddell", "u1")], "{kind:?}");
        assert_eq!(found("zoë").await, [pair("zoë", "u2")], "{kind:?}");
        assert_eq!(
            found("u3").await,
            [pair("u3", "u3")],
            "{kind:?}: the name defaults to the id"
        );
    }
}
