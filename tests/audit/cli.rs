//! The command line: exit statuses, the report, `--repair`; and audits beside a live
//! server under a write load, which may find discrepancies pending but none wrong.

use std::ffi::OsString;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use reqwest::StatusCode;
use socialite::config::{Backend, Config};
use socialite::domain::FeedStrategy;

use super::common::{Api, kinds, start_binary};
use super::{Raw, config, skip_the_workers_past_it, world};

/// The environment that points the binary at `config`'s store and strategy.
pub(super) fn env_of(config: &Config) -> Vec<(&'static str, OsString)> {
    let mut env = vec![
        (
            "SOCIALITE_FEED__STRATEGY",
            config.feed.strategy.as_str().into(),
        ),
        (
            "SOCIALITE_STORAGE__PATH",
            config.storage.path.clone().into_os_string(),
        ),
    ];
    if config.storage.backend == Backend::Mongodb {
        env.push(("SOCIALITE_STORAGE__BACKEND", "mongodb".into()));
        let uri = config.storage.mongodb_uri.clone().unwrap();
        env.push(("SOCIALITE_STORAGE__MONGODB_URI", uri.into()));
    }
    env
}

/// Runs `socialite audit ARGS`; returns the exit status and stdout.
pub(super) fn audit(env: &[(&str, OsString)], args: &[&str]) -> (i32, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_socialite"))
        .arg("audit")
        .args(args)
        .envs(env.iter().map(|(k, v)| (*k, v)))
        .env("NO_COLOR", "1")
        .env("RUST_LOG", "error")
        .stdin(Stdio::null())
        .output()
        .expect("the binary runs");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr);
    (
        output.status.code().unwrap_or(-1),
        format!("{stdout}{stderr}"),
    )
}

/// The summary's columns for `kind`: checked, wrong, pending.
fn row<'a>(out: &'a str, kind: &str) -> Vec<&'a str> {
    let line = out
        .lines()
        .find(|l| l.starts_with(kind))
        .unwrap_or_default();
    line.split_whitespace().skip(1).collect()
}

#[tokio::test]
async fn the_command_exits_0_clean_1_on_a_discrepancy_2_on_an_error_and_repairs() {
    for kind in kinds("the_command_exits_0_clean_1_on_a_discrepancy_2_on_an_error_and_repairs") {
        let (config, _dir) = config(kind, FeedStrategy::Cache);
        let store = world(&config).await;
        let env = env_of(&config);
        let (code, out) = audit(&env, &[]);
        assert_eq!(code, 0, "{out}");
        assert!(out.contains("audit clean"), "{out}");
        assert_eq!(row(&out, "counters"), ["5", "0", "0"], "{out}");

        Raw::open(&config).await.bump_followers("cat").await;
        skip_the_workers_past_it(&store).await;
        let (code, out) = audit(&env, &["--wait", "5"]);
        assert_eq!(code, 1, "{out}");
        assert!(
            out.contains("counters wrong (1):\n  cat: followers_count is 3, the sources say 2"),
            "{out}"
        );
        assert!(out.contains("audit DISCREPANCIES"), "{out}");

        let (code, out) = audit(&env, &["--repair"]);
        assert_eq!(code, 0, "{out}");
        let after = out
            .split("audit after the repair:")
            .nth(1)
            .unwrap_or_else(|| panic!("{out}"));
        assert!(out.contains("counters: recounted every user"), "{out}");
        assert!(
            after.contains("audit clean") && !after.contains("wrong ("),
            "{out}"
        );

        let broken = [("SOCIALITE_STORAGE__PATH", OsString::from("/dev/null/s.db"))];
        let (code, out) = audit(&broken, &[]);
        assert_eq!(code, 2, "{out}");
        assert!(out.contains("error:"), "{out}");
    }
}

/// Posts, follows, unfollows and timeline reads as `me` until `stop`.
async fn write_load(api: Api, me: String, others: Vec<String>, stop: Arc<AtomicBool>) -> usize {
    let mut writes = 0;
    for i in 0.. {
        if stop.load(Ordering::Relaxed) {
            break;
        }
        let other = &others[i % others.len()];
        match i % 4 {
            0 | 1 => {
                api.say(&me, &format!("{me} says {i} #load{}", i % 3)).await;
            }
            2 => {
                let (status, body) = api.put(&format!("/v1/users/{me}/following/{other}")).await;
                assert_eq!(status, StatusCode::NO_CONTENT, "{body}");
            }
            _ => {
                let (status, body) = api.get(&format!("/v1/users/{me}/timeline")).await;
                assert_eq!(status, StatusCode::OK, "{body}");
                if i % 8 == 7 {
                    let path = format!("/v1/users/{me}/following/{other}");
                    let (status, body) = api.delete(&path).await;
                    assert_eq!(status, StatusCode::NO_CONTENT, "{body}");
                }
            }
        }
        writes += 1;
    }
    writes
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn beside_a_live_server_under_writes_nothing_is_reported_wrong() {
    for kind in kinds("beside_a_live_server_under_writes_nothing_is_reported_wrong") {
        let (config, _dir) = config(kind, FeedStrategy::Cache);
        let mut env = env_of(&config);
        for (key, value) in [
            ("SOCIALITE_RATE__WRITES_PER_MIN", "0"),
            ("SOCIALITE_RATE__READS_PER_MIN", "0"),
            ("SOCIALITE_RATE__IP_PER_MIN", "0"),
        ] {
            env.push((key, value.into()));
        }
        let server_env: Vec<(&str, &std::ffi::OsStr)> =
            env.iter().map(|(k, v)| (*k, v.as_os_str())).collect();
        let (mut server, base) = start_binary(&[], &server_env);
        let api = Api::new(reqwest::Client::new(), &base);
        let writers: Vec<String> = (0..4).map(|i| format!("w{i}")).collect();
        for user in &writers {
            api.user(user).await;
        }
        let stop = Arc::new(AtomicBool::new(false));
        let load: Vec<_> = writers
            .iter()
            .map(|me| {
                let others = writers.iter().filter(|o| *o != me).cloned().collect();
                tokio::spawn(write_load(
                    api.at(base.clone()),
                    me.clone(),
                    others,
                    stop.clone(),
                ))
            })
            .collect();
        for round in 0..3 {
            let env = env.clone();
            let (code, out) = tokio::task::spawn_blocking(move || audit(&env, &["--wait", "30"]))
                .await
                .unwrap();
            assert_eq!(code, 0, "{kind:?} round {round}: {out}");
            assert!(!out.contains("wrong ("), "{kind:?} round {round}: {out}");
        }
        stop.store(true, Ordering::Relaxed);
        let mut writes = 0;
        for task in load {
            writes += task.await.unwrap();
        }
        assert!(writes > 20, "a load ran: {writes} writes");
        let (code, out) = tokio::task::spawn_blocking(move || audit(&env, &["--wait", "30"]))
            .await
            .unwrap();
        assert_eq!(code, 0, "{kind:?} quiet: {out}");
        assert!(
            !out.contains("wrong (") && !out.contains("pending ("),
            "{kind:?} quiet: {out}"
        );
        server.kill().unwrap();
        server.wait().unwrap();
    }
}
