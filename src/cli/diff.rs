//! `lesson diff BASE [HEAD]`: what a change does to the bank, for a reviewer.

use std::path::Path;
use std::process::ExitCode;

use anyhow::Context;
use clap::{Args, ValueEnum};
use lesson::report::diff;

/// Flags of `lesson diff`.
#[derive(Debug, Args)]
pub struct DiffArgs {
    /// The base revision (a branch, a tag, `origin/main`, a commit)
    base: String,
    /// The head revision (default: the working tree)
    head: Option<String>,
    /// How to print: text, markdown (a pull-request comment) or json
    #[arg(long, value_enum, default_value_t = DiffFormat::Text)]
    format: DiffFormat,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum DiffFormat {
    Text,
    Markdown,
    Json,
}

/// Run `lesson diff`. Exits 0 whatever the change holds: `lesson lint --base` is the check.
pub fn run(root: &Path, args: DiffArgs) -> anyhow::Result<ExitCode> {
    let summary = lesson::pr::diff(root, &args.base, args.head.as_deref(), super::now()?)
        .with_context(|| format!("cannot compare the bank with `{}`", args.base))?;
    let text = match args.format {
        DiffFormat::Text => diff::text(&summary),
        DiffFormat::Markdown => diff::markdown(&summary),
        DiffFormat::Json => diff::json(&summary)?,
    };
    print!("{text}");
    Ok(ExitCode::SUCCESS)
}
