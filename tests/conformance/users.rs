//! The accounts by id prefix (`accounts_by_prefix`, the Mastodon view's account search),
//! held to one behaviour on every backend: a bytewise range of ids, by id, at most
//! `limit`, each with its last status; and the accounts (`accounts`): profiles with their
//! newest existing post or repost.

use socialite::domain::{NewUser, now_ms};

use crate::common::{fresh_store, kinds};

#[tokio::test]
async fn accounts_by_prefix_are_a_range_of_ids_in_id_order() {
    for kind in kinds("accounts_by_prefix_are_a_range_of_ids_in_id_order") {
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
            let found = store.users.accounts_by_prefix(prefix, limit).await.unwrap();
            found.into_iter().map(|a| a.user.id).collect::<Vec<_>>()
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
        assert!(ids("bo", 0).await.is_empty(), "{kind:?}: a limit of 0");
        let found = store.users.accounts_by_prefix("alice", 1).await.unwrap();
        let alice = store.users.user("alice").await.unwrap().unwrap();
        assert_eq!(found[0].user, alice, "{kind:?}: whole profiles");

        // `bob` posts; `bobby` posts, then reposts bob's post (a newer id); `bo_` and
        // `bo9` have none.
        let post = |author: &'static str| async move {
            let inserted = store.content.insert_post(author, "hi", None, now_ms());
            inserted.await.unwrap().post.id
        };
        let bobs = post("bob").await;
        let bobbys = post("bobby").await;
        let repost = store.reposts.repost("bobby", bobs, now_ms()).await;
        let reposted = repost.unwrap().repost.id;
        assert!(reposted > bobbys, "{kind:?}: ids increase");
        let found = store.users.accounts_by_prefix("bo", 10).await.unwrap();
        let last: Vec<_> = found
            .into_iter()
            .map(|a| (a.user.id, a.last_status))
            .collect();
        let last: Vec<(&str, _)> = last.iter().map(|(id, l)| (id.as_str(), *l)).collect();
        assert_eq!(
            last,
            [
                ("bo9", None),
                ("bo_", None),
                ("bob", Some(bobs)),
                ("bobby", Some(reposted))
            ],
            "{kind:?}: each with its newest post or repost"
        );
    }
}

/// `accounts`: each profile with its newest existing post or repost, lowered when the
/// newest goes, on every backend.
#[tokio::test]
async fn accounts_carry_the_newest_existing_post_or_repost() {
    for kind in kinds("accounts_carry_the_newest_existing_post_or_repost") {
        let t = fresh_store(kind).await;
        let store = &t.store;
        for id in ["ann", "bob", "cat"] {
            let user = NewUser {
                id: id.into(),
                display_name: format!("{id}'s name"),
                created_at_ms: now_ms(),
            };
            store.users.create_user(&user).await.unwrap();
        }
        let post = |author: &'static str| async move {
            let inserted = store.content.insert_post(author, "hi", None, now_ms());
            inserted.await.unwrap().post.id
        };
        let last = |ids: &'static [&'static str]| async move {
            let ids: Vec<String> = ids.iter().map(|id| (*id).to_owned()).collect();
            let mut found = store.users.accounts(&ids).await.unwrap();
            found.sort_by(|a, b| a.user.id.cmp(&b.user.id));
            found
                .into_iter()
                .map(|a| (a.user.id, a.last_status))
                .collect::<Vec<_>>()
        };
        let all: &[&str] = &["cat", "nobody", "bob", "ann", "ann"];
        let none = last(all).await;
        let (ann, bob, cat) = ("ann".to_owned(), "bob".to_owned(), "cat".to_owned());
        assert_eq!(
            none,
            [
                (ann.clone(), None),
                (bob.clone(), None),
                (cat.clone(), None)
            ],
            "{kind:?}: no posts yet; unknown ids left out"
        );
        let first = post("ann").await;
        let bobs = post("bob").await;
        let second = post("ann").await;
        let repost = store.reposts.repost("bob", first, now_ms()).await.unwrap();
        let reposted = repost.repost.id;
        assert!(reposted > second && second > bobs, "{kind:?}: ids increase");
        assert_eq!(
            last(all).await,
            [
                (ann.clone(), Some(second)),
                (bob.clone(), Some(reposted)),
                (cat.clone(), None)
            ],
            "{kind:?}: the newest post, or repost"
        );
        let profiles = store
            .users
            .accounts(std::slice::from_ref(&ann))
            .await
            .unwrap();
        let user = store.users.user("ann").await.unwrap().unwrap();
        assert_eq!(profiles[0].user, user, "{kind:?}: the whole profile");

        store.content.delete_post(second).await.unwrap();
        store.reposts.unrepost("bob", first).await.unwrap();
        assert_eq!(
            last(&["ann", "bob"]).await,
            [(ann.clone(), Some(first)), (bob.clone(), Some(bobs))],
            "{kind:?}: lowered when the newest goes"
        );
        store.content.delete_post(first).await.unwrap();
        store.content.delete_post(bobs).await.unwrap();
        assert_eq!(
            last(&["ann", "bob"]).await,
            [(ann, None), (bob, None)],
            "{kind:?}: none left"
        );
    }
}
