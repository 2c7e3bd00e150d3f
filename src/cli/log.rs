//! `lesson log SLUG`: a lesson's story: the commits that touched it (following renames and the
//! move to `_archive/`), its ledger's events in time order, and its supersession chain.

use std::path::Path;
use std::process::ExitCode;

use clap::Args;

use lesson::curate::show::{self, Found};
use lesson::report::log::LessonLog;

use super::list::OutputFormat;

/// Flags of `lesson log`.
#[derive(Debug, Args)]
pub struct LogArgs {
    /// The lesson's slug
    slug: String,
    /// How to print
    #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
    format: OutputFormat,
}

/// Run `lesson log`.
pub fn run(root: &Path, args: LogArgs) -> anyhow::Result<ExitCode> {
    let bank = super::load_lessons(root)?;
    let found = show::find(&bank, &args.slug)?;
    let (doc, status) = match &found {
        Found::Live(doc) => (
            *doc,
            doc.lesson
                .as_ref()
                .map_or("active", |l| bank.status(l).label()),
        ),
        Found::Archived(doc) => (doc.as_ref(), "archived"),
        Found::NotALesson(doc) => anyhow::bail!(
            "{} is not a valid lesson; `lesson lint {}` says why",
            doc.source.path.display(),
            doc.source.path.display()
        ),
    };
    let path = super::list::bank_relative(&bank.root, &doc.source.path);
    let commits = match lesson::git::log::touches(&bank.root, &path) {
        Ok(c) => c,
        Err(e) => {
            note!("note: no commits: {e}");
            None
        }
    };
    let log = LessonLog::build(&bank, &args.slug, path, status, commits.as_deref())?;
    match args.format {
        OutputFormat::Text => print!("{}", log.text()),
        OutputFormat::Json => println!("{}", serde_json::to_string_pretty(&log)?),
    }
    Ok(ExitCode::SUCCESS)
}
