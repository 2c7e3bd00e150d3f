//! The library's [`Progress`] for people: a progress bar (indicatif) on stderr when
//! [`super::ui::Ui::progress`] allows one (a terminal, not `--quiet`, not on CI), and under
//! `--verbose` one line per phase with its steps and time.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use indicatif::{HumanCount, ProgressBar, ProgressDrawTarget, ProgressState, ProgressStyle};
use lesson::progress::Progress;

/// A bar (or nothing) and, under `--verbose`, the phase's name and start.
pub struct Bar {
    bar: Option<ProgressBar>,
    verbose: bool,
    steps: AtomicU64,
    phase: Mutex<Option<(String, Instant)>>,
}

impl Bar {
    /// As this run's conventions say.
    pub fn new() -> Bar {
        let ui = super::ui::ui();
        Bar {
            bar: ui.progress().then(ProgressBar::hidden),
            verbose: ui.verbose,
            steps: AtomicU64::new(0),
            phase: Mutex::new(None),
        }
    }
}

impl Progress for Bar {
    fn begin(&self, phase: &str, total: Option<u64>) {
        self.steps.store(0, Ordering::Relaxed);
        if let Some(bar) = &self.bar {
            let template = match total {
                Some(_) => "{spinner} {msg} [{bar:30}] {pos}/{len}",
                None => "{spinner} {msg} {steps}",
            };
            let style = ProgressStyle::with_template(template)
                .unwrap_or_else(|_| ProgressStyle::default_spinner())
                .progress_chars("=> ")
                // a phase that counts no steps shows none (not `0`)
                .with_key(
                    "steps",
                    |state: &ProgressState, w: &mut dyn std::fmt::Write| {
                        if state.pos() > 0 {
                            let _ = write!(w, "{}", HumanCount(state.pos()));
                        }
                    },
                );
            // set up out of sight, then shown: no frame of the last phase's state
            bar.set_draw_target(ProgressDrawTarget::hidden());
            bar.reset();
            bar.set_style(style);
            match total {
                Some(n) => bar.set_length(n),
                None => bar.unset_length(),
            }
            bar.set_message(phase.to_string());
            bar.set_draw_target(ProgressDrawTarget::stderr());
            bar.enable_steady_tick(Duration::from_millis(120));
        }
        if self.verbose {
            *self.phase.lock().unwrap_or_else(|e| e.into_inner()) =
                Some((phase.to_string(), Instant::now()));
        }
    }

    fn advance(&self, n: u64) {
        self.steps.fetch_add(n, Ordering::Relaxed);
        if let Some(bar) = &self.bar {
            bar.inc(n);
        }
    }

    fn end(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
        let phase = self.phase.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some((name, started)) = phase {
            let steps = match self.steps.load(Ordering::Relaxed) {
                0 => String::new(),
                n => format!(" ({n} steps)"),
            };
            verbose!("{name}{steps}: {:.1?}", started.elapsed());
        }
    }
}
