//! `lesson dedup`: pairs of lessons that look like near-duplicates. Advisory: it always exits 0
//! when it could run, whatever it finds.

use std::path::Path;
use std::process::ExitCode;

use anyhow::Context;
use clap::Args;
use lesson::dedup;
use lesson::report::pairs;

use super::list::OutputFormat;

/// Flags of `lesson dedup`.
#[derive(Debug, Args)]
pub struct DedupArgs {
    /// How to print: text (one line per pair, then a summary) or json (an array of pairs)
    #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
    format: OutputFormat,
}

/// Run `lesson dedup`.
pub fn run(root: &Path, args: DedupArgs) -> anyhow::Result<ExitCode> {
    let bank = super::load_lessons(root)?;
    let found = dedup::pairs(&bank).context("cannot look for near-duplicates")?;
    if args.format == OutputFormat::Json {
        println!("{}", serde_json::to_string_pretty(&found)?);
    } else {
        print!("{}", pairs::text(&found));
    }
    super::release(bank);
    Ok(ExitCode::SUCCESS)
}
