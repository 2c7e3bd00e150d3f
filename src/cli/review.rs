//! `lesson review`: the lessons that need a human.

use std::path::Path;
use std::process::ExitCode;

use clap::Args;
use lesson::curate::review::{self, Reason};

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
    for f in &findings {
        println!("{}: {}: {}", f.path, f.reason.as_str(), f.message);
    }
    if findings.is_empty() {
        println!("nothing to review");
        return Ok(ExitCode::SUCCESS);
    }
    let mut lessons: Vec<&str> = findings.iter().map(|f| f.slug.as_str()).collect();
    lessons.sort_unstable();
    lessons.dedup();
    let mut parts = Vec::new();
    for reason in [
        Reason::FailureDominant,
        Reason::Expired,
        Reason::MixedBand,
        Reason::NeverApplied,
        Reason::NearDuplicate,
    ] {
        let n = findings.iter().filter(|f| f.reason == reason).count();
        if n > 0 {
            parts.push(format!("{n} {}", reason.as_str()));
        }
    }
    println!(
        "{} lesson{} to review: {}",
        lessons.len(),
        if lessons.len() == 1 { "" } else { "s" },
        parts.join(", ")
    );
    Ok(ExitCode::SUCCESS)
}
