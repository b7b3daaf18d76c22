//! Real Mastodon clients drive a fresh server (issue 36): Mastodon.py, toot and masto.js,
//! at the versions `scripts/clients-setup.sh` pins, and Debian's headless Chromium on the
//! authorize page. Each test starts a server on port 0 with a fresh embedded store, runs
//! one scenario script with the server's address in `SOCIALITE_BASE_URL`, and fails with
//! the script's output unless it exits 0 having printed `scenario passed:`.
//!
//! The scripts are in `tests/clients/py/` and `tests/clients/js/`. Without the clients
//! installed (`scripts/clients-setup.sh`, which `scripts/test.sh` runs) each test prints
//! `SKIPPED`, unless `SOCIALITE_TEST_CLIENTS=required` (set by `scripts/test.sh`), which
//! makes a missing client a failure.

mod common;

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use common::{Kind, TestServer, fresh_config};

/// How long one scenario may run before it is killed and failed.
const SCENARIO_LIMIT: Duration = Duration::from_secs(180);

#[derive(Clone, Copy)]
enum Runtime {
    Python,
    Node,
}

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The interpreter and the scenario's directory, or why they are missing.
fn installed(runtime: Runtime) -> Result<(PathBuf, PathBuf), String> {
    let (program, dir, needs) = match runtime {
        Runtime::Python => (
            root().join("target/clients-venv/bin/python"),
            root().join("tests/clients/py"),
            vec![
                root().join("target/clients-venv/requirements.installed"),
                PathBuf::from("/usr/bin/chromium"),
                PathBuf::from("/usr/bin/chromedriver"),
            ],
        ),
        Runtime::Node => (
            PathBuf::from("node"),
            root().join("tests/clients/js"),
            vec![root().join("tests/clients/js/node_modules/masto/package.json")],
        ),
    };
    match needs.iter().find(|path| !path.exists()) {
        Some(missing) => Err(format!(
            "{} is missing: run scripts/clients-setup.sh",
            missing.display()
        )),
        None => Ok((program, dir)),
    }
}

/// Runs `script` against a fresh server and fails with its output unless it passed.
async fn scenario(runtime: Runtime, script: &str) {
    let (program, dir) = match installed(runtime) {
        Ok(found) => found,
        Err(why) if std::env::var("SOCIALITE_TEST_CLIENTS").as_deref() == Ok("required") => {
            panic!("{script}: {why}")
        }
        Err(why) => {
            use std::io::Write;
            // Past the harness's capture, so that the run's log shows it.
            let line = format!("SKIPPED: client scenario {script}: {why}\n");
            std::io::stderr().write_all(line.as_bytes()).unwrap();
            return;
        }
    };
    let server = TestServer::start(fresh_config(Kind::Embedded)).await;
    // toot keeps its accounts under $XDG_CONFIG_HOME; Chromium and the clients write
    // nothing outside this directory either.
    let home = tempfile::tempdir().unwrap();
    let child = tokio::process::Command::new(&program)
        .arg(dir.join(script))
        .current_dir(&dir)
        .env("SOCIALITE_BASE_URL", &server.base)
        .env("HOME", home.path())
        .env("XDG_CONFIG_HOME", home.path().join("config"))
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .env("PYTHONUNBUFFERED", "1")
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap_or_else(|error| panic!("{script}: {} does not start: {error}", program.display()));
    let output = match tokio::time::timeout(SCENARIO_LIMIT, child.wait_with_output()).await {
        Ok(output) => output.unwrap(),
        Err(_) => panic!("{script}: still running after {SCENARIO_LIMIT:?}; killed"),
    };
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    let passed = stdout
        .lines()
        .any(|line| line.starts_with("scenario passed:"));
    assert!(
        output.status.success() && passed,
        "{script} failed ({}{}) against {}\n--- stdout\n{stdout}\n--- stderr\n{stderr}",
        output.status,
        if passed {
            ""
        } else {
            ", no `scenario passed:` line"
        },
        server.base,
    );
    print!("{stdout}");
    server.stop().await;
}

// Mastodon.py (PyPI), sign-in: served today.

#[tokio::test]
async fn mastodonpy_registration_through_client_credentials() {
    scenario(Runtime::Python, "mastodonpy_registration.py").await;
}

#[tokio::test]
async fn mastodonpy_password_grant() {
    scenario(Runtime::Python, "mastodonpy_password.py").await;
}

#[tokio::test]
async fn mastodonpy_code_flow_through_the_authorize_page_in_chromium() {
    scenario(Runtime::Python, "mastodonpy_code_flow.py").await;
}

#[tokio::test]
async fn chromium_on_the_authorize_page_without_javascript() {
    scenario(Runtime::Python, "chromium_authorize_page.py").await;
}

// Mastodon.py, the rest of the client API.

#[tokio::test]
async fn mastodonpy_post_reply_repost_like() {
    scenario(Runtime::Python, "mastodonpy_statuses.py").await;
}

#[tokio::test]
async fn mastodonpy_follow_block_mute() {
    scenario(Runtime::Python, "mastodonpy_relationships.py").await;
}

#[tokio::test]
async fn mastodonpy_home_timeline_walk_through_link_pages() {
    scenario(Runtime::Python, "mastodonpy_timeline_walk.py").await;
}

#[tokio::test]
async fn mastodonpy_notifications() {
    scenario(Runtime::Python, "mastodonpy_notifications.py").await;
}

#[tokio::test]
async fn mastodonpy_markers() {
    scenario(Runtime::Python, "mastodonpy_markers.py").await;
}

#[tokio::test]
async fn mastodonpy_stream_user_update_and_notification() {
    scenario(Runtime::Python, "mastodonpy_stream.py").await;
}

#[tokio::test]
async fn mastodonpy_stream_public_and_hashtag() {
    scenario(Runtime::Python, "mastodonpy_stream_listings.py").await;
}

// toot (PyPI), a CLI: driven as a user would, its configuration in a temporary HOME.

#[tokio::test]
async fn toot_login_cli_login_in_chromium_and_whoami() {
    scenario(Runtime::Python, "toot_login.py").await;
}

#[tokio::test]
async fn toot_post_timeline_follow() {
    scenario(Runtime::Python, "toot_post_timeline_follow.py").await;
}

// masto.js (npm).

#[tokio::test]
async fn masto_sign_in() {
    scenario(Runtime::Node, "sign_in.mjs").await;
}

#[tokio::test]
async fn masto_registration_multipart() {
    scenario(Runtime::Node, "register.mjs").await;
}

#[tokio::test]
async fn masto_post_and_home_timeline() {
    scenario(Runtime::Node, "post_timeline.mjs").await;
}

#[tokio::test]
async fn masto_websocket_stream() {
    scenario(Runtime::Node, "stream.mjs").await;
}
