//! `lesson list`: the bank's lessons as a table or JSON.

use std::path::Path;
use std::process::ExitCode;

use clap::{Args, ValueEnum};
use lesson::curate::stack;
use lesson::git::provenance::Provenance;
use lesson::index_md::{self, IndexEntry};
use lesson::report::lessons;
use lesson::usage::SortKey;

/// Output formats of `list` and `show`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OutputFormat {
    /// For people
    Text,
    /// A stable JSON document
    Json,
}

/// Which lessons `list` shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum StatusFilter {
    Active,
    Superseded,
    Expired,
    All,
}

/// Flags of `lesson list`.
#[derive(Debug, Args)]
pub struct ListArgs {
    /// Show only lessons with this status
    #[arg(long, value_enum, default_value_t = StatusFilter::All)]
    status: StatusFilter,
    /// How to print
    #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
    format: OutputFormat,
    /// Order: by slug (the default), or by retrieval figures: `shown` (most shown first),
    /// `utility` (highest first, never shown last)
    #[arg(long, value_enum, value_name = "KEY")]
    sort: Option<SortArg>,
}

/// `list --sort`'s keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum SortArg {
    /// Most shown first
    Shown,
    /// Highest utility first
    Utility,
}

/// Run `lesson list`. A file that does not parse into a lesson, or has an error-level finding
/// of its own, is left out (as `_index.md` leaves it out), and a note on stderr names it.
pub fn run(root: &Path, args: ListArgs) -> anyhow::Result<ExitCode> {
    let bank = super::load_lessons(root)?;
    let keep = |state: &str| match args.status {
        StatusFilter::All => true,
        StatusFilter::Active => state == "active",
        StatusFilter::Superseded => state == "superseded",
        StatusFilter::Expired => state == "expired",
    };
    let stack = stack::load(bank, super::load_lessons)?;
    if stack::is_layered(&stack) {
        return run_layered(&stack, args.format, keep);
    }
    let bank = stack.into_iter().next().expect("the front bank").bank;
    let provenance = provenance(&bank.root);
    let (figures, logged) = lesson::usage::figures(&bank.root)?;
    let sort = args.sort.map(|s| match s {
        SortArg::Shown => SortKey::Shown,
        SortArg::Utility => SortKey::Utility,
    });
    match args.format {
        OutputFormat::Text => {
            let mut entries: Vec<IndexEntry> = index_md::entries(&bank)
                .into_iter()
                .filter(|e| keep(e.state))
                .collect();
            if let Some(key) = sort {
                key.sort(&mut entries, &figures, |e| &e.slug);
            }
            let usage = logged.then_some(&figures);
            print!(
                "{}",
                lessons::table_with_usage(&entries, provenance.as_ref(), usage)
            );
        }
        OutputFormat::Json => {
            let mut json = lessons::json_list(&bank, provenance.as_ref(), &figures, keep);
            if let Some(key) = sort {
                key.sort(&mut json, &figures, |j| j.slug());
            }
            println!("{}", serde_json::to_string_pretty(&json)?);
        }
    }
    if let Some(note) = index_md::left_out_note(&index_md::left_out(&bank)) {
        note!("{note}");
    }
    Ok(ExitCode::SUCCESS)
}

/// `lesson list` of a bank that includes others: every bank's rows, each naming its bank.
fn run_layered(
    stack: &[stack::Stacked],
    format: OutputFormat,
    keep: impl Fn(&str) -> bool,
) -> anyhow::Result<ExitCode> {
    match format {
        OutputFormat::Text => {
            let rows: Vec<(&str, IndexEntry)> = stack
                .iter()
                .flat_map(|s| {
                    let entries = index_md::entries(&s.bank);
                    entries.into_iter().map(|e| (s.name.as_str(), e))
                })
                .filter(|(_, e)| keep(e.state))
                .collect();
            print!("{}", lessons::table_with_banks(&rows));
        }
        OutputFormat::Json => {
            let provenances: Vec<Option<Provenance>> =
                stack.iter().map(|s| provenance(&s.bank.root)).collect();
            let figures = stack
                .iter()
                .map(|s| lesson::usage::figures(&s.bank.root).map(|(f, _)| f))
                .collect::<Result<Vec<_>, _>>()?;
            let json: Vec<lessons::LessonJson> = stack
                .iter()
                .zip(provenances.iter().zip(&figures))
                .flat_map(|(s, (p, f))| {
                    let list = lessons::json_list(&s.bank, p.as_ref(), f, &keep);
                    list.into_iter().map(|j| j.with_bank(&s.name))
                })
                .collect();
            println!("{}", serde_json::to_string_pretty(&json)?);
        }
    }
    for s in stack {
        if let Some(note) = index_md::left_out_note(&index_md::left_out(&s.bank)) {
            match s.name.as_str() {
                lesson::layers::FRONT => note!("{note}"),
                name => note!("{name}: {note}"),
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The bank's provenance when it is in git; a failure to read history is a note on stderr,
/// and the listing goes on without it.
pub(super) fn provenance(root: &Path) -> Option<Provenance> {
    match Provenance::of_bank(root) {
        Ok(p) => p,
        Err(e) => {
            note!("note: no provenance: {e}");
            None
        }
    }
}

/// A file's path relative to the bank's root, `/`-separated.
pub(super) use lesson::layout::bank_relative;
