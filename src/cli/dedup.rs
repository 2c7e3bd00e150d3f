//! `lesson dedup`: pairs of lessons that look like near-duplicates. Advisory: it always exits 0
//! when it could run, whatever it finds.

use std::path::Path;
use std::process::ExitCode;

use anyhow::Context;
use clap::Args;
use lesson::dedup::{self, Pair};

use super::list::OutputFormat;

/// Flags of `lesson dedup`.
#[derive(Debug, Args)]
pub struct DedupArgs {
    /// How to print: text (one line per pair, then a summary) or json (an array of pairs)
    #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
    format: OutputFormat,
}

/// Run `lesson dedup`.
pub fn run(root: &Path, args: DedupArgs) -> anyhow::Result<ExitCode> {
    let bank = super::load_lessons(root)?;
    let found = dedup::pairs(&bank).context("cannot look for near-duplicates")?;
    if args.format == OutputFormat::Json {
        println!("{}", serde_json::to_string_pretty(&found)?);
    } else {
        for pair in &found {
            println!("{}", line(pair));
        }
        match found.len() {
            0 => println!("no near-duplicates"),
            n => println!(
                "{n} near-duplicate pair{}: merge them (`lesson supersede OLD --by NEW`) or make their triggers distinct",
                if n == 1 { "" } else { "s" }
            ),
        }
    }
    super::release(bank);
    Ok(ExitCode::SUCCESS)
}

/// `a ~ b  score 0.91 (slug 0.80, text 0.95, tags: ci, rust)`.
pub fn line(pair: &Pair) -> String {
    let tags = if pair.shared_tags.is_empty() {
        String::new()
    } else {
        format!(", tags: {}", pair.shared_tags.join(", "))
    };
    format!(
        "{} ~ {}  score {:.2} (slug {:.2}, text {:.2}{tags})",
        pair.a, pair.b, pair.score, pair.slug_similarity, pair.text_similarity
    )
}
