//! `lesson review`: the lessons that need a human.

use std::path::Path;
use std::process::ExitCode;

use clap::Args;
use lesson::curate::review;
use lesson::curate::stack;
use lesson::report;

use super::list::OutputFormat;

/// Flags of `lesson review`.
#[derive(Debug, Args)]
pub struct ReviewArgs {
    /// How to print
    #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
    format: OutputFormat,
    /// Release the lesson SLUG from quarantine: its `metadata.lesson.quarantine` key is
    /// removed and its ledger gains an `approved` event naming who approved it
    #[arg(long, value_name = "SLUG")]
    approve: Option<String>,
    /// With --approve: who approves (default: $LESSON_BY, else $USER@hostname)
    #[arg(long, value_name = "ID", requires = "approve")]
    by: Option<String>,
}

/// Run `lesson review --approve SLUG`.
fn approve(root: &Path, slug: &str, by: Option<String>, json: bool) -> anyhow::Result<ExitCode> {
    let stamp = super::stamp(root, by)?;
    let (done, journal) =
        lesson::edit::journal::recording(|| lesson::curate::approve::approve(root, slug, &stamp));
    let done = done?;
    if json {
        let result = report::writes::approved(root, &done);
        super::print_write("review", false, root, &journal, result)?;
        return Ok(ExitCode::SUCCESS);
    }
    status!(
        "{}: approved by {} (was quarantined for {}); search serves it now",
        done.path.display(),
        stamp.by,
        done.rules.join(", ")
    );
    Ok(ExitCode::SUCCESS)
}

/// Run `lesson review`.
pub fn run(root: &Path, args: ReviewArgs) -> anyhow::Result<ExitCode> {
    if let Some(slug) = &args.approve {
        return approve(root, slug, args.by, args.format == OutputFormat::Json);
    }
    let bank = super::load(root)?;
    // near-duplicates by meaning too in the front bank, as `lesson dedup` finds them
    let embeddings = super::dedup_embeddings(root, &bank, "review");
    let stack = stack::load(bank, super::load)?;
    if stack::is_layered(&stack) {
        let mut banks = Vec::new();
        for (i, s) in stack.iter().enumerate() {
            let embeddings = embeddings.as_ref().filter(|_| i == 0);
            banks.push((s.name.as_str(), review::review_with(&s.bank, embeddings)?));
        }
        if args.format == OutputFormat::Json {
            let json = report::review::json_with_banks(&banks)?;
            println!("{}", serde_json::to_string_pretty(&json)?);
        } else {
            let all: Vec<review::Finding> = banks.into_iter().flat_map(|(_, f)| f).collect();
            print!("{}", report::review::text(&all));
        }
        return Ok(ExitCode::SUCCESS);
    }
    let findings = review::review_with(&stack[0].bank, embeddings.as_ref())?;
    if args.format == OutputFormat::Json {
        println!("{}", serde_json::to_string_pretty(&findings)?);
        return Ok(ExitCode::SUCCESS);
    }
    print!("{}", report::review::text(&findings));
    Ok(ExitCode::SUCCESS)
}
