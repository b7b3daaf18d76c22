//! The activity log: race-free overflow under concurrent writers, pagination across the
//! primary document and the pages, and bad input over HTTP. Runs on every backend.
//!
//! This file holds the log helper, concurrent overflow and pagination; the seeder's
//! activities are in `activity/seeding.rs`, the log over HTTP in `activity/http.rs`.

mod common;
#[path = "activity/http.rs"]
mod http;
#[path = "activity/seeding.rs"]
mod seeding;

use std::sync::Arc;

use common::{fresh_store, kinds};
use socialite::domain::{ActivityLimits, ActivityType, NewUser, now_ms};
use socialite::service::ActivityLog;

async fn log_with_user(
    kind: common::Kind,
    limits: ActivityLimits,
) -> (common::TestStore, Arc<ActivityLog>) {
    let t = fresh_store(kind).await;
    t.store
        .users
        .create_user(&NewUser {
            id: "power".into(),
            display_name: "Power".into(),
            created_at_ms: now_ms(),
        })
        .await
        .unwrap();
    let log = Arc::new(ActivityLog::new(
        t.store.clone(),
        limits,
        Default::default(),
    ));
    (t, log)
}

#[tokio::test]
async fn concurrent_writers_overflow_without_races() {
    const START: usize = 990;
    const WRITERS: usize = 64;
    const TOTAL: usize = 2500;
    let limits = ActivityLimits {
        primary_limit: 1000,
        page_size: 250,
    };
    for kind in kinds("concurrent_writers_overflow_without_races") {
        let (t, log) = log_with_user(kind, limits).await;
        for i in 0..START {
            log.record("power", ActivityType::Post, &format!("seed{i}"))
                .await
                .unwrap();
        }
        let mut tasks = Vec::new();
        for w in 0..WRITERS {
            let log = log.clone();
            tasks.push(tokio::spawn(async move {
                let mut seqs = Vec::new();
                for i in (w..TOTAL).step_by(WRITERS) {
                    seqs.push(
                        log.record("power", ActivityType::Like, &format!("c{i}"))
                            .await
                            .unwrap()
                            .seq,
                    );
                }
                seqs
            }));
        }
        let mut seqs = Vec::new();
        for task in tasks {
            seqs.extend(task.await.unwrap());
        }
        seqs.sort_unstable();
        let expected: Vec<u64> = (START as u64..(START + TOTAL) as u64).collect();
        assert_eq!(
            seqs, expected,
            "{kind:?}: every sequence number handed out exactly once"
        );

        let layout = t.store.activity.activity_layout("power").await.unwrap();
        assert_eq!(
            layout.primary, 1000,
            "{kind:?}: the primary document holds exactly the limit"
        );
        assert!(
            layout.pages.iter().all(|&(_, n)| n <= 250),
            "{kind:?}: a page over size: {layout:?}"
        );
        let stored: u64 = layout.primary + layout.pages.iter().map(|p| p.1).sum::<u64>();
        assert_eq!(stored, (START + TOTAL) as u64, "{kind:?}: {layout:?}");
        assert_eq!(
            layout.pages.len(),
            (START + TOTAL - 1000).div_ceil(250),
            "{kind:?}"
        );

        // Reading every page returns each activity once, newest first.
        let mut refs = Vec::new();
        let mut skip = 0;
        loop {
            let page = log.page("power", skip, 100).await.unwrap();
            assert_eq!(page.total, (START + TOTAL) as u64);
            if page.items.is_empty() {
                break;
            }
            skip += page.items.len() as u64;
            refs.extend(page.items.into_iter().map(|a| (a.seq, a.reference)));
        }
        assert_eq!(refs.len(), START + TOTAL);
        assert!(
            refs.windows(2).all(|w| w[0].0 == w[1].0 + 1),
            "{kind:?}: contiguous, newest first"
        );
        let mut names: Vec<&str> = refs.iter().map(|r| r.1.as_str()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(
            names.len(),
            START + TOTAL,
            "{kind:?}: every activity exactly once"
        );
    }
}

#[tokio::test]
async fn pages_cross_the_primary_document_and_page_boundaries() {
    let limits = ActivityLimits {
        primary_limit: 5,
        page_size: 3,
    };
    for kind in kinds("pages_cross_the_primary_document_and_page_boundaries") {
        let (t, log) = log_with_user(kind, limits).await;
        let empty = log.page("power", 0, 10).await.unwrap();
        assert_eq!((empty.items.len(), empty.total), (0, 0));
        for i in 0..12 {
            let kind = [ActivityType::Post, ActivityType::Like, ActivityType::Follow][i % 3];
            assert_eq!(
                log.record("power", kind, &format!("r{i}"))
                    .await
                    .unwrap()
                    .seq,
                i as u64
            );
        }
        let layout = t.store.activity.activity_layout("power").await.unwrap();
        assert_eq!(
            (layout.primary, layout.pages.clone()),
            (5, vec![(0, 3), (1, 3), (2, 1)]),
            "{kind:?}"
        );
        for (skip, limit) in [
            (0, 1),
            (0, 7),
            (1, 3),
            (4, 3),
            (6, 2),
            (6, 6),
            (7, 5),
            (10, 5),
            (11, 1),
            (12, 1),
            (0, 12),
        ] {
            let page = log.page("power", skip, limit).await.unwrap();
            let got: Vec<String> = page.items.iter().map(|a| a.reference.clone()).collect();
            let want: Vec<String> = (0..12u64)
                .rev()
                .skip(skip as usize)
                .take(limit as usize)
                .map(|i| format!("r{i}"))
                .collect();
            assert_eq!(got, want, "{kind:?} skip={skip} limit={limit}");
            assert_eq!(page.total, 12);
        }
        let newest = &log.page("power", 0, 1).await.unwrap().items[0];
        assert_eq!((newest.kind, newest.seq), (ActivityType::Follow, 11));
        // A new log takes the configured layout; an existing one keeps its own.
        let other = ActivityLog::new(
            t.store.clone(),
            ActivityLimits {
                primary_limit: 100,
                page_size: 100,
            },
            Default::default(),
        );
        assert_eq!(
            other
                .record("power", ActivityType::Post, "r12")
                .await
                .unwrap()
                .seq,
            12
        );
        let layout = t.store.activity.activity_layout("power").await.unwrap();
        assert_eq!(layout.pages.last(), Some(&(2, 2)), "{kind:?}");
    }
}
