//! One seeded run: start the topology, create the users, let the virtual clients and the
//! chaos task loose for a while, quiesce, check convergence, and report. What each client
//! does next is drawn from the mix in `run/mix.rs`.

mod mix;

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use rand::{RngExt, SeedableRng};
use reqwest::{Method, StatusCode};
use serde_json::json;

use super::cluster::{Cluster, Topology};
use super::converge::{self, WorkerTotals};
use super::model::{Clock, Model, Span, UserM};
use super::world::{Reply, Rng, Stats, World};
use super::{logs, masto, notes, paging, streams, threads};
use crate::common::Kind;

/// What a run did and found.
#[derive(Debug, Default)]
pub struct Outcome {
    pub ops: u64,
    pub kills: u64,
    pub aborts: u64,
    /// Events delivered to stream sessions.
    pub streamed: u64,
    /// Notifications served after their cause was surely undone (`oracle::notes`).
    pub stale_notifications: u64,
    /// Reposts acknowledged; repost items served in home timelines.
    pub reposts: u64,
    pub reposts_served: u64,
    /// Home-timeline and notification reads served by the Mastodon view.
    pub masto_reads: u64,
    pub dismissals: u64,
    pub clears: u64,
    pub newer_pages: u64,
    pub workers: WorkerTotals,
    pub violations: Vec<String>,
    pub report: String,
}

/// Creates the users, through whichever process is up. A creation whose answer was lost
/// (an in-binary abort may hit any process during set-up) is retried under a new id, as
/// the lost one may exist without a token the model could know.
async fn create_users(world: &World) {
    for k in 0..world.topology.users {
        let mut attempt = 0;
        loop {
            for slot in world.cluster.reap() {
                Stats::bump(&world.stats.aborts);
                world.cluster.restart(slot).await;
            }
            let id = match attempt {
                0 => format!("u{k}"),
                n => format!("u{k}r{n}"),
            };
            let name = format!("{id} v0");
            let target = world.cluster.up()[0].clone();
            let password = masto::password(&id);
            let body = json!({ "id": id, "display_name": name, "password": password });
            let reply = world
                .call(&target, Method::POST, "/v1/users", None, Some(body))
                .await;
            match reply {
                Reply::Answer(StatusCode::CREATED, body) => {
                    let token = body["token"].as_str().unwrap().to_owned();
                    let span = Span {
                        invoke: 0,
                        complete: 0,
                    };
                    let names = vec![(name, span)];
                    let masto_token = String::new();
                    let user = UserM {
                        token,
                        masto_token,
                        names,
                    };
                    world.model().users.insert(id, user);
                    break;
                }
                Reply::Lost
                | Reply::Refused
                | Reply::Answer(StatusCode::SERVICE_UNAVAILABLE, _)
                    if attempt < 20 =>
                {
                    attempt += 1;
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                other => panic!("creating {id}: {other:?}"),
            }
        }
    }
}

/// `kill -9` of a random process now and then, and restarts; restarts of processes
/// that aborted on an in-binary fault.
async fn chaos(world: Arc<World>, until: Instant, seed: u64) {
    let mut rng = Rng::seed_from_u64(seed ^ 0xc4a05);
    let gap = if super::cluster::soak_kills() {
        100..700
    } else {
        300..2500
    };
    let mut next_kill = Instant::now() + Duration::from_millis(rng.random_range(gap.clone()));
    while Instant::now() < until {
        for slot in world.cluster.reap() {
            Stats::bump(&world.stats.aborts);
            world.cluster.restart(slot).await;
        }
        if world.topology.kills && Instant::now() > next_kill {
            let slot = rng.random_range(0..world.cluster.len());
            if world.cluster.kill(slot) {
                Stats::bump(&world.stats.kills);
            }
            tokio::time::sleep(Duration::from_millis(rng.random_range(0..400))).await;
            world.cluster.restart(slot).await;
            next_kill = Instant::now() + Duration::from_millis(rng.random_range(gap.clone()));
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

pub async fn run(seed: u64, kind: Kind, duration: Duration) -> Outcome {
    let topology = Topology::of(seed, kind);
    eprintln!("oracle: seed {seed}: {}", topology.describe());
    let cluster = Cluster::start(&topology, seed).await;
    let world = Arc::new(World {
        topology: topology.clone(),
        seed,
        cluster,
        model: std::sync::Mutex::new(Model::default()),
        clock: Clock::new(),
        http: reqwest::Client::builder()
            .timeout(Duration::from_secs(15))
            .build()
            .unwrap(),
        stats: Stats::default(),
        baseline: Default::default(),
    });
    create_users(&world).await;
    masto::sign_in(&world).await;
    converge::baseline(&world).await;
    let until = Instant::now() + duration;
    let mut tasks = Vec::new();
    for c in 0..topology.clients {
        let world = world.clone();
        tasks.push(tokio::spawn(async move {
            let mut rng = Rng::seed_from_u64(seed.wrapping_mul(1000).wrapping_add(c as u64));
            while Instant::now() < until {
                mix::one(&world, &mut rng).await;
            }
        }));
    }
    tasks.push(tokio::spawn(chaos(world.clone(), until, seed)));
    for task in tasks {
        task.await.expect("a client panicked");
    }
    let mut outcome = settle_and_check(&world).await;
    outcome.ops = world.stats.ops.load(Ordering::Relaxed);
    outcome.kills = world.stats.kills.load(Ordering::Relaxed);
    outcome.aborts = world.stats.aborts.load(Ordering::Relaxed);
    outcome.streamed = world.stats.streamed.load(Ordering::Relaxed);
    outcome.stale_notifications = world.stats.stale_notifications.load(Ordering::Relaxed);
    outcome.reposts = world.stats.reposts.load(Ordering::Relaxed);
    outcome.reposts_served = world.stats.reposts_served.load(Ordering::Relaxed);
    outcome.masto_reads = world.stats.masto_reads.load(Ordering::Relaxed);
    outcome.dismissals = world.stats.dismissals.load(Ordering::Relaxed);
    outcome.clears = world.stats.clears.load(Ordering::Relaxed);
    outcome.newer_pages = world.stats.newer_pages.load(Ordering::Relaxed);
    outcome.violations = world.model().violations.clone();
    if !outcome.violations.is_empty() {
        outcome.report = report(&world, &outcome.violations);
    }
    outcome
}

/// Faults off (every process restarted without them), quiescence, then convergence,
/// retried while the workers may still be finishing.
async fn settle_and_check(world: &World) -> Outcome {
    let mut outcome = Outcome::default();
    world.cluster.quiesce();
    for slot in 0..world.cluster.len() {
        if world.cluster.faulty() || world.cluster.up().iter().all(|t| t.slot != slot) {
            world.cluster.kill(slot);
            world.cluster.restart(slot).await;
        }
    }
    match converge::quiescence(world).await {
        Ok(totals) => outcome.workers = totals,
        Err(e) => world.model().violation(e),
    }
    let rebuilt = world.topology.trim;
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut faults;
    loop {
        let target = world.cluster.up()[0].clone();
        faults = match converge::sources(world, &target).await {
            Ok((sources, mut faults)) => {
                faults.extend(converge::derived(world, &sources).await);
                let quiet = world.model().quiet_now.clone();
                faults.extend(notes::converge(world, &sources, &quiet).await);
                faults.extend(paging::converge(world).await);
                faults.extend(threads::converge(world, &sources, 12).await);
                faults.extend(logs::activity(world, &sources, rebuilt).await);
                if let Some((more, log)) = logs::events(world, &sources, rebuilt).await {
                    faults.extend(more);
                    faults.extend(streams::complete(&world.model(), &log));
                }
                faults
            }
            Err(e) => vec![format!("reading the sources: {e}")],
        };
        if faults.is_empty() || Instant::now() > deadline {
            break;
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    for fault in faults {
        world
            .model()
            .violation(format!("after quiescence: {fault}"));
    }
    outcome
}

/// The seed, the topology, what diverged and the history of the users it names; the
/// whole history goes to a file.
fn report(world: &World, violations: &[String]) -> String {
    let model = world.model();
    let mut log = model.log.clone();
    log.sort();
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("oracle");
    let _ = std::fs::create_dir_all(&dir);
    let file = dir.join(format!("seed-{}.log", world.seed));
    let all: Vec<&str> = log.iter().map(|(_, l)| l.as_str()).collect();
    let _ = std::fs::write(&file, all.join("\n"));
    let first = &violations[0];
    let users: Vec<&String> = model
        .users
        .keys()
        .filter(|u| {
            first.contains(&format!("{u} "))
                || first.contains(&format!("{u}'"))
                || first.contains(&format!("{u}:"))
                || first.contains(&format!("{u}>"))
        })
        .collect();
    let relevant: Vec<&str> = all
        .iter()
        .filter(|l| {
            users.iter().any(|u| {
                l.contains(&format!("/{u}/"))
                    || l.contains(&format!(" {u} "))
                    || l.contains(&format!("/{u}"))
            })
        })
        .copied()
        .collect();
    let shown = &relevant[relevant.len().saturating_sub(120)..];
    format!(
        "seed {} ({} processes)\nreplay: SOCIALITE_ORACLE_SEED={} cargo test --test oracle\ntopology: {}\n{} violations, first 10:\n  {}\nhistory of {:?} ({} of {} ops; all in {}):\n  {}",
        world.seed,
        world.topology.processes,
        world.seed,
        world.topology.describe(),
        violations.len(),
        violations
            .iter()
            .take(10)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n  "),
        users,
        shown.len(),
        all.len(),
        file.display(),
        shown.join("\n  ")
    )
}
