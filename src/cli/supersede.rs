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
    /// Output format: text, or JSON (what changed: files, ledger events, counts)
    #[arg(long, value_enum, default_value_t = super::WriteFormat::Text)]
    format: super::WriteFormat,
}

/// Run `lesson supersede`.
pub fn run(root: &Path, args: SupersedeArgs) -> anyhow::Result<ExitCode> {
    let stamp = super::stamp(root, None)?;
    let (done, journal) = lesson::edit::journal::recording(|| {
        supersede::supersede(root, &args.old, &args.by, &stamp)
    });
    let done = done?;
    if args.format == super::WriteFormat::Json {
        let result = lesson::report::writes::superseded(root, &args.by, &done);
        super::print_write("supersede", false, root, &journal, result)?;
        return Ok(ExitCode::SUCCESS);
    }
    if !done.added.is_empty() {
        status!(
            "{}: supersedes {} (added)",
            done.path.display(),
            done.added.join(", ")
        );
    }
    for slug in &done.logged {
        status!(
            "{}: superseded by {}",
            lesson::ledger::path(root, slug).display(),
            args.by
        );
    }
    if !done.changed() {
        status!(
            "nothing to do: {} already supersedes {}",
            args.by,
            args.old.join(", ")
        );
    }
    Ok(ExitCode::SUCCESS)
}
