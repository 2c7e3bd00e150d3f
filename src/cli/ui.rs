//! The output conventions every command shares, decided once per run: colour (`--color`,
//! `NO_COLOR`, a terminal), `--quiet` and `--verbose`, and whether to draw progress bars.
//!
//! Commands read the decision through [`ui`] and print through the `status!`, `note!` and
//! `verbose!` macros of `cli/mod.rs`.

use std::io::IsTerminal;
use std::sync::OnceLock;

use clap::ValueEnum;

/// When to colour output.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, ValueEnum)]
pub enum ColorChoice {
    /// When the stream is a terminal and `NO_COLOR` is unset or empty
    #[default]
    Auto,
    /// Always, even into a pipe or a file
    Always,
    /// Never
    Never,
}

/// How much to say, and how.
#[derive(Debug, Clone, Copy, Default)]
pub struct Ui {
    /// `--color`.
    pub color: ColorChoice,
    /// `--quiet`: errors, warnings and the data asked for; no summaries, notes or progress.
    pub quiet: bool,
    /// `--verbose`: extra context on stderr.
    pub verbose: bool,
}

/// The environment variable that turns colour off when set to anything but the empty string
/// (<https://no-color.org>).
const NO_COLOR: &str = "NO_COLOR";
/// Set by every CI service: no progress bars there, whatever the terminal says.
const CI: &str = "CI";

fn set_and_not_empty(name: &str) -> bool {
    std::env::var_os(name).is_some_and(|v| !v.is_empty())
}

impl Ui {
    /// Whether to colour a stream that is (`terminal`) or is not a terminal.
    fn color(&self, terminal: bool) -> bool {
        match self.color {
            ColorChoice::Always => true,
            ColorChoice::Never => false,
            ColorChoice::Auto => terminal && !set_and_not_empty(NO_COLOR),
        }
    }

    /// Whether to colour standard output.
    pub fn color_stdout(&self) -> bool {
        self.color(std::io::stdout().is_terminal())
    }

    /// Whether to colour standard error.
    pub fn color_stderr(&self) -> bool {
        self.color(std::io::stderr().is_terminal())
    }

    /// Whether to draw progress bars: stderr is a terminal, not `--quiet`, not on CI.
    pub fn progress(&self) -> bool {
        !self.quiet && std::io::stderr().is_terminal() && std::env::var_os(CI).is_none()
    }
}

static UI: OnceLock<Ui> = OnceLock::new();

/// Fix this run's conventions (once, before the command runs).
pub fn set(ui: Ui) {
    let _ = UI.set(ui);
}

/// This run's conventions (the defaults until [`set`]).
pub fn ui() -> &'static Ui {
    UI.get_or_init(Ui::default)
}
