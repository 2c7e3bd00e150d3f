//! `lesson search REQUEST`: the lessons that apply to a request, as a prompt block, JSON or a
//! table.

use std::path::Path;
use std::process::ExitCode;

use anyhow::Context;
use clap::{Args, ValueEnum};
use lesson::report::hits::{self, Printed, Shape};
use lesson::retrieve::{InferredTags, Request, Retriever};
use lesson::watch::serve;

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

/// What tags found among the request's words do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum InferredArg {
    /// They count as words of the request, no more
    Ignore,
    /// Raise the score of the lessons that carry one by [retrieve] tag-boost
    Boost,
    /// A tagged lesson must carry one (when no --tag is given)
    Gate,
}

/// Flags of `lesson search`.
#[derive(Debug, Args)]
pub struct SearchArgs {
    /// The request (several words are joined with spaces; `-` reads it from stdin). Without
    /// one, the best lessons that pass the gates, by confidence, counts and recency
    #[arg(value_name = "REQUEST")]
    request: Vec<String>,
    /// A tag of the request (repeatable); tagged lessons must share one of the tags given
    #[arg(long = "tag", value_name = "TAG")]
    tags: Vec<String>,
    /// What the bank's tags found among the request's words do (default: [retrieve]
    /// inferred-tags, ignore)
    #[arg(long, value_enum, value_name = "MODE")]
    inferred_tags: Option<InferredArg>,
    /// Say why the lesson SLUG is or is not in the answer: the gate or threshold that
    /// excludes it, else its rank and score parts
    #[arg(long, value_name = "SLUG")]
    explain: Option<String>,
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
    /// Log the lessons shown for run RUN: one line appended to the bank's `_log/_shown.jsonl`
    /// (retrieval accounting: `lesson show` and `list` count them; `lesson record --run RUN`
    /// links an outcome to it)
    #[arg(long, value_name = "RUN", conflicts_with = "explain")]
    log: Option<String>,
    /// Who logs the search, with --log (default: $LESSON_BY, else $USER@hostname)
    #[arg(long, value_name = "ID", requires = "log")]
    by: Option<String>,
}

/// Run `lesson search`.
pub fn run(root: &Path, args: SearchArgs) -> anyhow::Result<ExitCode> {
    let text = if args.request == ["-"] {
        std::io::read_to_string(std::io::stdin()).context("cannot read the request from stdin")?
    } else {
        args.request.join(" ")
    };
    let request = Request {
        text,
        tags: args.tags,
        operator: args.operator,
        role: args.role,
        skill: args.skill,
        k: args.k,
        budget: args.budget,
        include_expired: args.include_expired,
        inferred_tags: args.inferred_tags.map(|m| match m {
            InferredArg::Boost => InferredTags::Boost,
            InferredArg::Gate => InferredTags::Gate,
            InferredArg::Ignore => InferredTags::Ignore,
        }),
        now: super::now()?,
    };
    let shape = match args.format {
        Format::Prompt => Shape::Prompt,
        Format::Json => Shape::Json,
        Format::Text => Shape::Text,
    };
    if args.explain.is_none() && args.log.is_none() {
        // a live `lesson watch` answers from the index it holds open and warm
        if let Some(query) = serve::Query::new(&request, shape, root) {
            match serve::ask(root, &query) {
                Some(serve::Reply::Answered { pid, printed }) => {
                    verbose!("answered by the watcher (pid {pid})");
                    show(&printed);
                    return Ok(ExitCode::SUCCESS);
                }
                Some(serve::Reply::Declined(why)) => {
                    verbose!("the watcher did not answer: {why}; searching here");
                }
                None => {}
            }
        }
    }
    // a live `lesson watch` vouching for the index spares the stat walk
    let mut retriever = Retriever::open_fast(root)
        .with_context(|| format!("cannot search the bank at {}", root.display()))?;
    if let Some(slug) = &args.explain {
        let why = retriever.explain(&request, slug)?;
        match args.format {
            Format::Json => println!("{}", hits::explanation_json(slug, &why)?),
            Format::Prompt | Format::Text => print!("{}", hits::explanation_text(slug, &why)),
        }
        return Ok(ExitCode::SUCCESS);
    }
    if let Some(run) = &args.log {
        lesson::usage::check_run(run)?;
    }
    let answer = retriever.answer(&request)?;
    if let Some(run) = &args.log {
        let stamp = super::stamp(root, args.by)?;
        retriever
            .log_shown(&answer, run, &stamp.by)
            .context("cannot log the search")?;
    }
    show(&hits::print(&retriever, &answer, shape, root)?);
    // a search process ends here: the exit frees it all at once (dropping the index, its
    // maps and tables, cost a new process a twentieth of its time)
    std::mem::forget(answer);
    std::mem::forget(retriever);
    Ok(ExitCode::SUCCESS)
}

/// Print what a search printed: warnings and notes on stderr, the answer on stdout.
fn show(printed: &Printed) {
    for warning in &printed.warnings {
        eprintln!("warning: {warning}");
    }
    for n in &printed.notes {
        note!("note: {n}");
    }
    print!("{}", printed.stdout);
}
