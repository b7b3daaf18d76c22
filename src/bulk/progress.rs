//! Progress bars for a load, drawn on standard error only when it is a terminal.

use std::io::IsTerminal;
use std::time::Duration;

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};

pub struct Progress {
    bars: MultiProgress,
}

impl Default for Progress {
    fn default() -> Self {
        Progress::new()
    }
}

impl Progress {
    pub fn new() -> Self {
        let target = if std::io::stderr().is_terminal() {
            ProgressDrawTarget::stderr()
        } else {
            ProgressDrawTarget::hidden()
        };
        Progress {
            bars: MultiProgress::with_draw_target(target),
        }
    }

    /// A bar of `len` rows.
    pub fn bar(&self, what: &str, len: u64) -> ProgressBar {
        let bar = self.bars.add(ProgressBar::new(len));
        bar.set_style(
            ProgressStyle::with_template(
                "{msg:>10} [{bar:40}] {human_pos}/{human_len} {per_sec} eta {eta}",
            )
            .expect("a valid template")
            .progress_chars("=> "),
        );
        bar.set_message(what.to_owned());
        bar
    }

    /// A spinner whose message names the step under way.
    pub fn spinner(&self, what: &str) -> ProgressBar {
        let spinner = self.bars.add(ProgressBar::new_spinner());
        spinner.set_style(
            ProgressStyle::with_template("{prefix:>10} {spinner} {msg} ({elapsed})")
                .expect("a valid template"),
        );
        spinner.set_prefix(what.to_owned());
        spinner.enable_steady_tick(Duration::from_millis(200));
        spinner
    }
}
