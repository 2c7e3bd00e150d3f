//! `lesson new <slug> ...`: scaffold a lesson from the bank's template, check it, write it
//! (the work is [`lesson::curate::new`]'s).

use std::path::Path;
use std::process::ExitCode;

use clap::{Args, ValueEnum};
use lesson::curate::new::{self, Created, Draft, NewEvidence, NewLesson, NewTarget};
use lesson::diagnostic::Severity;
use lesson::lesson::Outcome;
use lesson::report::{self, Format, Sources};

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
    #[arg(long = "target", value_name = "KEY=GLOB", value_parser = new::parse_target)]
    targets: Vec<NewTarget>,
    /// Whether the run that taught the lesson succeeded, failed, or both
    #[arg(long, value_enum, default_value_t = OutcomeArg::Success)]
    outcome: OutcomeArg,
    /// Where the lesson comes from: KIND:REF[:NOTE], KIND one of run, conversation, work-item,
    /// audit, wiki-page (repeatable; at least one)
    #[arg(long = "evidence", value_name = "KIND:REF[:NOTE]", value_parser = new::parse_evidence)]
    evidence: Vec<NewEvidence>,
    /// Confidence in [0, 1]
    #[arg(long, default_value_t = 0.5, value_parser = confidence)]
    confidence: f64,
    /// Print the lesson instead of writing it
    #[arg(long)]
    dry_run: bool,
    /// Output format: text, or JSON (what changed: files, ledger events, counts)
    #[arg(long, value_enum, default_value_t = super::WriteFormat::Text)]
    format: super::WriteFormat,
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
    let json = args.format == super::WriteFormat::Json;
    let slug = args.slug.clone();
    let lesson = NewLesson {
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
        let draft = new::preview(root, &lesson, super::now()?)?;
        if json {
            return report(root, &slug, &draft, true, &[]);
        }
        if refused(&draft) {
            return Ok(ExitCode::from(1));
        }
        print!("{}", draft.text);
        return Ok(ExitCode::SUCCESS);
    }
    let stamp = super::stamp(root, None)?;
    let (created, journal) =
        lesson::edit::journal::recording(|| new::create(root, &lesson, &stamp));
    match created? {
        Created::Written(draft) | Created::Refused(draft) if json => {
            report(root, &slug, &draft, false, &journal)
        }
        Created::Written(draft) => {
            refused(&draft);
            status!("{}", draft.path.display());
            Ok(ExitCode::SUCCESS)
        }
        Created::Refused(draft) => {
            refused(&draft);
            Ok(ExitCode::from(1))
        }
    }
}

/// `--format json`: the report of what was written (nothing for a dry run or a refused
/// draft, whose findings are in it); exit 1 when refused.
fn report(
    root: &Path,
    slug: &str,
    draft: &Draft,
    dry_run: bool,
    journal: &[lesson::edit::journal::Change],
) -> anyhow::Result<ExitCode> {
    let result = lesson::report::writes::created(root, slug, draft, dry_run);
    super::print_write("new", dry_run, root, journal, result)?;
    if draft.refused() {
        eprintln!(
            "error: refusing to write {}: error-level findings (`result.findings`)",
            draft.path.display()
        );
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}

/// Print the draft's findings (and the lesson it nearly duplicates) to stderr; whether any of
/// them blocks writing.
fn refused(draft: &Draft) -> bool {
    if let Some(pair) = &draft.near {
        eprintln!(
            "warning: `{}` looks like a near-duplicate of `{}` (score {:.2}: slug {:.2}, text \
             {:.2}); `lesson add` would merge it there: make the trigger distinct, or `lesson \
             supersede {} --by {}` if it replaces it",
            pair.b, pair.a, pair.score, pair.slug_similarity, pair.text_similarity, pair.a, pair.b
        );
    }
    if !draft.findings.is_empty() {
        let text = report::render(
            Format::Full,
            &draft.findings,
            &draft.bank.sources().collect::<Sources>(),
            report::RenderOptions {
                color: super::ui::ui().color_stderr(),
            },
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
