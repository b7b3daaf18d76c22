//! Listings across authors (issue 36), on both stores: the public timeline (every post,
//! replies included, reposts not, newest first, keyset pages both ways, hidden authors
//! left out for a known caller) and the tag timeline (the same over a hashtag, from the
//! tag index, which inserts, deletes, the bulk loader and upgrades keep).

mod common;

use reqwest::StatusCode;
use socialite::domain::{FeedStrategy, Post, PostId};
use socialite::feed::FeedSettings;
use socialite::service::{MuteRequest, Social};
use socialite::store::{PostRange, StoreError};

use common::{Kind, TestServer, fresh_config, fresh_store, kinds};

fn social(store: &socialite::store::Store) -> Social {
    let settings = FeedSettings {
        strategy: FeedStrategy::Cache,
        ..FeedSettings::default()
    };
    common::social(store.clone(), &settings)
}

/// Every page of a listing walked with `before`, in pages of `limit`.
async fn walk(
    social: &Social,
    caller: Option<&str>,
    tag: Option<&str>,
    limit: usize,
) -> Vec<PostId> {
    let (mut ids, mut range) = (Vec::new(), PostRange::Older(None));
    loop {
        let page = read(social, caller, tag, range, limit).await;
        ids.extend(page.items.iter().map(|p| p.id));
        match page.next {
            Some(next) => range = PostRange::Older(Some(next)),
            None => return ids,
        }
    }
}

async fn read(
    social: &Social,
    caller: Option<&str>,
    tag: Option<&str>,
    range: PostRange,
    limit: usize,
) -> socialite::service::Page<Post, PostId> {
    match tag {
        Some(tag) => social.tagged_posts(caller, tag, range, limit).await,
        None => social.public_posts(caller, range, limit).await,
    }
    .unwrap()
}

/// The page just above every cut, against the walk.
async fn check_newer(
    social: &Social,
    label: &str,
    caller: Option<&str>,
    tag: Option<&str>,
    all: &[PostId],
) {
    let mut cuts = vec![PostId::MIN];
    cuts.extend(all.iter().copied());
    for cut in cuts {
        for limit in [1, 3] {
            let above: Vec<PostId> = all.iter().copied().filter(|id| *id > cut).collect();
            let start = above.len().saturating_sub(limit);
            let page = read(social, caller, tag, PostRange::Newer(cut), limit).await;
            let got: Vec<PostId> = page.items.iter().map(|p| p.id).collect();
            assert_eq!(got, above[start..], "{label}: after {cut}, limit {limit}");
            let next = (above.len() > limit).then(|| above[start]);
            assert_eq!(page.next, next, "{label}: after {cut}, limit {limit}: next");
        }
    }
}

fn newest_first(mut ids: Vec<PostId>) -> Vec<PostId> {
    ids.sort_by_key(|id| std::cmp::Reverse(*id));
    ids
}

#[tokio::test]
async fn the_public_and_tag_timelines_list_every_post_once_newest_first() {
    for kind in kinds("the_public_and_tag_timelines_list_every_post_once_newest_first") {
        let t = fresh_store(kind).await;
        let social = social(&t.store);
        for id in ["reader", "a", "blocked", "blocker", "muted"] {
            social.create_user(id, id).await.unwrap();
        }
        let mut all = Vec::new();
        let mut rust = Vec::new();
        let mut seen = Vec::new();
        for i in 0..4 {
            for author in ["a", "blocked", "blocker", "muted", "reader"] {
                let text = match i % 2 {
                    0 => format!("#Rust {i} by {author} #go"),
                    _ => format!("plain {i}"),
                };
                let post = social.post(author, &text).await.unwrap();
                if i % 2 == 0 {
                    rust.push(post.id);
                }
                if !["blocked", "blocker", "muted"].contains(&author) {
                    seen.push(post.id);
                }
                all.push(post.id);
            }
        }
        // A reply is listed (and tagged); a repost is not a post; a deleted post is gone.
        let reply = social
            .post_reply("a", "re #rust", Some(all[0]))
            .await
            .unwrap()
            .id;
        all.push(reply);
        rust.push(reply);
        seen.push(reply);
        social.repost("reader", all[1]).await.unwrap();
        let gone = all.remove(5);
        rust.retain(|id| *id != gone);
        seen.retain(|id| *id != gone);
        social.delete_post(gone).await.unwrap();
        let (all, rust, seen) = (newest_first(all), newest_first(rust), newest_first(seen));
        let seen_rust: Vec<PostId> = rust
            .iter()
            .copied()
            .filter(|id| seen.contains(id))
            .collect();

        assert_eq!(walk(&social, None, None, 3).await, all, "{kind:?}: public");
        assert_eq!(
            walk(&social, None, Some("rust"), 2).await,
            rust,
            "{kind:?}: #rust"
        );
        assert_eq!(
            walk(&social, None, Some("nothing"), 2).await,
            Vec::<PostId>::new()
        );

        social.block("reader", "blocked").await.unwrap();
        social.block("blocker", "reader").await.unwrap();
        let forever = MuteRequest {
            notifications: true,
            duration_ms: None,
        };
        social.mute("reader", "muted", forever).await.unwrap();
        let reader = Some("reader");
        assert_eq!(
            walk(&social, reader, None, 2).await,
            seen,
            "{kind:?}: hidden"
        );
        assert_eq!(
            walk(&social, reader, Some("rust"), 1).await,
            seen_rust,
            "{kind:?}"
        );
        // Others still see everything.
        assert_eq!(walk(&social, Some("a"), None, 4).await, all, "{kind:?}: a");

        check_newer(&social, &format!("{kind:?}: public"), None, None, &all).await;
        check_newer(&social, &format!("{kind:?}: hidden"), reader, None, &seen).await;
        check_newer(
            &social,
            &format!("{kind:?}: #rust"),
            reader,
            Some("rust"),
            &seen_rust,
        )
        .await;

        let refused = social
            .tagged_posts(None, "Rust", PostRange::Older(None), 5)
            .await;
        assert!(
            matches!(refused, Err(StoreError::Invalid(_))),
            "{refused:?}"
        );
    }
}

/// A store from before the tag index gets it at its upgrade: the embedded file from
/// its posts (format 10), a MongoDB database at its first open by this binary.
#[tokio::test]
async fn an_upgraded_store_indexes_the_tags_of_its_posts() {
    for kind in kinds("an_upgraded_store_indexes_the_tags_of_its_posts") {
        let (store, _guard, uri) = match kind {
            Kind::Embedded => {
                let t = fresh_store(kind).await;
                (t.store.clone(), Some(t), None)
            }
            Kind::Mongo => {
                let base = common::mongo_base_uri().unwrap();
                let uri = common::mongo_uri_with_database(&base, &common::fresh_name("tags"));
                let store = socialite::store::mongo::connect(&uri).await.unwrap();
                (store, None, Some(uri))
            }
        };
        let social = social(&store);
        social.create_user("a", "a").await.unwrap();
        let tagged = social.post("a", "old #news").await.unwrap().id;
        social.post("a", "untagged").await.unwrap();
        let reopened = match (&_guard, &uri) {
            (Some(t), _) => {
                let file = t.embedded_file().unwrap();
                let conn = rusqlite::Connection::open(&file).unwrap();
                conn.execute_batch(
                    "DROP TABLE post_tags;
                     DELETE FROM meta WHERE key = 'post_tags_backfilled';
                     PRAGMA user_version = 9;",
                )
                .unwrap();
                let store = socialite::store::embedded::EmbeddedStore::open(
                    &file,
                    socialite::store::embedded::Synchronous::Normal,
                )
                .unwrap();
                socialite::store::Store::new(std::sync::Arc::new(store))
            }
            (None, Some(uri)) => {
                let client = mongodb::Client::with_uri_str(uri).await.unwrap();
                let db = client.default_database().unwrap();
                let content = db.collection::<mongodb::bson::Document>("content");
                content
                    .update_many(
                        mongodb::bson::doc! {},
                        mongodb::bson::doc! { "$unset": { "tags": "" } },
                    )
                    .await
                    .unwrap();
                db.collection::<mongodb::bson::Document>("migrations")
                    .delete_many(mongodb::bson::doc! {})
                    .await
                    .unwrap();
                let before = social
                    .tagged_posts(None, "news", PostRange::Older(None), 5)
                    .await
                    .unwrap();
                assert!(before.items.is_empty(), "the index was taken away");
                socialite::store::mongo::connect(uri).await.unwrap()
            }
            _ => unreachable!(),
        };
        let social = self::social(&reopened);
        let page = social
            .tagged_posts(None, "news", PostRange::Older(None), 5)
            .await
            .unwrap();
        let ids: Vec<PostId> = page.items.iter().map(|p| p.id).collect();
        assert_eq!(ids, [tagged], "{kind:?}");
    }
}

#[tokio::test]
async fn v1_lists_public_and_tagged_posts() {
    for kind in kinds("v1_lists_public_and_tagged_posts") {
        let server = TestServer::start(fresh_config(kind)).await;
        let api = server.api();
        api.user("alice").await;
        let first = api.say("alice", "hello #World").await;
        let second = api.say("alice", "plain").await;
        let (status, page) = api.get("/v1/timelines/public?limit=1").await;
        assert_eq!(status, StatusCode::OK, "{kind:?}: {page}");
        assert_eq!(page["items"][0]["id"], second.as_str(), "{kind:?}");
        assert_eq!(page["next_cursor"], second.as_str(), "{kind:?}");
        let (_, newer) = api
            .get(&format!("/v1/timelines/public?after={first}"))
            .await;
        assert_eq!(newer["items"].as_array().unwrap().len(), 1, "{kind:?}");
        assert!(newer["next_cursor"].is_null(), "{kind:?}: {newer}");
        let (status, tagged) = api.get("/v1/tags/world/posts").await;
        assert_eq!(status, StatusCode::OK, "{kind:?}: {tagged}");
        let ids: Vec<&str> = tagged["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["id"].as_str().unwrap())
            .collect();
        assert_eq!(ids, [first.as_str()], "{kind:?}");
        // `send` checks every 4xx is a complete problem+json.
        let both = format!("/v1/timelines/public?after={first}&before={second}");
        assert_eq!(api.get(&both).await.0, StatusCode::BAD_REQUEST, "{kind:?}");
        let (status, _) = api.get("/v1/tags/World/posts").await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{kind:?}");
        let (status, _) = api.get("/v1/tags/world/posts?after=zz").await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{kind:?}");
        server.stop().await;
    }
}

/// `socialite import` writes the tag index as a post's insert does.
#[tokio::test]
async fn an_import_indexes_the_tags_of_its_posts() {
    for kind in kinds("an_import_indexes_the_tags_of_its_posts") {
        let test = fresh_config(kind);
        let dir = tempfile::tempdir().unwrap();
        let write = |name: &str, lines: &[String]| {
            let path = dir.path().join(name);
            std::fs::write(&path, lines.join("\n") + "\n").unwrap();
            path
        };
        let t0 = socialite::domain::now_ms() - 100_000;
        let p = |k: i64| PostId::at(t0 + 1000 * k, 7);
        let users = write("users", &[format!(r#"{{"id":"ann","created_at":{t0}}}"#)]);
        let posts = write(
            "posts",
            &[
                format!(r#"{{"id":"{}","author":"ann","text":"a #Load"}}"#, p(1)),
                format!(r#"{{"id":"{}","author":"ann","text":"none"}}"#, p(2)),
                format!(r#"{{"id":"{}","author":"ann","text":"b #load #x"}}"#, p(3)),
            ],
        );
        let store = socialite::app::open_store(&test.config).await.unwrap();
        let settings = socialite::bulk::derive_settings(&test.config);
        let files = socialite::bulk::import::ImportFiles {
            users: Some(users),
            posts: Some(posts),
            ..Default::default()
        };
        socialite::bulk::import::run(store.clone(), settings, &files)
            .await
            .unwrap();
        let social = social(&store);
        assert_eq!(
            walk(&social, None, Some("load"), 1).await,
            [p(3), p(1)],
            "{kind:?}"
        );
        assert_eq!(walk(&social, None, Some("x"), 5).await, [p(3)], "{kind:?}");
        assert_eq!(
            walk(&social, None, None, 2).await,
            [p(3), p(2), p(1)],
            "{kind:?}"
        );
    }
}
