//! Flags and dispatch. Each command lives in its own module and returns an exit code:
//! 0 clean, 1 findings at error level (or a stale check), 2 usage or internal failure.

mod config;
mod lint;
mod rule;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use clap::{Parser, Subcommand};

/// Manage a git-versioned bank of AIP-11 LESSON.md files.
#[derive(Debug, Parser)]
#[command(name = "lesson", version, about, max_term_width = 100)]
pub struct Args {
    /// The bank directory (default: $LESSON_DIR, else the nearest ancestor with lesson.toml,
    /// else ./lessons)
    #[arg(long, global = true, value_name = "BANK")]
    dir: Option<PathBuf>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Check every lesson against AIP-11 and the bank's rules
    Lint(lint::LintArgs),
    /// Print the documentation of a rule, or of all rules
    Rule(rule::RuleArgs),
    /// Print the bank's resolved configuration (lesson.toml with defaults)
    Config,
}

/// Run a command.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    match args.command {
        Command::Lint(a) => lint::run(&bank_dir(args.dir)?, a),
        Command::Rule(a) => rule::run(a),
        Command::Config => config::run(&bank_dir(args.dir)?),
    }
}

/// The bank directory: `--dir`, `LESSON_DIR`, the nearest ancestor with `lesson.toml`, `./lessons`.
fn bank_dir(dir: Option<PathBuf>) -> anyhow::Result<PathBuf> {
    let cwd = std::env::current_dir().context("cannot read the current directory")?;
    let env = std::env::var_os(lesson::bank::DIR_ENV).map(PathBuf::from);
    Ok(lesson::bank::discover(dir.as_deref(), env.as_deref(), &cwd))
}

/// Load a bank with context for the error message.
fn load(root: &Path) -> anyhow::Result<lesson::Bank> {
    lesson::Bank::load(root).with_context(|| format!("cannot load the bank at {}", root.display()))
}
