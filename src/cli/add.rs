//! `lesson add FILE|-`: admit candidate lessons (a LESSON.md, or JSON candidates), all or
//! nothing.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use clap::Args;
use lesson::curate::add::{self, AddError, Admitted, Intake, Rejection, Why};
use lesson::report::{self, Format, Sources};
use serde_json::{Map, Value};

/// Flags of `lesson add`.
#[derive(Debug, Args)]
pub struct AddArgs {
    /// A LESSON.md, or JSON: one candidate object or an array of them (the frontmatter's fields
    /// plus `body`); `-` reads standard input
    file: PathBuf,
    /// Where the candidates come from, kept in each new lesson's `metadata.lesson.origin.source`
    /// (default: FILE as given, `stdin` for `-`)
    #[arg(long, value_name = "LABEL")]
    origin: Option<String>,
    /// Who records the ledger events (default: $LESSON_BY, else $USER@hostname)
    #[arg(long, value_name = "ID")]
    by: Option<String>,
    /// Say what would happen; write nothing
    #[arg(long)]
    dry_run: bool,
    /// Output format: text, or JSON (what changed: files, ledger events, counts)
    #[arg(long, value_enum, default_value_t = super::WriteFormat::Text)]
    format: super::WriteFormat,
}

/// Run `lesson add`.
pub fn run(root: &Path, args: AddArgs) -> anyhow::Result<ExitCode> {
    let label = args.file.display().to_string();
    let bytes = if label == "-" {
        let mut buf = Vec::new();
        std::io::stdin()
            .read_to_end(&mut buf)
            .context("cannot read the candidates from standard input")?;
        buf
    } else {
        std::fs::read(&args.file).with_context(|| format!("cannot read {label}"))?
    };
    let candidates = add::read_candidates(&label, bytes)?;
    let source = args.origin.unwrap_or_else(|| {
        if label == "-" {
            "stdin".into()
        } else {
            label.clone()
        }
    });
    let mut origin = Map::new();
    origin.insert("source".into(), Value::from(source));
    let intake = Intake {
        origin,
        ..Intake::default()
    };
    let stamp = super::stamp(root, args.by)?;
    let json = args.format == super::WriteFormat::Json;
    let (added, journal) = lesson::edit::journal::recording(|| {
        add::add(root, &candidates, &intake, &stamp, args.dry_run)
    });
    let added = match added {
        Ok(added) => added,
        Err(e) => return refused(e, json),
    };
    if let Some(problem) = &added.semantic_problem {
        eprintln!("warning: [retrieve] model: {problem}; candidates were compared by words alone");
    }
    if json {
        let result = lesson::report::writes::added(root, &added);
        super::print_write("add", args.dry_run, root, &journal, result)?;
        return Ok(ExitCode::SUCCESS);
    }
    print_rejection(&added.warnings);
    let verb = if args.dry_run { "would be " } else { "" };
    for a in &added.admitted {
        status!("{}", admitted_line(a, verb));
    }
    if args.dry_run {
        status!("dry run: nothing was written");
    } else if !added.changed {
        status!("nothing changed");
    }
    Ok(ExitCode::SUCCESS)
}

/// A gate's refusal: AIP-11's envelope (with `json`) or the findings, exit 1; any other
/// error is the command's (exit 2).
pub fn refused(e: AddError, json: bool) -> anyhow::Result<ExitCode> {
    match e {
        e @ AddError::Rejected(_) if json => {
            super::print_json(&lesson::report::envelope::Envelope::of_add(&e).to_value())?;
            eprintln!("error: {e}");
            Ok(ExitCode::from(1))
        }
        AddError::Rejected(rejection) => {
            print_rejection(&rejection);
            eprintln!("error: {rejection}");
            Ok(ExitCode::from(1))
        }
        e @ AddError::PartlyWritten(_) => Err(e.into()),
        e => Err(anyhow::Error::new(e).context("nothing was written")),
    }
}

/// One line about one candidate.
pub fn admitted_line(a: &Admitted, verb: &str) -> String {
    match a {
        Admitted::Created {
            label,
            path,
            counts,
            conflicts_with,
            quarantine,
            ..
        } => {
            let mut conflicts = if conflicts_with.is_empty() {
                String::new()
            } else {
                format!("; conflicts with {}", conflicts_with.join(", "))
            };
            if let Some(rules) = quarantine {
                conflicts.push_str(&format!(
                    "; quarantined: {} (not served until `lesson review --approve`)",
                    rules.join(", ")
                ));
            }
            format!(
                "{label}: {verb}created {} (counts {counts}{conflicts})",
                path.display()
            )
        }
        Admitted::Merged {
            label,
            candidate,
            path,
            added,
            why,
            ..
        } => {
            let why = match why {
                Why::SameSlug => "same slug".to_string(),
                Why::Recorded => "merged into it before".to_string(),
                Why::Similar(p) => {
                    let tags = if p.shared_tags.is_empty() {
                        String::new()
                    } else {
                        format!(", shared tags {}", p.shared_tags.join(", "))
                    };
                    format!(
                        "near-duplicate: score {}, text {}, slug {}{tags}",
                        p.score, p.text_similarity, p.slug_similarity
                    )
                }
            };
            if added.is_empty() {
                format!(
                    "{label}: `{candidate}` is already in {} ({why}); it holds every evidence item, nothing to add",
                    path.display()
                )
            } else {
                let refs: Vec<String> = added
                    .iter()
                    .map(|e| format!("{}:{}", e.kind, e.reference))
                    .collect();
                format!(
                    "{label}: `{candidate}` {verb}merged into {} ({why}); evidence appended: {}",
                    path.display(),
                    refs.join(", ")
                )
            }
        }
    }
}

/// Print findings (full format) and problems to stderr.
pub fn print_rejection(rejection: &Rejection) {
    if !rejection.diagnostics.is_empty() {
        let sources: Sources = rejection.sources.iter().collect();
        let text = report::render(
            Format::Full,
            &rejection.diagnostics,
            &sources,
            report::RenderOptions {
                color: super::ui::ui().color_stderr(),
            },
        );
        eprint!("{text}");
    }
    for p in &rejection.problems {
        eprintln!("error: {}: {}", p.label, p.message);
    }
}
