//! `lesson new <slug> ...`: scaffold a lesson from the bank's template, check it, write it.

use std::path::Path;
use std::process::ExitCode;

use anyhow::Context;
use clap::{Args, ValueEnum};
use lesson::diagnostic::Severity;
use lesson::edit::write_atomic;
use lesson::ledger::{EventKind, Ledger};
use lesson::lesson::Outcome;
use lesson::report::{self, Format, Sources};
use lesson::scaffold::{self, Draft, NewEvidence, NewLesson, NewTarget};
use lesson::{index_md, Bank};

/// Flags of `lesson new`.
#[derive(Debug, Args)]
pub struct NewArgs {
    /// The lesson's slug, also its file name: lowercase letters, digits and dashes
    slug: String,
    /// One-sentence imperative title: what to do or avoid
    #[arg(long)]
    title: String,
    /// When the lesson applies, in plain text (`trigger.description`)
    #[arg(long)]
    trigger: String,
    /// A retrieval keyword (repeatable)
    #[arg(long = "tag", value_name = "TAG")]
    tags: Vec<String>,
    /// Scope retrieval: operator=GLOB, role=GLOB or skill=GLOB (repeatable)
    #[arg(long = "target", value_name = "KEY=GLOB", value_parser = scaffold::parse_target)]
    targets: Vec<NewTarget>,
    /// Whether the run that taught the lesson succeeded, failed, or both
    #[arg(long, value_enum, default_value_t = OutcomeArg::Success)]
    outcome: OutcomeArg,
    /// Where the lesson comes from: KIND:REF[:NOTE], KIND one of run, conversation, work-item,
    /// audit, wiki-page (repeatable; at least one)
    #[arg(long = "evidence", value_name = "KIND:REF[:NOTE]", value_parser = scaffold::parse_evidence)]
    evidence: Vec<NewEvidence>,
    /// Confidence in [0, 1]
    #[arg(long, default_value_t = 0.5, value_parser = confidence)]
    confidence: f64,
    /// Print the lesson instead of writing it
    #[arg(long)]
    dry_run: bool,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum OutcomeArg {
    Success,
    Failure,
    Mixed,
}

impl From<OutcomeArg> for Outcome {
    fn from(o: OutcomeArg) -> Self {
        match o {
            OutcomeArg::Success => Outcome::Success,
            OutcomeArg::Failure => Outcome::Failure,
            OutcomeArg::Mixed => Outcome::Mixed,
        }
    }
}

fn confidence(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(c) if (0.0..=1.0).contains(&c) => Ok(c),
        _ => Err("expected a number from 0 to 1, such as 0.5".into()),
    }
}

/// Run `lesson new`.
pub fn run(root: &Path, args: NewArgs) -> anyhow::Result<ExitCode> {
    if args.evidence.is_empty() {
        anyhow::bail!(
            "a lesson cites where it comes from: add --evidence KIND:REF[:NOTE], e.g. --evidence run:r_2026-11-02_a41c"
        );
    }
    let new = NewLesson {
        slug: args.slug,
        title: args.title,
        trigger: args.trigger,
        tags: args.tags,
        targets: args.targets,
        outcome: args.outcome.into(),
        evidence: args.evidence,
        confidence: args.confidence,
    };
    if args.dry_run {
        let draft = scaffold::draft(super::load(root)?, &new)?;
        if refused(&draft) {
            return Ok(ExitCode::from(1));
        }
        print!("{}", draft.text);
        return Ok(ExitCode::SUCCESS);
    }
    let mut lock = super::lock(root)?;
    let written = lock.with(|| -> anyhow::Result<Option<String>> {
        let draft = scaffold::draft(super::load(root)?, &new)?;
        if refused(&draft) {
            return Ok(None);
        }
        // fail on a broken index template before anything is written
        index_md::render(&draft.bank)?;
        write_atomic(root, &draft.path, draft.text.as_bytes())?;
        created_event(root, &draft)?;
        let bank = Bank::load(root).with_context(|| {
            format!(
                "wrote {}, but cannot reload the bank to update _index.md",
                draft.path.display()
            )
        })?;
        let index = index_md::render(&bank)?;
        if !index_md::is_current(&bank, &index) {
            write_atomic(root, &bank.index_path(), index.as_bytes())?;
        }
        Ok(Some(draft.path.display().to_string()))
    })??;
    match written {
        Some(path) => {
            println!("{path}");
            Ok(ExitCode::SUCCESS)
        }
        None => Ok(ExitCode::from(1)),
    }
}

/// Start the new lesson's ledger with a `created` event holding its initial counts. The file
/// goes first: killed in between, the lesson simply has no ledger yet (its counts are initial).
fn created_event(root: &Path, draft: &Draft) -> anyhow::Result<()> {
    let Some(lesson) = draft
        .bank
        .documents
        .iter()
        .find(|d| d.source.path == draft.path)
        .and_then(|d| d.lesson.as_ref())
    else {
        return Ok(());
    };
    let stamp = super::stamp(root, None)?;
    let kind = EventKind::Created(lesson::curate::file_counts(lesson));
    let mut ledger = Ledger::read(root, &lesson.slug.value)?;
    ledger.append(root, &[stamp.event(kind)])?;
    Ok(())
}

/// Print the draft's findings to stderr; whether any of them blocks writing.
fn refused(draft: &Draft) -> bool {
    if !draft.findings.is_empty() {
        let text = report::render(
            Format::Full,
            &draft.findings,
            &draft.bank.sources().collect::<Sources>(),
            report::RenderOptions::default(),
        );
        eprint!("{text}");
    }
    if draft.refused() {
        let errors = draft
            .findings
            .iter()
            .filter(|d| d.severity == Severity::Error)
            .count();
        eprintln!(
            "error: refusing to write {}: {errors} error{} above; fix the flags and run again",
            draft.path.display(),
            if errors == 1 { "" } else { "s" }
        );
    }
    draft.refused()
}
