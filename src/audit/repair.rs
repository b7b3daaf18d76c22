//! `socialite audit --repair`: the workers' own rebuilds for each kind found wrong, each
//! under its worker's lease exactly as the worker runtime takes it
//! (`Runner::rebuild_once`: acquire, rebuild under the fence, commit, release), by a
//! holder named `audit/…` (`rebuild/audit-…` for the aggregates, a rebuild-type lock).
//! `replies_count` is recounted by the counters' rebuild (`UserStore::recount_all`),
//! the display-name word index by the counters' rebuild too (`UserStore::rebuild_name_words`),
//! notifications by the notifications worker's rebuild (all of them derived anew).
//! A timeline wrong beyond what the rebuild restores is mended first, under the same
//! lease: a cache is dropped (its owner's next read builds it from the sources), a
//! deleted post retracted, an edge's upkeep run again (which takes out the entries of an
//! author in a block with the reader, as no edge stands between them), a post or a
//! repost fanned out again, a post
//! whose entries carry a wrong field taken out of every timeline and fanned out anew.
//! A lease another process holds (a running server's workers) stops the repair of that
//! kind: stop the workers, or wait for the lease to expire, and run it again.

use std::collections::BTreeSet;
use std::sync::Arc;

use anyhow::{Context, bail};

use super::{Fix, Kind, Report};
use crate::app::{aggregates_runner, holder_id, runner_settings};
use crate::config::Config;
use crate::domain::{ActivityLimits, PostId, now_ms};
use crate::feed::Timelines;
use crate::store::Store;
use crate::workers::activity::ActivityWorker;
use crate::workers::aggregates::REBUILD_PREFIX;
use crate::workers::counters::CountersWorker;
use crate::workers::notifications::NotificationsWorker;
use crate::workers::timelines::TimelinesWorker;
use crate::workers::{Runner, Step, SystemClock, Worker};

/// Repairs every kind `report` found wrong; returns what was done, a line each.
pub async fn repair(
    config: &Config,
    store: &Store,
    report: &Report,
) -> anyhow::Result<Vec<String>> {
    let holder = format!("audit/{}", holder_id());
    let mut done = Vec::new();
    let kinds = report.wrong_kinds();
    let fixes: BTreeSet<&Fix> = report.wrong.values().flatten().map(|f| &f.fix).collect();
    if kinds.contains(&Kind::Timelines) || kinds.contains(&Kind::Deliveries) {
        let worker = Arc::new(TimelinesWorker::new(store.clone(), &config.feed.settings()));
        let mended = mend_timelines(config, store, &holder, &fixes).await?;
        done.push(format!("timelines: {mended} mended"));
        rebuild(config, store, worker, &holder).await?;
        done.push("timelines: rebuilt (delivery markers)".to_owned());
    }
    if kinds.contains(&Kind::Counters)
        || kinds.contains(&Kind::Replies)
        || kinds.contains(&Kind::Reposts)
        || kinds.contains(&Kind::NameWords)
    {
        let worker = Arc::new(CountersWorker::new(
            store.users.clone(),
            store.claims.clone(),
        ));
        rebuild(config, store, worker, &holder).await?;
        done.push(
            "counters: recounted every user and every post's replies and reposts, and wrote \
             every user's name words again"
                .to_owned(),
        );
    }
    if kinds.contains(&Kind::Notifications) {
        // The worker's rebuild after history lost: every notification derived from the
        // sources and written in place of the stored ones, under the fence.
        let worker = Arc::new(NotificationsWorker::new(store.notifications.clone()));
        rebuild(config, store, worker, &holder).await?;
        done.push("notifications: every notification rebuilt from the sources".to_owned());
    }
    if kinds.contains(&Kind::Activity) {
        let limits = ActivityLimits {
            primary_limit: config.activity.primary_limit,
            page_size: config.activity.page_size,
        };
        let worker = Arc::new(ActivityWorker::new(store.activity.clone(), limits));
        rebuild(config, store, worker, &holder).await?;
        done.push("activity: every log rebuilt from the sources".to_owned());
    }
    if fixes.contains(&Fix::Reindex) {
        let changed = store.audit.reindex_tags().await?;
        done.push(format!(
            "tag index: written again from the posts' text ({changed} posts changed)"
        ));
    }
    if kinds.contains(&Kind::Tags) {
        let holder = format!("{REBUILD_PREFIX}audit-{}", holder_id());
        let mut runner = aggregates_runner(config, store, holder);
        expect_rebuilt(runner.rebuild_once().await?, store, "aggregates").await?;
        done.push("tags: recounted from the posts".to_owned());
    }
    if kinds.contains(&Kind::Events) {
        done.push("events: not repairable (the event log is history); left as found".to_owned());
    }
    Ok(done)
}

async fn rebuild(
    config: &Config,
    store: &Store,
    worker: Arc<dyn Worker>,
    holder: &str,
) -> anyhow::Result<()> {
    let name = worker.name();
    let mut runner = Runner::new(
        worker,
        store.leases.clone(),
        store.change_feed.clone(),
        Arc::new(SystemClock),
        holder.to_owned(),
        runner_settings(config),
    );
    let step = runner
        .rebuild_once()
        .await
        .with_context(|| format!("rebuilding {name}"))?;
    expect_rebuilt(step, store, name).await
}

async fn expect_rebuilt(step: Step, store: &Store, name: &str) -> anyhow::Result<()> {
    match step {
        Step::Rebuilt => Ok(()),
        Step::Standby => {
            let lease = store
                .leases
                .leases()
                .await?
                .into_iter()
                .find(|l| l.name == name);
            let holder = lease.and_then(|l| l.holder).unwrap_or_default();
            bail!(
                "the {name} lease is held by {holder}: stop the workers of the servers on this \
                 store (or wait for the lease to expire) and repair again"
            )
        }
        other => bail!("the {name} rebuild did not complete: {other:?}"),
    }
}

/// The timeline fixes, under the timelines lease (released afterwards for the rebuild,
/// which takes it again). Returns how many were applied.
async fn mend_timelines(
    config: &Config,
    store: &Store,
    holder: &str,
    fixes: &BTreeSet<&Fix>,
) -> anyhow::Result<usize> {
    let name = crate::workers::timelines::NAME;
    let ttl = runner_settings(config).lease_ttl_ms;
    let lease = store.leases.acquire(name, holder, now_ms(), ttl).await?;
    if !lease.held_by(holder) {
        expect_rebuilt(Step::Standby, store, name).await?;
    }
    let timelines = Timelines::new(store.clone(), &config.feed.settings());
    let mut mended = 0;
    for fix in fixes {
        match fix {
            Fix::DropCache(user) => {
                store.audit.drop_cache(user).await?;
            }
            Fix::Retract(post) => timelines.retract(*post).await?,
            Fix::SyncEdge(user, author) => {
                timelines.sync_edge(user, author).await?;
            }
            Fix::FanOut(post) => {
                if !fan_out(store, &timelines, *post).await? {
                    continue;
                }
            }
            Fix::Redeliver(post) => {
                timelines.retract(*post).await?;
                fan_out(store, &timelines, *post).await?;
            }
            Fix::Rebuild | Fix::Reindex | Fix::None => continue,
        }
        mended += 1;
        if !store
            .leases
            .refresh(name, holder, lease.version, now_ms(), ttl)
            .await?
        {
            bail!("lost the {name} lease while mending timelines");
        }
    }
    store.leases.release(name, holder, lease.version).await?;
    Ok(mended)
}

/// Fans `post` out again to its author and every follower, stamped with the author's
/// name as it stands; false when the post or its author is gone. `post` may name a
/// repost (reposts' ids are in the posts' id space): then the repost is fanned out, to
/// its reposter and their followers, while it and its original stand.
async fn fan_out(store: &Store, timelines: &Timelines, post: PostId) -> anyhow::Result<bool> {
    let Some(post) = store.content.post(post).await? else {
        let Some(repost) = store.reposts.reposts_by_ids(&[post]).await?.pop() else {
            return Ok(false);
        };
        let original = store.content.post(repost.post.post).await?;
        let reposter = store.users.user(&repost.user).await?;
        let (Some(original), Some(reposter)) = (original, reposter) else {
            return Ok(false);
        };
        let name = reposter.name_stamp();
        timelines
            .repost_created(&repost, &original.text, &name)
            .await?;
        return Ok(true);
    };
    let Some(author) = store.users.user(&post.author).await? else {
        return Ok(false);
    };
    timelines.post_created(&post, &author.name_stamp()).await?;
    Ok(true)
}
