//! The display-name word index (`name_word_entries`, `sync_name_words`,
//! `rebuild_name_words`), held to one behaviour on every backend: entries in
//! (word, user) order, a cursor strictly after an entry, a prefix that ends where its
//! words end, a rename that takes the old words out and puts the new ones in, and a
//! rebuild that restores an entry written out of the index behind the ports' back.

use socialite::domain::{NewUser, now_ms};
use socialite::store::{NameWord, Store};

use crate::common::{Kind, TestStore, fresh_store, kinds};

fn entry(word: &str, user: &str) -> NameWord {
    NameWord {
        word: word.into(),
        user: user.into(),
    }
}

fn pairs(entries: &[NameWord]) -> Vec<(String, String)> {
    entries
        .iter()
        .map(|e| (e.word.clone(), e.user.clone()))
        .collect()
}

async fn found(
    store: &Store,
    prefix: &str,
    after: Option<&NameWord>,
    limit: usize,
) -> Vec<(String, String)> {
    let entries = store
        .users
        .name_word_entries(prefix, after, limit)
        .await
        .unwrap();
    pairs(&entries)
}

/// Takes one entry out of the index with no port's help.
async fn drop_entry(t: &TestStore, word: &str, user: &str) {
    match t.kind {
        Kind::Embedded => {
            let conn = rusqlite::Connection::open(t.embedded_file().unwrap()).unwrap();
            let sql = "DELETE FROM name_words WHERE word = ?1 AND user = ?2";
            assert_eq!(conn.execute(sql, [word, user]).unwrap(), 1);
        }
        Kind::Mongo => {
            let uri = t.mongo_uri.as_deref().unwrap();
            let client = mongodb::Client::with_uri_str(uri).await.unwrap();
            let coll = client
                .default_database()
                .unwrap()
                .collection::<mongodb::bson::Document>("name_words");
            let filter = mongodb::bson::doc! { "w": word, "u": user };
            assert_eq!(coll.delete_one(filter).await.unwrap().deleted_count, 1);
        }
    }
}

#[tokio::test]
async fn name_words_are_a_range_in_word_then_user_order() {
    let mut answers = Vec::new();
    for kind in kinds("name_words_are_a_range_in_word_then_user_order") {
        let t = fresh_store(kind).await;
        let store = &t.store;
        for (id, name) in [
            ("zed", "Alice Liddell"),
            ("amy", "alice"),
            ("bo", "Alpha Bal"),
            ("cy", "BAL al"),
            ("dee", "Zoë Ünal"),
        ] {
            let user = NewUser {
                id: id.into(),
                display_name: name.into(),
                created_at_ms: now_ms(),
            };
            store.users.create_user(&user).await.unwrap();
        }
        let al = found(store, "al", None, 10).await;
        let want = [
            ("al", "cy"),
            ("alice", "amy"),
            ("alice", "zed"),
            ("alpha", "bo"),
        ];
        let want: Vec<(String, String)> = want
            .iter()
            .map(|(w, u)| (w.to_string(), u.to_string()))
            .collect();
        assert_eq!(
            al, want,
            "{kind:?}: \"al\" is a prefix, never inside a word"
        );
        // The cursor: strictly after an entry, within the prefix's range.
        assert_eq!(found(store, "al", None, 2).await, want[..2], "{kind:?}");
        let after = entry("alice", "amy");
        assert_eq!(
            found(store, "al", Some(&after), 10).await,
            want[2..],
            "{kind:?}"
        );
        let after = entry("alpha", "bo");
        assert!(
            found(store, "al", Some(&after), 10).await.is_empty(),
            "{kind:?}"
        );
        // A cursor past the prefix's range finds nothing; one below it starts at it.
        let after = entry("bal", "bo");
        assert!(
            found(store, "al", Some(&after), 10).await.is_empty(),
            "{kind:?}"
        );
        let after = entry("a", "zzz");
        assert_eq!(found(store, "al", Some(&after), 10).await, want, "{kind:?}");
        assert_eq!(
            found(store, "bal", None, 10).await,
            [
                ("bal".to_owned(), "bo".to_owned()),
                ("bal".to_owned(), "cy".to_owned())
            ],
            "{kind:?}"
        );
        assert_eq!(
            found(store, "ün", None, 10).await,
            [("ünal".to_owned(), "dee".to_owned())],
            "{kind:?}: words are lower-cased Unicode"
        );
        assert!(
            found(store, "alicex", None, 10).await.is_empty(),
            "{kind:?}"
        );
        answers.push(found(store, "", None, 100).await);

        // A rename takes the old words out and puts the new ones in.
        store.users.rename_user("bo", "Bravo alpha").await.unwrap();
        assert_eq!(
            found(store, "", None, 100)
                .await
                .into_iter()
                .filter(|(_, u)| u == "bo")
                .collect::<Vec<_>>(),
            [
                ("alpha".to_owned(), "bo".to_owned()),
                ("bravo".to_owned(), "bo".to_owned())
            ],
            "{kind:?}"
        );
        assert_eq!(
            found(store, "bal", None, 10).await,
            [("bal".to_owned(), "cy".to_owned())],
            "{kind:?}: the old word is gone"
        );
        let mut held = store.users.name_words_of(&["bo".into()]).await.unwrap();
        held.sort_by(|a, b| a.word.cmp(&b.word));
        assert_eq!(
            pairs(&held),
            [
                ("alpha".to_owned(), "bo".to_owned()),
                ("bravo".to_owned(), "bo".to_owned())
            ],
            "{kind:?}"
        );

        // An entry dropped behind the ports' back: the rebuild writes it again, and a
        // second rebuild has nothing to do.
        drop_entry(&t, "liddell", "zed").await;
        assert!(found(store, "lid", None, 10).await.is_empty(), "{kind:?}");
        assert!(
            store.users.rebuild_name_words().await.unwrap() >= 1,
            "{kind:?}"
        );
        assert_eq!(
            found(store, "lid", None, 10).await,
            [("liddell".to_owned(), "zed".to_owned())],
            "{kind:?}"
        );
        assert_eq!(
            store.users.rebuild_name_words().await.unwrap(),
            0,
            "{kind:?}"
        );
        answers.push(found(store, "", None, 100).await);
    }
    // Both stores answer alike.
    if answers.len() == 4 {
        assert_eq!(answers[0], answers[2]);
        assert_eq!(answers[1], answers[3]);
    }
}
