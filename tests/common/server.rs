//! Servers under test: one spawned in this process on a fresh configuration
//! ([`TestServer`]), or the real binary as a child process ([`start_binary`]).

use std::path::PathBuf;
use std::sync::Arc;

use socialite::app::{RunningServer, spawn};

use super::{Api, Credentials, TestConfig};

/// Starts the real binary serving on a free port, with `env` on top of a quiet
/// environment, and returns it with its base URL once it reports its address.
pub fn start_binary(
    args: &[&str],
    env: &[(&str, &std::ffi::OsStr)],
) -> (std::process::Child, String) {
    try_start_binary(args, env).expect("the server reports its address")
}

/// As [`start_binary`]; `None` when the process ended before reporting its address (an
/// in-binary abort fault may fire while it starts).
pub fn try_start_binary(
    args: &[&str],
    env: &[(&str, &std::ffi::OsStr)],
) -> Option<(std::process::Child, String)> {
    use std::io::{BufRead, BufReader};
    use std::process::{Command, Stdio};
    let mut command = Command::new(env!("CARGO_BIN_EXE_socialite"));
    command
        .args(["serve", "--listen", "127.0.0.1:0"])
        .args(args)
        .env("NO_COLOR", "1")
        .env(
            "RUST_LOG",
            std::env::var("SOCIALITE_TEST_SERVER_RUST_LOG").unwrap_or_else(|_| "info".into()),
        )
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    for (key, value) in env {
        command.env(key, value);
    }
    let mut child = command.spawn().expect("the binary starts");
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    // Debugging aid: every started server's log appended to one file.
    let mut log = std::env::var_os("SOCIALITE_TEST_SERVER_LOG").map(|path| {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path);
        file.expect("the server log opens")
    });
    let reader = std::thread::spawn(move || {
        // The last lines before the address, for a process that ends without one.
        let mut last = std::collections::VecDeque::new();
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if let Some(log) = log.as_mut() {
                use std::io::Write;
                let _ = writeln!(log, "{line}");
            }
            if let Some(at) = line.find("listening on http://") {
                let _ = tx.send(line[at + "listening on ".len()..].trim().to_owned());
                last.clear();
            } else {
                last.push_back(line);
                if last.len() > 4 {
                    last.pop_front();
                }
            }
        }
        last
    });
    match rx.recv_timeout(std::time::Duration::from_secs(30)) {
        Ok(base) => Some((child, base)),
        Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
            let status = child.wait();
            let last = reader.join().unwrap_or_default();
            eprintln!(
                "server ended before reporting its address: {status:?}; its last lines: {last:?}"
            );
            None
        }
        Err(timeout) => panic!("the server reports its address: {timeout}"),
    }
}

pub struct TestServer {
    pub base: String,
    pub client: reqwest::Client,
    /// The credentials every [`Api`] of this server shares.
    pub credentials: Credentials,
    pub server: RunningServer,
    pub data_dir: PathBuf,
    _dir: tempfile::TempDir,
}

impl TestServer {
    pub async fn start(test: TestConfig) -> TestServer {
        let server = spawn(&test.config).await.expect("server starts");
        TestServer::around(server, test)
    }

    /// As [`TestServer::start`], with the clock the rate limits and the token cache read.
    pub async fn start_with_clock(
        test: TestConfig,
        clock: Arc<dyn socialite::workers::Clock>,
    ) -> TestServer {
        let store = socialite::app::open_store(&test.config)
            .await
            .expect("store opens");
        let server = socialite::app::spawn_with_clock(&test.config, store, clock)
            .await
            .expect("server starts");
        TestServer::around(server, test)
    }

    /// As [`TestServer::start`], over `store` (opened with `socialite::app::open_store`
    /// on `test`'s config), which the test may have written to first.
    pub async fn start_on(test: TestConfig, store: socialite::store::Store) -> TestServer {
        let server = socialite::app::spawn_with_store(&test.config, store)
            .await
            .expect("server starts");
        TestServer::around(server, test)
    }

    fn around(server: RunningServer, test: TestConfig) -> TestServer {
        TestServer {
            base: format!("http://{}", server.addr),
            client: reqwest::Client::new(),
            credentials: Credentials::default(),
            server,
            data_dir: test.dir.path().to_path_buf(),
            _dir: test.dir,
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{}", self.base, path)
    }

    /// Waits until the server's workers have applied every change written so far.
    pub async fn settle(&self) {
        self.server
            .state
            .workers
            .settle(std::time::Duration::from_secs(30))
            .await
            .expect("the workers catch up");
    }

    pub fn api(&self) -> Api {
        Api {
            client: self.client.clone(),
            base: self.base.clone(),
            credentials: self.credentials.clone(),
        }
    }

    pub async fn stop(self) {
        self.server.stop().await.expect("server stops cleanly");
    }
}
