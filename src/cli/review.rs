//! `lesson review`: the lessons that need a human.

use std::path::Path;
use std::process::ExitCode;

use clap::Args;
use lesson::curate::review;
use lesson::curate::stack;
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
    let stack = stack::load(bank, super::load)?;
    if stack::is_layered(&stack) {
        let mut banks = Vec::new();
        for s in &stack {
            banks.push((s.name.as_str(), review::review(&s.bank)?));
        }
        if args.format == OutputFormat::Json {
            let json = report::review::json_with_banks(&banks)?;
            println!("{}", serde_json::to_string_pretty(&json)?);
        } else {
            let all: Vec<review::Finding> = banks.into_iter().flat_map(|(_, f)| f).collect();
            print!("{}", report::review::text(&all));
        }
        return Ok(ExitCode::SUCCESS);
    }
    let findings = review::review(&stack[0].bank)?;
    if args.format == OutputFormat::Json {
        println!("{}", serde_json::to_string_pretty(&findings)?);
        return Ok(ExitCode::SUCCESS);
    }
    print!("{}", report::review::text(&findings));
    Ok(ExitCode::SUCCESS)
}
