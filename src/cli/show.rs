//! `lesson show SLUG`: one lesson's file, or its model as JSON.

use std::path::Path;
use std::process::ExitCode;

use clap::Args;

use lesson::curate::show::{self, Found};
use lesson::curate::stack;
use lesson::document::Document;
use lesson::git::provenance::Provenance;
use lesson::report::lessons::{self, LessonJson};
use lesson::usage::ShownLog;

use super::list::OutputFormat;

/// Flags of `lesson show`.
#[derive(Debug, Args)]
pub struct ShowArgs {
    /// The lesson's slug
    slug: String,
    /// How to print
    #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
    format: OutputFormat,
}

/// Run `lesson show`.
pub fn run(root: &Path, args: ShowArgs) -> anyhow::Result<ExitCode> {
    let bank = super::load_lessons(root)?;
    let json = args.format == OutputFormat::Json;
    let stack = stack::load(bank, super::load_lessons)?;
    let (layer, found) = show::find_in_stack(&stack, &args.slug)?;
    let bank = &layer.bank;
    let name = stack::is_layered(&stack).then_some(layer.name.as_str());
    let provenance = super::list::provenance(&bank.root);
    let p = provenance.as_ref();
    let print_lesson = |doc: &Document, status| print_lesson(bank, doc, json, status, p, name);
    match found {
        Found::Live(doc) => print_lesson(doc, None)?,
        Found::Archived(doc) => {
            note!(
                "note: `{}` is archived ({}): not in the live set, never retrieved",
                args.slug,
                doc.source.path.display()
            );
            print_lesson(&doc, Some("archived"))?;
        }
        // a file named like the slug that does not parse as a lesson: its text can be shown
        Found::NotALesson(doc) if !json && doc.read_problem.is_none() => {
            println!("{}", doc.source.path.display());
            print!("{}", doc.source.text);
        }
        Found::NotALesson(doc) => anyhow::bail!(
            "{} is not a valid lesson; `lesson lint {}` says why",
            doc.source.path.display(),
            doc.source.path.display()
        ),
    }
    Ok(ExitCode::SUCCESS)
}

/// A lesson's file (text), or its model and body as JSON (with `status` as the label, when
/// not the bank's).
fn print_lesson(
    bank: &lesson::Bank,
    doc: &Document,
    json: bool,
    status: Option<&'static str>,
    provenance: Option<&Provenance>,
    bank_name: Option<&str>,
) -> anyhow::Result<()> {
    let stamps =
        provenance.and_then(|p| p.get(&super::list::bank_relative(&bank.root, &doc.source.path)));
    let log = ShownLog::read(&bank.root)?;
    let usage = match &doc.lesson {
        Some(lesson) => log.usage_of(&bank.root, &lesson.slug.value)?,
        None => Default::default(),
    };
    match (&doc.lesson, json) {
        (Some(lesson), true) => {
            let mut view = LessonJson::new(doc, lesson, bank.status(lesson))
                .with_body(doc)
                .with_provenance(stamps)
                .with_usage(&usage);
            if let Some(label) = status {
                view = view.with_status(label);
            }
            if let Some(name) = bank_name {
                view = view.with_bank(name);
            }
            println!("{}", serde_json::to_string_pretty(&view)?);
        }
        (None, true) => anyhow::bail!(
            "{} is not a valid lesson; `lesson lint {}` says why",
            doc.source.path.display(),
            doc.source.path.display()
        ),
        (_, false) => {
            println!("{}", doc.source.path.display());
            if let Some(name) = bank_name.filter(|n| *n != lesson::layers::FRONT) {
                println!("bank: {name} (included, read-only)");
            }
            if let Some(s) = stamps {
                println!("{}", lessons::provenance_line(s));
            }
            if log.exists && doc.lesson.is_some() {
                println!("{}", lessons::usage_line(&usage));
            }
            print!("{}", doc.source.text);
        }
    }
    Ok(())
}
