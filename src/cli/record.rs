//! `lesson record SLUG --followed|--contradicted --run-outcome … --evidence …`: an observed
//! outcome, appended to the ledger and cached in the lesson.

use std::path::Path;
use std::process::ExitCode;

use clap::{ArgGroup, Args, ValueEnum};
use lesson::curate::new::{parse_evidence, NewEvidence};
use lesson::curate::record::{self, Request};
use lesson::ledger::{Applied, RunOutcome};
use lesson::lesson::EvidenceKind;

/// Flags of `lesson record`.
#[derive(Debug, Args)]
#[command(group(ArgGroup::new("applied").required(true).args(["followed", "contradicted"])))]
pub struct RecordArgs {
    /// The lesson's slug
    slug: String,
    /// The run did what the lesson says
    #[arg(long)]
    followed: bool,
    /// The run did the opposite of what the lesson says
    #[arg(long)]
    contradicted: bool,
    /// How the run ended
    #[arg(long, value_enum, value_name = "OUTCOME")]
    run_outcome: RunArg,
    /// The run (or other record) the outcome was observed in: KIND:REF[:NOTE], KIND one of run,
    /// conversation, work-item, audit, wiki-page (default with --run: run:RUN)
    #[arg(long, value_name = "KIND:REF[:NOTE]", value_parser = parse_evidence, required_unless_present = "run")]
    evidence: Option<NewEvidence>,
    /// The run whose logged search (`lesson search --log RUN`) showed the lesson: the outcome
    /// counts for its retrieval figures (followed, helped)
    #[arg(long, value_name = "RUN")]
    run: Option<String>,
    /// Who records it (default: $LESSON_BY, else $USER@hostname)
    #[arg(long, value_name = "ID")]
    by: Option<String>,
    /// With --contradicted: the lesson whose advice the run followed instead (repeatable); a
    /// `conflict` event naming it goes to the ledger, and search marks the two as conflicting
    #[arg(long, value_name = "OTHER")]
    conflicts_with: Vec<String>,
    /// Output format: text, or JSON (what changed: files, ledger events, counts)
    #[arg(long, value_enum, default_value_t = super::WriteFormat::Text)]
    format: super::WriteFormat,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum RunArg {
    Success,
    Failure,
}

/// Run `lesson record`.
pub fn run(root: &Path, args: RecordArgs) -> anyhow::Result<ExitCode> {
    let applied = if args.followed {
        Applied::Followed
    } else {
        Applied::Contradicted
    };
    let run = match args.run_outcome {
        RunArg::Success => RunOutcome::Success,
        RunArg::Failure => RunOutcome::Failure,
    };
    let stamp = super::stamp(root, args.by)?;
    let evidence = match (args.evidence, &args.run) {
        (Some(evidence), _) => evidence,
        (None, Some(id)) => NewEvidence {
            kind: EvidenceKind::Run,
            reference: id.clone(),
            note: None,
        },
        (None, None) => anyhow::bail!("give --evidence KIND:REF, or --run RUN"),
    };
    let req = Request {
        slug: args.slug,
        applied,
        run,
        evidence,
        retrieval: args.run,
    };
    let (done, journal) = lesson::edit::journal::recording(|| {
        record::record_with(root, &req, &args.conflicts_with, &stamp)
    });
    let done = done?;
    for p in &done.ledger_problems {
        eprintln!(
            "warning: {}:{}: not a whole ledger event, ignored ({}); `lesson lint` reports it as L002",
            lesson::ledger::path(root, &req.slug).display(),
            p.line,
            p.message
        );
    }
    let expected_before = if done.appended {
        lesson::ledger::Counts {
            success_count: done.after.success_count - done.delta.success,
            failure_count: done.after.failure_count - done.delta.failure,
        }
    } else {
        done.after
    };
    if done.before != expected_before {
        eprintln!(
            "warning: {} had counts {} but its ledger says {}; reset from the ledger",
            done.path.display(),
            done.before,
            expected_before
        );
    }
    if args.format == super::WriteFormat::Json {
        let result = lesson::report::writes::recorded(root, &req.slug, &done);
        super::print_write("record", false, root, &journal, result)?;
        return Ok(ExitCode::SUCCESS);
    }
    let what = format!("{}, run {}", applied.as_str(), run.as_str());
    if done.appended && done.delta == lesson::ledger::Delta::default() {
        status!(
            "{}: {what}: evidence added; counts stay {} (success/failure)",
            done.path.display(),
            done.after
        );
    } else if done.appended {
        status!(
            "{}: {what}: counts {} -> {} (success/failure)",
            done.path.display(),
            expected_before,
            done.after
        );
    } else {
        status!(
            "{}: {}:{} is already recorded ({what}); counts {}",
            done.path.display(),
            req.evidence.kind.as_str(),
            req.evidence.reference,
            done.after
        );
    }
    Ok(ExitCode::SUCCESS)
}
