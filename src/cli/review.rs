//! `lesson review`: the lessons that need a human.

use std::path::Path;
use std::process::ExitCode;

use clap::Args;
use lesson::curate::review;
use lesson::report;

use super::list::OutputFormat;

/// Flags of `lesson review`.
#[derive(Debug, Args)]
pub struct ReviewArgs {
    /// How to print
    #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
    format: OutputFormat,
}

/// Run `lesson review`.
pub fn run(root: &Path, args: ReviewArgs) -> anyhow::Result<ExitCode> {
    let bank = super::load(root)?;
    let findings = review::review(&bank)?;
    if args.format == OutputFormat::Json {
        println!("{}", serde_json::to_string_pretty(&findings)?);
        return Ok(ExitCode::SUCCESS);
    }
    print!("{}", report::review::text(&findings));
    Ok(ExitCode::SUCCESS)
}
