//! Lessons for people and programs: the JSON view of one lesson (`lesson list --format json`,
//! `lesson show --format json`, and every other place that prints a lesson as JSON) and the
//! table of `lesson list`.

use serde::Serialize;

use crate::bank::Status;
use crate::document::{Body, Document};
use crate::git::provenance::{LessonStamps, Provenance, Stamp};
use crate::index_md::IndexEntry;
use crate::lesson::{Lesson, Target};
use crate::usage::Usage;

use std::collections::HashMap;

/// A lesson as `list --format json` and `show --format json` print it: every frontmatter
/// field (defaults filled in), its file and its status.
#[derive(Debug, Serialize)]
pub struct LessonJson<'a> {
    /// The bank it is in, when the bank in front includes others (`.` for the front bank).
    #[serde(skip_serializing_if = "Option::is_none")]
    bank: Option<String>,
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
    /// `active`, `superseded` or `expired`.
    pub status: &'static str,
    superseded_by: Vec<String>,
    /// Runs whose logged searches showed it (`lesson search --log`, [`crate::usage`]).
    shown: u64,
    /// When a logged search last showed it (RFC 3339, UTC).
    last_shown: Option<String>,
    /// Runs among those that followed it.
    followed: u64,
    /// Followed runs that succeeded.
    helped: u64,
    /// `helped / shown` (4 decimals), none while never shown.
    utility: Option<f64>,
    /// The commit that added the lesson (following renames and archive moves), when the bank
    /// is in git and the lesson is committed.
    #[serde(skip_serializing_if = "Option::is_none")]
    created: Option<StampJson<'a>>,
    /// The newest commit that changed, renamed or moved it.
    #[serde(skip_serializing_if = "Option::is_none")]
    changed: Option<StampJson<'a>>,
    /// The body's title and sections (`lesson show` only).
    #[serde(skip_serializing_if = "Option::is_none")]
    body: Option<BodyJson<'a>>,
}

/// A lesson's body: its `#` title and its `##` sections, each with its text (trimmed).
#[derive(Debug, Serialize)]
struct BodyJson<'a> {
    title: Option<String>,
    sections: Vec<SectionJson<'a>>,
}

#[derive(Debug, Serialize)]
struct SectionJson<'a> {
    heading: String,
    text: &'a str,
}

/// A commit of a lesson's provenance.
#[derive(Debug, Serialize)]
pub struct StampJson<'a> {
    pub(super) commit: &'a str,
    author: &'a str,
    email: &'a str,
    /// RFC 3339, UTC.
    pub(super) date: String,
}

impl<'a> StampJson<'a> {
    /// The author's name.
    pub fn author_name(&self) -> &str {
        self.author
    }

    /// The JSON view of a provenance stamp.
    pub fn new(stamp: &'a Stamp) -> Self {
        StampJson {
            commit: &stamp.commit,
            author: &stamp.author,
            email: &stamp.email,
            date: stamp.time.to_string(),
        }
    }
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

/// The bank's lessons as JSON views, sorted by slug (then path), files with errors of their own
/// left out (as `_index.md` leaves them out), each with its provenance when the bank's is given
/// and its retrieval figures (`usage`, by slug: [`crate::usage::ShownLog::figures`]; a lesson
/// missing from it was never shown); `keep` selects by status (`active`, `superseded`,
/// `expired`). `lesson list --format json` and the MCP `list` tool print this.
pub fn json_list<'a>(
    bank: &'a crate::Bank,
    provenance: Option<&'a Provenance>,
    usage: &HashMap<String, Usage>,
    keep: impl Fn(&str) -> bool,
) -> Vec<LessonJson<'a>> {
    let mut lessons: Vec<(&Document, &Lesson)> = bank
        .lessons()
        .filter(|(doc, _)| !doc.has_file_errors())
        .collect();
    lessons.sort_by(|a, b| {
        (&a.1.slug.value, &a.0.source.path).cmp(&(&b.1.slug.value, &b.0.source.path))
    });
    lessons
        .into_iter()
        .map(|(doc, lesson)| {
            let stamps = provenance
                .and_then(|p| p.get(&crate::layout::bank_relative(&bank.root, &doc.source.path)));
            let figures = usage
                .get(lesson.slug.value.as_str())
                .copied()
                .unwrap_or_default();
            LessonJson::new(doc, lesson, bank.status(lesson))
                .with_provenance(stamps)
                .with_usage(&figures)
        })
        .filter(|j| keep(j.status))
        .collect()
}

impl<'a> LessonJson<'a> {
    /// The JSON view of one lesson, whose status the bank derived ([`crate::Bank::status`]).
    pub fn new(doc: &Document, lesson: &'a Lesson, status: Status) -> Self {
        LessonJson {
            bank: None,
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
            shown: 0,
            last_shown: None,
            followed: 0,
            helped: 0,
            utility: None,
            created: None,
            changed: None,
            body: None,
        }
    }

    /// With the lesson's retrieval figures.
    pub fn with_usage(mut self, u: &Usage) -> Self {
        self.shown = u.shown;
        self.last_shown = u.last_shown.map(|t| t.to_string());
        self.followed = u.followed;
        self.helped = u.helped;
        self.utility = u.utility().map(|x| (x * 1e4).round() / 1e4);
        self
    }

    /// The lesson's slug.
    pub fn slug(&self) -> &str {
        self.slug
    }

    /// With the lesson's provenance (`None`: not in git, or not committed yet).
    pub fn with_provenance(mut self, stamps: Option<LessonStamps<'a>>) -> Self {
        if let Some(s) = stamps {
            self.created = Some(StampJson::new(s.created));
            self.changed = Some(StampJson::new(s.changed));
        }
        self
    }

    /// With the body's title and sections, read from the document's text (which must be
    /// `lesson`'s file, loaded with its text).
    pub fn with_body(mut self, doc: &'a Document) -> Self {
        let text = doc.source.text.as_str();
        let parsed;
        let body = match (&doc.body, doc.fences()) {
            (Some(body), _) => body.as_ref(),
            (None, Some(fences)) => {
                parsed = Body::parse(text, fences.body_start);
                &parsed
            }
            (None, None) => return self,
        };
        self.body = Some(BodyJson {
            title: body.h1().map(|h| h.text.clone()),
            sections: body
                .sections
                .iter()
                .map(|s| SectionJson {
                    heading: s.heading.text.clone(),
                    text: text[s.content.clone()].trim(),
                })
                .collect(),
        });
        self
    }

    /// Name the bank the lesson is in (a layered stack, [`crate::layers`]).
    pub fn with_bank(mut self, name: &str) -> Self {
        self.bank = Some(name.to_string());
        self
    }

    /// With another status label than the bank's (`archived`, for a lesson in `_archive/`).
    pub fn with_status(mut self, label: &'static str) -> Self {
        self.status = label;
        self
    }
}

/// `lesson list`: an aligned table: slug, outcome, confidence, successes/failures, status, title.
pub fn table(entries: &[IndexEntry]) -> String {
    table_with(entries, None)
}

/// A commit in one short line: `2024-03-01 4f2a9c1 Ann`.
pub fn stamp_line(stamp: &Stamp) -> String {
    format!(
        "{} {} {}",
        stamp.time.strftime("%Y-%m-%d"),
        &stamp.commit[..stamp.commit.len().min(7)],
        stamp.author
    )
}

/// `lesson show`'s line under the path: `created 2024-01-01 1a2b3c4 Ann, changed ...`.
pub fn provenance_line(stamps: LessonStamps<'_>) -> String {
    if stamps.created == stamps.changed {
        format!("created {}, unchanged since", stamp_line(stamps.created))
    } else {
        format!(
            "created {}, changed {}",
            stamp_line(stamps.created),
            stamp_line(stamps.changed)
        )
    }
}

/// [`table`], with a `CHANGED` column (the date of the newest commit that changed each lesson)
/// when the bank is in git; `-` for a lesson not committed yet.
pub fn table_with(entries: &[IndexEntry], provenance: Option<&Provenance>) -> String {
    table_with_usage(entries, provenance, None)
}

/// [`table_with`], with `SHOWN`, `FOLLOWED` and `UTILITY` columns (the retrieval figures,
/// [`crate::usage`]; `-` for the utility of a lesson never shown) when `usage` is given (the
/// figures by slug; a lesson missing from it was never shown).
pub fn table_with_usage(
    entries: &[IndexEntry],
    provenance: Option<&Provenance>,
    usage: Option<&HashMap<String, Usage>>,
) -> String {
    if entries.is_empty() {
        return String::new();
    }
    let mut header: Vec<String> = ["SLUG", "OUTCOME", "CONF", "S/F", "STATUS"]
        .map(String::from)
        .to_vec();
    if provenance.is_some() {
        header.push("CHANGED".into());
    }
    if usage.is_some() {
        header.extend(["SHOWN", "FOLLOWED", "UTILITY"].map(String::from));
    }
    header.push("TITLE".into());
    let rows: Vec<Vec<String>> = entries
        .iter()
        .map(|e| {
            let mut row = vec![
                e.slug.clone(),
                e.outcome.clone(),
                e.confidence.clone(),
                format!("{}/{}", e.success_count, e.failure_count),
                e.status.clone(),
            ];
            if let Some(p) = provenance {
                row.push(p.get(&e.path).map_or_else(
                    || "-".to_string(),
                    |s| s.changed.time.strftime("%Y-%m-%d").to_string(),
                ));
            }
            if let Some(figures) = usage {
                let u = figures.get(&e.slug).copied().unwrap_or_default();
                row.push(u.shown.to_string());
                row.push(u.followed.to_string());
                row.push(
                    u.utility()
                        .map_or_else(|| "-".into(), |x| format!("{x:.2}")),
                );
            }
            row.push(e.title.split_whitespace().collect::<Vec<_>>().join(" "));
            row
        })
        .collect();
    super::aligned(&header, &rows)
}

/// `lesson show`'s line of retrieval figures: `shown to 3 runs (last 2026-11-26), followed
/// in 2, helped 1, utility 0.33`.
pub fn usage_line(u: &Usage) -> String {
    let last = u
        .last_shown
        .map(|t| format!(" (last {})", t.strftime("%Y-%m-%d")))
        .unwrap_or_default();
    let utility = u
        .utility()
        .map_or_else(|| "-".to_string(), |x| format!("{x:.2}"));
    format!(
        "shown to {} run{}{last}, followed in {}, helped {}, utility {utility}",
        u.shown,
        if u.shown == 1 { "" } else { "s" },
        u.followed,
        u.helped
    )
}

/// `lesson list` of a layered stack: [`table`] with a `BANK` column after the slug (`.` for
/// the bank in front), the banks' rows in the stack's order.
pub fn table_with_banks(rows: &[(&str, IndexEntry)]) -> String {
    if rows.is_empty() {
        return String::new();
    }
    let rows: Vec<[String; 7]> = rows
        .iter()
        .map(|(bank, e)| {
            [
                e.slug.clone(),
                bank.to_string(),
                e.outcome.clone(),
                e.confidence.clone(),
                format!("{}/{}", e.success_count, e.failure_count),
                e.status.clone(),
                e.title.split_whitespace().collect::<Vec<_>>().join(" "),
            ]
        })
        .collect();
    let header = ["SLUG", "BANK", "OUTCOME", "CONF", "S/F", "STATUS", "TITLE"].map(String::from);
    super::aligned(&header, &rows)
}
