//! `lesson dedup`: pairs of lessons that look like near-duplicates. Advisory: it always exits 0
//! when it could run, whatever it finds.

use std::path::Path;
use std::process::ExitCode;

use anyhow::Context;
use clap::Args;
use lesson::curate::stack;
use lesson::dedup;
use lesson::report::pairs;

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
    let embeddings = super::dedup_embeddings(root, &bank, "dedup");
    let stack = stack::load(bank, super::load_lessons)?;
    let mut found = dedup::pairs_with(&stack[0].bank, embeddings.as_ref())
        .context("cannot look for near-duplicates")?;
    if stack::is_layered(&stack) {
        // each bank's own pairs, then the pairs across banks, each naming its banks
        for s in &stack {
            let own = match s.name.as_str() {
                lesson::layers::FRONT => std::mem::take(&mut found),
                _ => dedup::pairs(&s.bank).context("cannot look for near-duplicates")?,
            };
            found.extend(own.into_iter().map(|p| dedup::Pair {
                a_bank: Some(s.name.clone()),
                b_bank: Some(s.name.clone()),
                ..p
            }));
        }
        let banks: Vec<(&str, &lesson::Bank)> =
            stack.iter().map(|s| (s.name.as_str(), &s.bank)).collect();
        found.extend(dedup::pairs_across(&banks).context("cannot look for near-duplicates")?);
    }
    if args.format == OutputFormat::Json {
        println!("{}", serde_json::to_string_pretty(&found)?);
    } else {
        print!("{}", pairs::text(&found));
    }
    super::release(stack);
    Ok(ExitCode::SUCCESS)
}
