//! `lesson search REQUEST`: the lessons that apply to a request, as a prompt block, JSON or a
//! table.

use std::path::Path;
use std::process::ExitCode;

use anyhow::Context;
use clap::{Args, ValueEnum};
use lesson::retrieve::{self, render, Hit, Request, Retriever};
use serde::Serialize;

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

/// `--format json`.
#[derive(Debug, Serialize)]
struct Report<'a> {
    request: RequestJson<'a>,
    hits: Vec<Hit>,
    matched: usize,
    dropped_by_budget: usize,
    prompt_tokens: usize,
    lessons: u64,
    eligible: u64,
    /// Lessons never served because their own file has error-level findings.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    held_back: Vec<retrieve::HeldBack>,
}

#[derive(Debug, Serialize)]
struct RequestJson<'a> {
    text: &'a str,
    tags: &'a [String],
    inferred_tags: &'a [String],
    operator: Option<&'a str>,
    role: Option<&'a str>,
    skill: Option<&'a str>,
    k: usize,
    budget: usize,
    include_expired: bool,
    now: String,
}

/// Run `lesson search`.
pub fn run(root: &Path, args: SearchArgs) -> anyhow::Result<ExitCode> {
    // a live `lesson watch` vouching for the index spares the stat walk
    let mut retriever = Retriever::open_fast(root)
        .with_context(|| format!("cannot search the bank at {}", root.display()))?;
    let config = retriever.config().retrieve.clone();
    let request = Request {
        text: args.request.join(" "),
        tags: args.tags,
        operator: args.operator,
        role: args.role,
        skill: args.skill,
        k: Some(args.k.unwrap_or(config.k)),
        include_expired: args.include_expired,
        now: lesson::bank::now_from_env()?,
    };
    let budget = args.budget.unwrap_or(config.budget);
    let found = retriever.search(&request)?;
    let template = render::prompt_template(root)?;
    let prompt = render::prompt(&template, &found.hits, budget)?;
    let mut shown: Vec<Hit> = found.hits[..prompt.shown].to_vec();
    retrieve::mark_conflicts(&mut shown);
    if args.format != Format::Json && !found.held_back.is_empty() {
        let n = found.held_back.len();
        let lessons = if n == 1 { "lesson" } else { "lessons" };
        eprintln!("note: {n} {lessons} with errors were not served (lesson lint lists them)");
    }
    match args.format {
        Format::Prompt => print!("{}", prompt.text),
        Format::Text => {
            print!("{}", render::table(&shown));
            let mut tags: Vec<String> = found
                .given_tags
                .iter()
                .map(|t| format!("{t} (given)"))
                .collect();
            tags.extend(
                found
                    .inferred_tags
                    .iter()
                    .map(|t| format!("{t} (in the request)")),
            );
            if !tags.is_empty() {
                println!("request tags: {}", tags.join(", "));
            }
            let passed = format!(
                "{} of {} lessons pass the gates",
                found.eligible, found.lessons
            );
            if shown.is_empty() {
                let why = if found.eligible == 0 {
                    "status, targets and tags"
                } else {
                    "none is similar enough to the request"
                };
                println!("no lesson applies: {passed} ({why})");
            } else {
                let cut = found.hits.len() - shown.len();
                let cut = if cut > 0 {
                    format!(", {cut} more did not fit the budget")
                } else {
                    String::new()
                };
                println!(
                    "{} shown{cut}; {passed}; the prompt block takes {} of {budget} tokens",
                    shown.len(),
                    prompt.tokens
                );
            }
        }
        Format::Json => {
            let hits: Vec<Hit> = shown.into_iter().map(|h| for_json(root, h)).collect();
            let report = Report {
                request: RequestJson {
                    text: &request.text,
                    tags: &found.given_tags,
                    inferred_tags: &found.inferred_tags,
                    operator: request.operator.as_deref(),
                    role: request.role.as_deref(),
                    skill: request.skill.as_deref(),
                    k: request.k.unwrap_or(config.k),
                    budget,
                    include_expired: request.include_expired,
                    now: request.now.to_string(),
                },
                matched: found.hits.len(),
                dropped_by_budget: found.hits.len() - hits.len(),
                hits,
                prompt_tokens: prompt.tokens,
                lessons: found.lessons,
                eligible: found.eligible,
                held_back: found
                    .held_back
                    .iter()
                    .map(|h| retrieve::HeldBack {
                        path: root.join(&h.path).display().to_string(),
                        ..h.clone()
                    })
                    .collect(),
            };
            println!("{}", serde_json::to_string_pretty(&report)?);
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// A hit as JSON shows it: the path as the other commands show paths, scores to 6 decimals.
fn for_json(root: &Path, mut h: Hit) -> Hit {
    h.path = root.join(&h.path).display().to_string();
    let round = |v: f64| (v * 1e6).round() / 1e6;
    let s = &mut h.score;
    s.similarity = round(s.similarity);
    s.confidence = round(s.confidence);
    s.count_factor = round(s.count_factor);
    s.recency = round(s.recency);
    s.score = round(s.score);
    h
}
