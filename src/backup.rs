//! `socialite backup` and `socialite restore`: the configured store, a progress bar on
//! a terminal, and the report. The SQLite work is in `store::embedded::{backup,
//! restore}`; MongoDB has its own tools, which these commands name.

use std::io::IsTerminal;
use std::path::Path;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::config::{Backend, Config};
use crate::store::embedded::backup::Progress;
use crate::store::embedded::restore::{RestoreOptions, Verdict};

/// Where to read about backing up MongoDB.
const MONGO_ADVICE: &str = "the MongoDB backend is backed up with MongoDB's own tools: \
    `mongodump --oplog` and `mongorestore --oplogReplay` on a replica set, or a filesystem \
    snapshot; keep the collections, worker_leases and the event log together (see \
    docs/operations-backup.md)";

/// Copies the configured embedded store to `to` while it is in use.
pub fn backup(config: &Config, to: &Path) -> anyhow::Result<String> {
    let store = embedded_store(config, "backup")?;
    let (bar, mut progress) = progress_bar("copying", "{pos}/{len} pages");
    let report = crate::store::embedded::backup::backup(store, to, &mut progress);
    bar.finish_and_clear();
    Ok(report?.to_string())
}

/// Replaces the configured embedded store with the backup `from`, once nothing uses it.
/// `allow_no_manifest` lets a copy without a manifest through, with a warning on stderr.
pub fn restore(config: &Config, from: &Path, allow_no_manifest: bool) -> anyhow::Result<String> {
    let store = embedded_store(config, "restore")?;
    let (bar, mut progress) = progress_bar("copying", "{bytes}/{total_bytes}");
    let report = crate::store::embedded::restore::restore(
        from,
        store,
        crate::domain::now_ms(),
        RestoreOptions { allow_no_manifest },
        &mut progress,
    );
    bar.finish_and_clear();
    let report = report?;
    if report.manifest == Verdict::Missing {
        eprintln!(
            "warning: {} has no manifest: its content was not verified (only its length and \
             SQLite's integrity check); take a new backup with this socialite",
            from.display()
        );
    }
    Ok(report.to_string())
}

fn embedded_store<'a>(config: &'a Config, command: &str) -> anyhow::Result<&'a Path> {
    match config.storage.backend {
        Backend::Embedded => Ok(&config.storage.path),
        Backend::Mongodb => {
            anyhow::bail!("`socialite {command}` works on the embedded store; {MONGO_ADVICE}")
        }
    }
}

/// A bar drawn on stderr when it is a terminal (hidden otherwise), and the callback that
/// moves it: `counts` is the template of the copied units.
fn progress_bar(first: &str, counts: &str) -> (ProgressBar, impl FnMut(Progress) + use<>) {
    let bar = if std::io::stderr().is_terminal() {
        ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr())
    } else {
        ProgressBar::hidden()
    };
    bar.set_style(
        ProgressStyle::with_template(&format!("{{msg:>9}} [{{bar:40}}] {counts} eta {{eta}}"))
            .expect("a valid template")
            .progress_chars("=> "),
    );
    bar.set_message(first.to_owned());
    let handle = bar.clone();
    let progress = move |event: Progress| match event {
        Progress::Copied { done, total } => {
            handle.set_length(total);
            handle.set_position(done);
        }
        Progress::Phase(what) => handle.set_message(what),
    };
    (bar, progress)
}
