//! `lesson archive [SLUG…] [--expired] [--dry-run]`: move lessons to `_archive/`.

use std::path::Path;
use std::process::ExitCode;

use clap::Args;
use lesson::curate::archive::{self, Selection};

/// Flags of `lesson archive`.
#[derive(Debug, Args)]
pub struct ArchiveArgs {
    /// The slugs of the lessons to archive
    slugs: Vec<String>,
    /// Archive every expired lesson
    #[arg(long)]
    expired: bool,
    /// Archive every lesson the retention policy names ([retention] in lesson.toml; a lesson
    /// with metadata.lesson.pinned: true never)
    #[arg(long)]
    policy: bool,
    /// Print what would move; change nothing
    #[arg(long)]
    dry_run: bool,
    /// Output format: text, or JSON (what changed: files, ledger events, counts)
    #[arg(long, value_enum, default_value_t = super::WriteFormat::Text)]
    format: super::WriteFormat,
}

/// Run `lesson archive`.
pub fn run(root: &Path, args: ArchiveArgs) -> anyhow::Result<ExitCode> {
    if args.slugs.is_empty() && !args.expired && !args.policy {
        anyhow::bail!("name the lessons to archive, or pass --expired or --policy");
    }
    let stamp = super::stamp(root, None)?;
    let selection = Selection {
        slugs: args.slugs,
        expired: args.expired,
        policy: args.policy,
    };
    let (moves, journal) = lesson::edit::journal::recording(|| {
        archive::archive(root, &selection, &stamp, args.dry_run)
    });
    let moves = moves?;
    if args.format == super::WriteFormat::Json {
        let result = lesson::report::writes::archived(root, &moves);
        super::print_write("archive", args.dry_run, root, &journal, result)?;
        return Ok(ExitCode::SUCCESS);
    }
    let verb = if args.dry_run { "would move " } else { "" };
    for m in &moves {
        match &m.rule {
            Some((rule, why)) => status!(
                "{verb}{} -> {} ({}: {why})",
                m.from.display(),
                m.to.display(),
                rule.key()
            ),
            None => status!("{verb}{} -> {}", m.from.display(), m.to.display()),
        }
        for old in &m.reactivated {
            note!(
                "note: `{old}` is active again: `{}` was the last lesson superseding it",
                m.slug
            );
        }
    }
    if moves.is_empty() {
        status!("nothing to archive");
    }
    Ok(ExitCode::SUCCESS)
}
