//! `lesson list`: the bank's lessons as a table or JSON, selected and sorted by
//! `lesson::listing`.

use std::path::Path;
use std::process::ExitCode;

use clap::builder::{PossibleValuesParser, TypedValueParser};
use clap::{Args, ValueEnum};
use lesson::curate::stack;
use lesson::git::provenance::Provenance;
use lesson::index_md::{self, IndexEntry};
use lesson::lesson::Outcome;
use lesson::listing::{self, DateField, Query, QueryText, Sort, StatusFilter};
use lesson::report::lessons;

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
enum StatusArg {
    Active,
    Superseded,
    Expired,
    Quarantined,
    All,
}

/// A lesson's outcome, as `--outcome` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum OutcomeArg {
    Success,
    Failure,
    Mixed,
}

/// Which date `--since` and `--until` test.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum DateArg {
    /// When the lesson was added
    Created,
    /// When it last changed
    Updated,
}

/// Flags of `lesson list`.
#[derive(Debug, Args)]
pub struct ListArgs {
    /// Show only lessons with this status
    #[arg(long, value_enum, default_value_t = StatusArg::All)]
    status: StatusArg,
    /// Only lessons added (see --date) at or after WHEN: today, yesterday, 7d (also h, w), a
    /// date (2026-11-20, UTC) or an RFC 3339 timestamp; relative to $LESSON_NOW when set
    #[arg(long, value_name = "WHEN")]
    since: Option<String>,
    /// Only lessons added (see --date) before the end of WHEN (a date includes its whole day)
    #[arg(long, value_name = "WHEN")]
    until: Option<String>,
    /// The date --since and --until test: `created` (git's first commit of the file, else the
    /// ledger's oldest event) or `updated` (git's newest commit, else the ledger's newest event)
    #[arg(long, value_enum, default_value_t = DateArg::Created)]
    date: DateArg,
    /// Only lessons with at least one of these tags (repeat, or separate with commas)
    #[arg(long, value_name = "TAG", value_delimiter = ',', num_args = 1..)]
    tag: Vec<String>,
    /// Only lessons with this outcome (repeat for any of several)
    #[arg(long, value_enum)]
    outcome: Vec<OutcomeArg>,
    /// Only lessons from SOURCE: an evidence kind (run, conversation, work-item, audit,
    /// wiki-page), KIND:REF, or a REF alone (an evidence ref, or the `metadata.lesson.origin`
    /// source or run); REF may be a glob (repeat for any of several)
    #[arg(long, value_name = "SOURCE")]
    origin: Vec<String>,
    /// Only lessons whose ledger's first event was recorded by ID (a glob; repeat for any of
    /// several)
    #[arg(long, value_name = "ID")]
    by: Vec<String>,
    /// The order: by slug, newest created first, most recently updated first, most of the
    /// --tag tags first (then most recently updated), or by retrieval figures: `shown` (most
    /// shown first), `utility` (highest first, never shown last)
    #[arg(
        long,
        value_name = "KEY",
        default_value_t = Sort::Name,
        value_parser = PossibleValuesParser::new(Sort::ALL.iter().map(|s| s.as_str()))
            .map(|s| s.parse::<Sort>().expect("a possible value"))
    )]
    sort: Sort,
    /// At most N lessons (after sorting)
    #[arg(long, value_name = "N")]
    limit: Option<usize>,
    /// How to print
    #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
    format: OutputFormat,
}

impl ListArgs {
    /// The library's query for these flags, relative dates read at `now`.
    fn query(&self, now: jiff::Timestamp) -> anyhow::Result<Query> {
        let query = Query {
            status: match self.status {
                StatusArg::All => StatusFilter::All,
                StatusArg::Active => StatusFilter::Active,
                StatusArg::Superseded => StatusFilter::Superseded,
                StatusArg::Expired => StatusFilter::Expired,
                StatusArg::Quarantined => StatusFilter::Quarantined,
            },
            date: match self.date {
                DateArg::Created => DateField::Created,
                DateArg::Updated => DateField::Updated,
            },
            tags: self.tag.clone(),
            outcomes: self
                .outcome
                .iter()
                .map(|o| match o {
                    OutcomeArg::Success => Outcome::Success,
                    OutcomeArg::Failure => Outcome::Failure,
                    OutcomeArg::Mixed => Outcome::Mixed,
                })
                .collect(),
            sort: self.sort,
            limit: self.limit,
            dates: self.format == OutputFormat::Json,
            ..Query::default()
        };
        let text = QueryText {
            since: self.since.as_deref(),
            until: self.until.as_deref(),
            origins: &self.origin,
            by: &self.by,
        };
        Ok(query.with_text(text, now)?)
    }
}

/// Run `lesson list`. A file that does not parse into a lesson, or has an error-level finding
/// of its own, is left out (as `_index.md` leaves it out), and a note on stderr names it.
pub fn run(root: &Path, args: ListArgs) -> anyhow::Result<ExitCode> {
    let query = args.query(super::now()?)?;
    let bank = super::load_lessons(root)?;
    let stack = stack::load(bank, super::load_lessons)?;
    if stack::is_layered(&stack) {
        return run_layered(&stack, args.format, &query);
    }
    let bank = stack.into_iter().next().expect("the front bank").bank;
    let provenance = provenance(&bank.root);
    let (figures, logged) = lesson::usage::figures(&bank.root)?;
    let rows = listing::list(&bank, provenance.as_ref(), &figures, &query);
    match args.format {
        OutputFormat::Text => print!(
            "{}",
            lessons::listing_table(
                &rows,
                query.reads_dates(),
                provenance.is_some(),
                !query.tags.is_empty(),
                logged
            )
        ),
        OutputFormat::Json => {
            let json = lessons::json_list(&rows);
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
    query: &Query,
) -> anyhow::Result<ExitCode> {
    match format {
        OutputFormat::Text => {
            // the layered table lists by status (the other filters and sorts: JSON)
            let rows: Vec<(&str, IndexEntry)> = stack
                .iter()
                .flat_map(|s| {
                    let entries = index_md::entries(&s.bank);
                    entries.into_iter().map(|e| (s.name.as_str(), e))
                })
                .filter(|(_, e)| query.status.keeps(e.state))
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
            let rows: Vec<Vec<listing::Listed>> = stack
                .iter()
                .zip(provenances.iter().zip(&figures))
                .map(|(s, (p, f))| listing::list(&s.bank, p.as_ref(), f, query))
                .collect();
            let json: Vec<lessons::LessonJson> = stack
                .iter()
                .zip(&rows)
                .flat_map(|(s, rows)| {
                    lessons::json_list(rows)
                        .into_iter()
                        .map(|j| j.with_bank(&s.name))
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
