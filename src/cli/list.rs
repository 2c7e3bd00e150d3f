//! `lesson list`: the bank's lessons as a table or JSON.

use std::path::Path;
use std::process::ExitCode;

use clap::{Args, ValueEnum};
use lesson::bank::{Bank, Status};
use lesson::document::Document;
use lesson::index_md::{self, IndexEntry};
use lesson::lesson::{Lesson, Target};
use serde::Serialize;

/// Output formats of `list` and `show`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OutputFormat {
    /// For people
    Text,
    /// A stable JSON document
    Json,
}

/// Which lessons `list` shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum StatusFilter {
    Active,
    Superseded,
    Expired,
    All,
}

/// Flags of `lesson list`.
#[derive(Debug, Args)]
pub struct ListArgs {
    /// Show only lessons with this status
    #[arg(long, value_enum, default_value_t = StatusFilter::All)]
    status: StatusFilter,
    /// How to print
    #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
    format: OutputFormat,
}

/// A lesson as `list --format json` and `show --format json` print it: every frontmatter
/// field (defaults filled in), its file and its status.
#[derive(Debug, Serialize)]
pub struct LessonJson<'a> {
    slug: &'a str,
    title: &'a str,
    trigger: TriggerJson<'a>,
    outcome: &'static str,
    evidence: Vec<EvidenceJson<'a>>,
    confidence: f64,
    success_count: u64,
    failure_count: u64,
    supersedes: Vec<&'a str>,
    expires_at: Option<String>,
    path: String,
    status: &'static str,
    superseded_by: Vec<String>,
}

#[derive(Debug, Serialize)]
struct EvidenceJson<'a> {
    kind: &'static str,
    #[serde(rename = "ref")]
    reference: &'a str,
    note: Option<&'a str>,
}

#[derive(Debug, Serialize)]
struct TriggerJson<'a> {
    description: &'a str,
    tags: Vec<&'a str>,
    targets: &'a [Target],
}

impl<'a> LessonJson<'a> {
    /// The JSON view of one lesson.
    pub fn new(bank: &Bank, doc: &Document, lesson: &'a Lesson) -> Self {
        let status = bank.status(lesson);
        LessonJson {
            slug: &lesson.slug.value,
            title: &lesson.title.value,
            trigger: TriggerJson {
                description: &lesson.trigger.description.value,
                tags: lesson
                    .trigger
                    .tags
                    .iter()
                    .map(|t| t.value.as_str())
                    .collect(),
                targets: &lesson.trigger.targets,
            },
            outcome: lesson.outcome.value.as_str(),
            evidence: lesson
                .evidence
                .iter()
                .map(|e| EvidenceJson {
                    kind: e.kind.value.as_str(),
                    reference: &e.reference.value,
                    note: e.note.as_ref().map(|n| n.value.as_str()),
                })
                .collect(),
            confidence: lesson.confidence(),
            success_count: lesson.successes(),
            failure_count: lesson.failures(),
            supersedes: lesson.supersedes.iter().map(|s| s.value.as_str()).collect(),
            expires_at: lesson.expires_at.as_ref().map(|e| e.value.at.to_string()),
            path: doc.source.path.display().to_string(),
            status: status.label(),
            superseded_by: match status {
                Status::Superseded(by) => by,
                _ => Vec::new(),
            },
        }
    }
}

/// Run `lesson list`.
pub fn run(root: &Path, args: ListArgs) -> anyhow::Result<ExitCode> {
    let bank = super::load_lessons(root)?;
    let keep = |state: &str| match args.status {
        StatusFilter::All => true,
        StatusFilter::Active => state == "active",
        StatusFilter::Superseded => state == "superseded",
        StatusFilter::Expired => state == "expired",
    };
    match args.format {
        OutputFormat::Text => {
            let entries: Vec<IndexEntry> = index_md::entries(&bank)
                .into_iter()
                .filter(|e| keep(e.state))
                .collect();
            print!("{}", table(&entries));
        }
        OutputFormat::Json => {
            let mut lessons: Vec<(&Document, &Lesson)> = bank.lessons().collect();
            lessons.sort_by(|a, b| {
                (&a.1.slug.value, &a.0.source.path).cmp(&(&b.1.slug.value, &b.0.source.path))
            });
            let json: Vec<LessonJson> = lessons
                .into_iter()
                .map(|(doc, lesson)| LessonJson::new(&bank, doc, lesson))
                .filter(|j| keep(j.status))
                .collect();
            println!("{}", serde_json::to_string_pretty(&json)?);
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// An aligned table: slug, outcome, confidence, successes/failures, status, title.
fn table(entries: &[IndexEntry]) -> String {
    if entries.is_empty() {
        return String::new();
    }
    let rows: Vec<[String; 6]> = entries
        .iter()
        .map(|e| {
            [
                e.slug.clone(),
                e.outcome.clone(),
                e.confidence.clone(),
                format!("{}/{}", e.success_count, e.failure_count),
                e.status.clone(),
                e.title.split_whitespace().collect::<Vec<_>>().join(" "),
            ]
        })
        .collect();
    let header = ["SLUG", "OUTCOME", "CONF", "S/F", "STATUS", "TITLE"].map(String::from);
    let mut widths = [0usize; 5];
    for row in std::iter::once(&header).chain(&rows) {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    for row in std::iter::once(&header).chain(&rows) {
        let mut line = String::new();
        for (i, cell) in row.iter().enumerate() {
            if i < 5 {
                let pad = widths[i] - cell.chars().count();
                line.push_str(cell);
                line.push_str(&" ".repeat(pad + 2));
            } else {
                line.push_str(cell);
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}
