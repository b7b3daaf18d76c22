//! Order across collections while writers race a reader: users come before their posts,
//! each change is read once, whatever the reader's batch size.

use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use socialite::domain::{Change, ChangeOp, now_ms};

use super::{DEADLINE, handle, inserts, new_user, read_to_end, read_until};
use crate::common::kinds;

/// What a reader must have seen once every write is in: each user and post inserted
/// exactly once, no change twice, and nothing about a user (a post, a counter update)
/// before that user's insert.
fn check_reader(label: &str, read: &[Change], users: &HashSet<String>, posts: &HashSet<String>) {
    for (collection, written) in [("users", users), ("posts", posts)] {
        let read = inserts(read, collection);
        assert_eq!(read.len(), written.len(), "{label}: no {collection} twice");
        let read: HashSet<String> = read.into_iter().map(str::to_owned).collect();
        assert_eq!(&read, written, "{label}: every one of {collection}");
    }
    let positions: HashSet<_> = read.iter().map(|c| &c.position).collect();
    assert_eq!(positions.len(), read.len(), "{label}: no change twice");

    let mut created = HashSet::new();
    let mut early = Vec::new();
    for (index, change) in read.iter().enumerate() {
        let author = match (change.collection.as_str(), change.op) {
            ("users", ChangeOp::Insert) => {
                created.insert(change.key.clone());
                continue;
            }
            ("users", _) => change.key.clone(),
            ("posts", ChangeOp::Insert) => {
                let document = change.document.as_ref().expect("a post's document");
                document["author"].as_str().unwrap().to_owned()
            }
            _ => continue,
        };
        if !created.contains(&author) {
            early.push((index, author));
        }
    }
    assert!(early.is_empty(), "{label}: before their user: {early:?}");
}

fn insert_count(changes: &[Change]) -> usize {
    changes.iter().filter(|c| c.op == ChangeOp::Insert).count()
}

/// Waits, up to the deadline, until `seen` reaches `count`.
async fn until_seen(seen: &AtomicUsize, count: usize) {
    let deadline = Instant::now() + DEADLINE;
    while seen.load(Ordering::SeqCst) < count {
        assert!(Instant::now() < deadline, "the reader never caught up");
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn users_come_before_their_posts_while_a_reader_reads_concurrently() {
    const WRITERS: usize = 4;
    const ROUNDS: usize = 12;
    const POSTS: usize = 2;
    for kind in kinds("users_come_before_their_posts_while_a_reader_reads_concurrently") {
        let h = handle(kind).await;
        let wanted = WRITERS * ROUNDS * (1 + POSTS);
        // One reader pages through with a small limit. The other takes all there is and
        // sets the pace: each round of writes starts once it has read the last, so that
        // writes land while it reads at the head of the feed, where order is decided.
        let head = Arc::new(AtomicUsize::new(0));
        let readers: Vec<_> = [(3, None), (500, Some(head.clone()))]
            .into_iter()
            .map(|(limit, progress)| {
                let feed = h.store.change_feed.clone();
                tokio::spawn(async move {
                    let mut position = None;
                    let read = read_until(feed.as_ref(), &mut position, limit, |read| {
                        if let Some(progress) = &progress {
                            progress.store(insert_count(read), Ordering::SeqCst);
                        }
                        insert_count(read) >= wanted
                    })
                    .await;
                    (limit, read, position)
                })
            })
            .collect();
        let mut users = HashSet::new();
        let mut posts = HashSet::new();
        for round in 0..ROUNDS {
            let writers: Vec<_> = (0..WRITERS)
                .map(|w| {
                    let store = h.store.clone();
                    let id = format!("w{w}r{round}");
                    tokio::spawn(async move {
                        store.users.create_user(&new_user(&id)).await.unwrap();
                        let mut posts = Vec::new();
                        for p in 0..POSTS {
                            let text = format!("{p}");
                            let post = store.content.insert_post(&id, &text, None, now_ms());
                            posts.push(post.await.unwrap().post.id.to_string());
                        }
                        (id, posts)
                    })
                })
                .collect();
            for writer in writers {
                let (id, new) = writer.await.unwrap();
                users.insert(id);
                posts.extend(new);
            }
            until_seen(&head, users.len() + posts.len()).await;
        }
        for reader in readers {
            let (limit, mut read, mut position) = reader.await.unwrap();
            // What is left (counter updates on MongoDB) must not repeat an insert.
            read.extend(read_to_end(h.store.change_feed.as_ref(), &mut position).await);
            check_reader(&format!("{kind:?}, limit {limit}"), &read, &users, &posts);
        }
    }
}
