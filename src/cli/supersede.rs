//! `lesson supersede OLD… --by NEW`: NEW replaces the OLD lessons.

use std::path::Path;
use std::process::ExitCode;

use clap::Args;
use lesson::curate::supersede;

/// Flags of `lesson supersede`.
#[derive(Debug, Args)]
pub struct SupersedeArgs {
    /// The slugs of the lessons NEW replaces
    #[arg(required = true, value_name = "OLD")]
    old: Vec<String>,
    /// The slug of the lesson that replaces them
    #[arg(long, value_name = "NEW")]
    by: String,
}

/// Run `lesson supersede`.
pub fn run(root: &Path, args: SupersedeArgs) -> anyhow::Result<ExitCode> {
    let stamp = super::stamp(root, None)?;
    let done = supersede::supersede(root, &args.old, &args.by, &stamp)?;
    if !done.added.is_empty() {
        println!(
            "{}: supersedes {} (added)",
            done.path.display(),
            done.added.join(", ")
        );
    }
    for slug in &done.logged {
        println!(
            "{}: superseded by {}",
            lesson::ledger::path(root, slug).display(),
            args.by
        );
    }
    if !done.changed() {
        println!(
            "nothing to do: {} already supersedes {}",
            args.by,
            args.old.join(", ")
        );
    }
    Ok(ExitCode::SUCCESS)
}
