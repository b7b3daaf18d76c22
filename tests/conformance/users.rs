//! The users by id prefix (`users_by_prefix`, the Mastodon view's account search), held
//! to one behaviour on every backend: a bytewise range of ids, by id, at most `limit`.

use socialite::domain::{NewUser, now_ms};

use crate::common::{fresh_store, kinds};

#[tokio::test]
async fn users_by_prefix_are_a_range_of_ids_in_id_order() {
    for kind in kinds("users_by_prefix_are_a_range_of_ids_in_id_order") {
        let t = fresh_store(kind).await;
        let store = &t.store;
        // `_` sorts between upper and lower case letters; `Bo` is another prefix.
        for id in ["bob", "Bob", "bo_", "bobby", "bp", "b", "alice", "bo9"] {
            let user = NewUser {
                id: id.into(),
                display_name: format!("{id}'s name"),
                created_at_ms: now_ms(),
            };
            store.users.create_user(&user).await.unwrap();
        }
        let ids = |prefix: &'static str, limit: usize| async move {
            let found = store.users.users_by_prefix(prefix, limit).await.unwrap();
            found.into_iter().map(|u| u.id).collect::<Vec<_>>()
        };
        assert_eq!(
            ids("bo", 10).await,
            ["bo9", "bo_", "bob", "bobby"],
            "{kind:?}"
        );
        assert_eq!(ids("bo", 2).await, ["bo9", "bo_"], "{kind:?}");
        assert_eq!(ids("bob", 10).await, ["bob", "bobby"], "{kind:?}");
        assert_eq!(ids("b", 10).await.len(), 6, "{kind:?}");
        assert_eq!(
            ids("B", 10).await,
            ["Bob"],
            "{kind:?}: ids are case-sensitive"
        );
        assert!(ids("c", 10).await.is_empty(), "{kind:?}");
        let found = store.users.users_by_prefix("alice", 1).await.unwrap();
        assert_eq!(
            found[0].display_name, "alice's name",
            "{kind:?}: whole profiles"
        );
    }
}
