//! `lesson show SLUG`: one lesson's file, or its model as JSON.

use std::path::Path;
use std::process::ExitCode;

use clap::Args;

use lesson::report::lessons::LessonJson;

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
    let by_slug = bank.by_slug();
    let Some(&(doc, lesson)) = by_slug.get(args.slug.as_str()) else {
        // a file named like the slug that does not parse as a lesson
        if let Some(doc) = bank.documents.iter().find(|d| d.stem() == Some(&args.slug)) {
            if args.format == OutputFormat::Text && doc.read_problem.is_none() {
                println!("{}", doc.source.path.display());
                print!("{}", doc.source.text);
                return Ok(ExitCode::SUCCESS);
            }
            anyhow::bail!(
                "{} is not a valid lesson; `lesson lint {}` says why",
                doc.source.path.display(),
                doc.source.path.display()
            );
        }
        let suggestion = by_slug
            .keys()
            .map(|s| (strsim::jaro_winkler(&args.slug, s), *s))
            .filter(|(score, _)| *score >= 0.8)
            .max_by(|a, b| a.0.total_cmp(&b.0))
            .map(|(_, s)| format!(" (did you mean `{s}`?)"))
            .unwrap_or_default();
        anyhow::bail!(
            "no lesson `{}`{suggestion}; `lesson list` shows them",
            args.slug.escape_debug()
        );
    };
    match args.format {
        OutputFormat::Text => {
            println!("{}", doc.source.path.display());
            print!("{}", doc.source.text);
        }
        OutputFormat::Json => {
            let json = LessonJson::new(doc, lesson, bank.status(lesson));
            println!("{}", serde_json::to_string_pretty(&json)?);
        }
    }
    Ok(ExitCode::SUCCESS)
}
