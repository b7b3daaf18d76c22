//! `socialite audit [--repair]`: the configured store opened read-only and audited, the
//! report printed, a progress bar on stderr when it is a terminal, and the exit status:
//! 0 clean (pending discrepancies allowed), 1 discrepancies, 2 the audit itself failed
//! or was refused (no store at the configured place, or one of another format, which
//! the audit never upgrades). Only `--repair` opens the store for writing, once the
//! read-only open has accepted it.

use std::io::IsTerminal;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use super::{Progress, Settings, audit};
use crate::config::Config;

struct Bar(ProgressBar);

impl Progress for Bar {
    fn phase(&self, name: &str, total: u64) {
        self.0.set_message(name.to_owned());
        self.0.set_position(0);
        self.0.set_length(total);
    }

    fn advance(&self, n: u64) {
        self.0.inc(n);
    }
}

fn bar() -> Bar {
    let bar = if std::io::stderr().is_terminal() {
        ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr())
    } else {
        ProgressBar::hidden()
    };
    bar.set_style(
        ProgressStyle::with_template("{msg:>9} [{bar:40}] {pos}/{len} {per_sec} eta {eta}")
            .expect("a valid template")
            .progress_chars("=> "),
    );
    Bar(bar)
}

/// Runs the command; returns the exit status.
pub fn run(config: &Config, repair: bool, wait: Duration) -> u8 {
    match run_inner(config, repair, wait) {
        Ok(code) => code,
        Err(error) => {
            tracing::error!("{error:#}");
            eprintln!("error: {error:#}");
            2
        }
    }
}

fn run_inner(config: &Config, repair: bool, wait: Duration) -> anyhow::Result<u8> {
    let feed = config.feed.settings();
    let mut settings = Settings::new(feed.strategy, feed.backfill_on_follow);
    settings.wait = wait;
    tokio::runtime::Runtime::new()?.block_on(async move {
        // Read-only: a missing store, another database, or a store of another format
        // is refused here, with nothing created or written, `--repair` included.
        let store = crate::app::open_store_read_only(config).await?;
        let progress = bar();
        let report = audit(&store, &settings, &progress).await?;
        progress.0.finish_and_clear();
        println!("{report}");
        if !repair || report.clean() {
            return Ok(report.exit_code());
        }
        println!("\nrepairing:");
        // The repair's writes (the workers' rebuilds) on the store opened for writing,
        // its format checked by the read-only open above, so opening it migrates nothing.
        let writable = crate::app::open_store(config).await?;
        for line in super::repair::repair(config, &writable, &report).await? {
            println!("  {line}");
        }
        drop(writable);
        println!("\naudit after the repair:");
        let progress = bar();
        let again = audit(&store, &settings, &progress).await?;
        progress.0.finish_and_clear();
        println!("{again}");
        Ok(again.exit_code())
    })
}
