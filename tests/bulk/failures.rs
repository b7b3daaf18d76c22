//! Loads that go wrong: interrupted and run again, malformed and truncated files, a
//! live server beside the import, and the command itself on standard input.

use std::path::Path;

use socialite::domain::{FeedStrategy, now_ms};
use socialite::store::bulk::{Rows, UserRow};

use super::common::{Kind, TestServer, kinds};
use super::{assert_same, config, export, import, observe, write_through_api};

/// An import cut short after some users (the load's mark set, nothing derived), then
/// run again in full, and once more: each ends where one clean import ends. While cut
/// short, the store refuses to serve.
#[tokio::test]
async fn an_interrupted_import_run_again_ends_in_the_same_state() {
    for kind in kinds("an_interrupted_import_run_again_ends_in_the_same_state") {
        let strategy = FeedStrategy::SizedBuckets;
        let through_api = TestServer::start(config(kind, strategy)).await;
        write_through_api(&through_api.api()).await;
        through_api.settle().await;
        let dir = tempfile::tempdir().unwrap();
        let paths = export(&through_api.api(), dir.path()).await;
        let want = observe(&through_api.api()).await;
        through_api.stop().await;

        let test = config(kind, strategy);
        {
            let store = socialite::app::open_store(&test.config).await.unwrap();
            store.bulk.begin_load(now_ms()).await.unwrap().unwrap();
            // What the import writes first: the first users of the file.
            let mut rows = Rows::default();
            let users = std::fs::read_to_string(&paths[0]).unwrap();
            for line in users.lines().take(2) {
                let user: serde_json::Value = serde_json::from_str(line).unwrap();
                let id = rows.intern(user["id"].as_str().unwrap());
                let display_name = rows.intern(user["display_name"].as_str().unwrap());
                let created_at_ms = user["created_at"].as_i64().unwrap();
                rows.push(UserRow {
                    id,
                    display_name,
                    created_at_ms,
                });
            }
            store.bulk.insert_users(rows).await.unwrap();
        }
        let refused = socialite::app::spawn(&test.config)
            .await
            .err()
            .expect("refused");
        assert!(
            refused.to_string().contains("was interrupted"),
            "{kind:?}: {refused:#}"
        );
        for run in 1..=2 {
            import(&test, &paths).await.unwrap();
            let store = socialite::app::open_store(&test.config).await.unwrap();
            assert_eq!(
                store.bulk.load_in_progress().await.unwrap(),
                None,
                "{kind:?}"
            );
            let server = socialite::app::spawn(&test.config).await.unwrap();
            let api = common_api(&server);
            assert_same(
                kind,
                &want,
                &observe(&api).await,
                &format!("{kind:?} run {run}"),
            );
            server.stop().await.unwrap();
        }
    }
}

fn common_api(server: &socialite::app::RunningServer) -> super::common::Api {
    super::common::Api::new(reqwest::Client::new(), format!("http://{}", server.addr))
}

/// Writes `lines` as `name` in `dir`.
fn file(dir: &Path, name: &str, lines: &[&str]) -> std::path::PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, lines.join("\n")).unwrap();
    path
}

const POST_A: &str = "000000010000000000000001";

/// A valid users file and a follows file; the other files per case.
fn case(dir: &Path, posts: &[&str], likes: &[&str]) -> [std::path::PathBuf; 4] {
    let users = [
        r#"{"id":"ann"}"#,
        r#"{"id":"bob","display_name":"Bob"}"#,
        "",
    ];
    [
        file(dir, "users.jsonl", &users),
        file(
            dir,
            "follows.jsonl",
            &[r#"{"follower":"bob","followee":"ann"}"#, ""],
        ),
        file(dir, "posts.jsonl", posts),
        file(dir, "likes.jsonl", likes),
    ]
}

/// Imports `paths` into a fresh store; returns the error, having checked that nothing
/// at all was written.
async fn refused(kind: Kind, paths: &[std::path::PathBuf; 4]) -> String {
    let test = config(kind, FeedStrategy::Cache);
    let error = import(&test, paths).await.expect_err("refused");
    let store = socialite::app::open_store(&test.config).await.unwrap();
    assert_eq!(store.users.user("ann").await.unwrap(), None, "{kind:?}");
    assert_eq!(
        store.bulk.load_in_progress().await.unwrap(),
        None,
        "{kind:?}"
    );
    format!("{error:#}")
}

#[tokio::test]
async fn a_malformed_line_is_reported_with_its_file_and_line_and_nothing_is_written() {
    for kind in kinds("a_malformed_line_is_reported_with_its_file_and_line_and_nothing_is_written")
    {
        let dir = tempfile::tempdir().unwrap();
        let good = format!(r#"{{"id":"{POST_A}","author":"ann","text":"hi"}}"#);
        let blank = r#"{"id":"000000010000000000000002","author":"ann","text":"   "}"#;
        let paths = case(dir.path(), &[&good, blank, ""], &[]);
        let error = refused(kind, &paths).await;
        let at = format!("{}:2: text must be", paths[2].display());
        assert!(error.contains(&at), "{kind:?}: {error}");

        let unknown = r#"{"id":"000000010000000000000002","author":"ann","text":"x","n":1}"#;
        let paths = case(dir.path(), &[&good, unknown], &[]);
        let error = refused(kind, &paths).await;
        let at = format!("{}:2: column", paths[2].display());
        assert!(
            error.contains(&at) && error.contains("unknown field"),
            "{kind:?}: {error}"
        );

        // A like of a post in neither the file nor the store, on line 3.
        let likes = [
            format!(r#"{{"user":"bob","post":"{POST_A}"}}"#),
            String::new(),
            r#"{"user":"bob","post":"0000000100000000000000ff"}"#.to_owned(),
        ];
        let likes: Vec<&str> = likes.iter().map(String::as_str).collect();
        let paths = case(dir.path(), &[&good], &likes);
        let error = refused(kind, &paths).await;
        let at = format!(
            "{}:3: post 0000000100000000000000ff is neither",
            paths[3].display()
        );
        assert!(error.contains(&at), "{kind:?}: {error}");
    }
}

#[tokio::test]
async fn a_truncated_file_is_reported_and_nothing_is_written() {
    for kind in kinds("a_truncated_file_is_reported_and_nothing_is_written") {
        let dir = tempfile::tempdir().unwrap();
        let good = format!(r#"{{"id":"{POST_A}","author":"ann","text":"hi"}}"#);
        let like = format!(r#"{{"user":"bob","post":"{POST_A}"}}"#);
        // The last line cut in the middle of a value, with no newline after it.
        let cut = r#"{"user":"ann","post":"00000001000000"#;
        let paths = case(dir.path(), &[&good], &[&like, cut]);
        let error = refused(kind, &paths).await;
        let at = format!("{}:2: the JSON object ends early", paths[3].display());
        assert!(
            error.contains(&at) && error.contains("cut short"),
            "{kind:?}: {error}"
        );
    }
}

#[tokio::test]
async fn an_import_refuses_to_run_beside_a_live_server() {
    for kind in kinds("an_import_refuses_to_run_beside_a_live_server") {
        let test = config(kind, FeedStrategy::Cache);
        let server = socialite::app::spawn(&test.config).await.unwrap();
        // Its workers hold their leases once they have run a step.
        server
            .state
            .workers
            .settle(std::time::Duration::from_secs(30))
            .await
            .unwrap();
        let dir = tempfile::tempdir().unwrap();
        let paths = case(dir.path(), &[], &[]);
        let error = import(&test, &paths).await.expect_err("refused");
        assert!(
            format!("{error:#}").contains("a server is running on this store"),
            "{kind:?}: {error:#}"
        );
        let store = socialite::app::open_store(&test.config).await.unwrap();
        assert_eq!(store.users.user("ann").await.unwrap(), None, "{kind:?}");
        server.stop().await.unwrap();
        // Stopped, it releases its leases: the import runs.
        import(&test, &paths).await.unwrap();
        assert!(store.users.user("ann").await.unwrap().is_some(), "{kind:?}");
    }
}

/// The command: users from standard input, a malformed posts file refused with its
/// name and line and a failing exit status, then the fixed file imported.
#[tokio::test]
async fn the_import_command_reads_standard_input_and_reports_refused_lines() {
    use std::io::Write;
    use std::process::{Command, Stdio};
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("socialite.db");
    let run = |posts: &Path| {
        let mut child = Command::new(env!("CARGO_BIN_EXE_socialite"))
            .args(["import", "--users", "-", "--posts"])
            .arg(posts)
            .env("SOCIALITE_STORAGE__PATH", &db)
            .env("NO_COLOR", "1")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let users = "{\"id\":\"ann\"}\n{\"id\":\"bob\"}\n";
        child
            .stdin
            .take()
            .unwrap()
            .write_all(users.as_bytes())
            .unwrap();
        child.wait_with_output().unwrap()
    };
    let bad = file(
        dir.path(),
        "posts.jsonl",
        &[r#"{"id":"nope","author":"ann","text":"hi"}"#],
    );
    let output = run(&bad);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success());
    assert!(
        stderr.contains(&format!("{}:1: post id \"nope\"", bad.display())),
        "{stderr}"
    );
    let good = format!(r#"{{"id":"{POST_A}","author":"bob","text":"hi"}}"#);
    let good = file(dir.path(), "posts.jsonl", &[&good, ""]);
    let output = run(&good);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        stdout.contains("imported 2 users, 0 follows, 1 posts, 0 likes"),
        "{stdout}"
    );
}
