//! `lesson search REQUEST`: the lessons that apply to a request, as a prompt block, JSON or a
//! table.

use std::path::Path;
use std::process::ExitCode;

use anyhow::Context;
use clap::{Args, ValueEnum};
use lesson::report::hits;
use lesson::retrieve::{Request, Retriever};

/// Output formats of `search`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Format {
    /// The block to put in an agent's prompt (templates/prompt.md.j2)
    Prompt,
    /// Every hit with its score parts and the gates it passed
    Json,
    /// A table for people
    Text,
}

/// Flags of `lesson search`.
#[derive(Debug, Args)]
pub struct SearchArgs {
    /// The request (several words are joined with spaces)
    #[arg(value_name = "REQUEST")]
    request: Vec<String>,
    /// A tag of the request (repeatable); tagged lessons must share one
    #[arg(long = "tag", value_name = "TAG")]
    tags: Vec<String>,
    /// The caller's operator, matched against lessons' target globs
    #[arg(long)]
    operator: Option<String>,
    /// The caller's role
    #[arg(long)]
    role: Option<String>,
    /// The caller's skill
    #[arg(long)]
    skill: Option<String>,
    /// Lessons at most (default: [retrieve] k, 5)
    #[arg(short = 'k', value_name = "N")]
    k: Option<usize>,
    /// Token budget of the prompt block (default: [retrieve] budget, 400); the cut falls
    /// between whole lessons, in every format
    #[arg(long, value_name = "TOKENS")]
    budget: Option<usize>,
    /// How to print
    #[arg(long, value_enum, default_value_t = Format::Prompt)]
    format: Format,
    /// Expired lessons are candidates too (archival reads)
    #[arg(long)]
    include_expired: bool,
}

/// Run `lesson search`.
pub fn run(root: &Path, args: SearchArgs) -> anyhow::Result<ExitCode> {
    // a live `lesson watch` vouching for the index spares the stat walk
    let mut retriever = Retriever::open_fast(root)
        .with_context(|| format!("cannot search the bank at {}", root.display()))?;
    let request = Request {
        text: args.request.join(" "),
        tags: args.tags,
        operator: args.operator,
        role: args.role,
        skill: args.skill,
        k: args.k,
        budget: args.budget,
        include_expired: args.include_expired,
        now: super::now()?,
    };
    let answer = retriever.answer(&request)?;
    if args.format != Format::Json && !answer.held_back.is_empty() {
        let n = answer.held_back.len();
        let lessons = if n == 1 { "lesson" } else { "lessons" };
        note!("note: {n} {lessons} with errors were not served (lesson lint lists them)");
    }
    match args.format {
        Format::Prompt => {
            print!("{}", answer.prompt.text);
            if answer.hits.is_empty() && answer.matched > 0 {
                note!("note: {}", hits::over_budget(&answer));
            }
        }
        Format::Text => print!("{}", hits::text(&answer)),
        Format::Json => println!("{}", hits::json(&answer, root)?),
    }
    Ok(ExitCode::SUCCESS)
}
