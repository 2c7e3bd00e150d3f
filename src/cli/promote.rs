//! `lesson promote SLUG --to BANK`: move a lesson into another bank through its `add` gate.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use clap::Args;
use lesson::curate::promote;

/// Flags of `lesson promote`.
#[derive(Debug, Args)]
pub struct PromoteArgs {
    /// The slug of the lesson to promote (a lesson of this bank)
    slug: String,
    /// The bank to move it into: the name of an included bank (as `lesson list` shows it),
    /// else a bank's directory
    #[arg(long, value_name = "BANK")]
    to: String,
    /// Who promotes (default: $LESSON_BY, else user@host)
    #[arg(long, value_name = "ID")]
    by: Option<String>,
    /// Check the gate and print what would change; write nothing
    #[arg(long)]
    dry_run: bool,
    /// Output format: text, or JSON (what changed: files, ledger events, the promotion)
    #[arg(long, value_enum, default_value_t = super::WriteFormat::Text)]
    format: super::WriteFormat,
}

/// Run `lesson promote`.
pub fn run(root: &Path, args: PromoteArgs) -> anyhow::Result<ExitCode> {
    let config = lesson::config::Config::load(root)
        .with_context(|| format!("cannot load the bank at {}", root.display()))?;
    let layers = lesson::layers::resolve(root, &config)
        .with_context(|| format!("cannot load the bank at {}", root.display()))?;
    let to = match lesson::layers::find(&layers, &args.to) {
        Some(layer) => layer.root.clone(),
        None => PathBuf::from(&args.to),
    };
    let stamp = super::stamp(root, args.by)?;
    let json = args.format == super::WriteFormat::Json;
    let (done, journal) = lesson::edit::journal::recording(|| {
        promote::promote(root, &args.slug, &to, &stamp, args.dry_run)
    });
    let done = match done {
        Ok(done) => done,
        Err(e) => return super::add::refused(e, json),
    };
    if json {
        let result = lesson::report::writes::promoted(root, &done);
        super::print_write("promote", args.dry_run, root, &journal, result)?;
        return Ok(ExitCode::SUCCESS);
    }
    let verb = if args.dry_run {
        "would promote"
    } else {
        "promoted"
    };
    status!(
        "{verb} `{}` into {}: {} (this bank keeps it in {})",
        done.slug,
        done.bank,
        done.to.display(),
        done.archived.display()
    );
    if args.dry_run {
        status!("dry run: nothing was written");
    }
    Ok(ExitCode::SUCCESS)
}
