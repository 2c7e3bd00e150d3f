//! Lessons for people and programs: the JSON view of one lesson (`lesson list --format json`,
//! `lesson show --format json`, and every other place that prints a lesson as JSON) and the
//! table of `lesson list`.

use serde::Serialize;

use crate::bank::Status;
use crate::document::{Body, Document};
use crate::git::provenance::{LessonStamps, Stamp};
use crate::index_md::status_text;
use crate::index_md::IndexEntry;
use crate::lesson::{Lesson, Target};
use crate::listing::Listed;
use crate::usage::Usage;

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
    /// When the lesson was added (RFC 3339, UTC): from git when it is committed, else from its
    /// ledger (`lesson list` only; absent when it has neither).
    #[serde(skip_serializing_if = "Option::is_none")]
    created_at: Option<String>,
    /// When it last changed, from the same source.
    #[serde(skip_serializing_if = "Option::is_none")]
    updated_at: Option<String>,
    /// `git` or `ledger`: where `created_at` and `updated_at` come from.
    #[serde(skip_serializing_if = "Option::is_none")]
    dates_from: Option<&'static str>,
    /// Who recorded the first event of its ledger (`lesson list` only).
    #[serde(skip_serializing_if = "Option::is_none")]
    added_by: Option<&'a str>,
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

/// The rows of a listing ([`crate::listing::list`]) as JSON views, in their order, each with its
/// provenance, dates and author when the listing read them. `lesson list --format json` and the
/// MCP `list` tool print this.
pub fn json_list<'a>(rows: &'a [Listed<'a>]) -> Vec<LessonJson<'a>> {
    rows.iter()
        .map(|row| {
            let mut json = LessonJson::new(row.doc, row.lesson, row.status.clone())
                .with_provenance(row.stamps);
            if let Some(d) = &row.dates {
                json.created_at = Some(d.created.to_string());
                json.updated_at = Some(d.updated.to_string());
                json.dates_from = Some(d.from.as_str());
            }
            json.added_by = row.added_by.as_deref();
            json.with_usage(&row.usage)
        })
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
            created_at: None,
            updated_at: None,
            dates_from: None,
            added_by: None,
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

/// `lesson list`'s table of a listing's rows, in their order: slug, outcome, confidence,
/// successes/failures, status, then `CREATED` and `UPDATED` when the listing read dates (else
/// `CHANGED`, the newest commit's date, when the bank is in git), `TAGS` (the query's tags each
/// lesson has) when `tags` is set, `SHOWN`, `FOLLOWED` and `UTILITY` (the retrieval figures,
/// [`crate::usage`]) when `usage` is set, and the title. `-` stands for a date a lesson does not
/// have, and for the utility of a lesson never shown.
pub fn listing_table(
    rows: &[Listed<'_>],
    dates: bool,
    in_git: bool,
    tags: bool,
    usage: bool,
) -> String {
    if rows.is_empty() {
        return String::new();
    }
    let day = |t: Option<jiff::Timestamp>| {
        t.map_or_else(|| "-".to_string(), |t| t.strftime("%Y-%m-%d").to_string())
    };
    let mut header = vec!["SLUG", "OUTCOME", "CONF", "S/F", "STATUS"];
    if dates {
        header.extend(["CREATED", "UPDATED"]);
    } else if in_git {
        header.push("CHANGED");
    }
    if tags {
        header.push("TAGS");
    }
    if usage {
        header.extend(["SHOWN", "FOLLOWED", "UTILITY"]);
    }
    header.push("TITLE");
    let table: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            let l = r.lesson;
            let mut row = vec![
                l.slug.value.clone(),
                l.outcome.value.as_str().to_string(),
                format!("{:.2}", l.confidence()),
                format!("{}/{}", l.successes(), l.failures()),
                status_text(&r.status),
            ];
            if dates {
                row.push(day(r.dates.as_ref().map(|d| d.created)));
                row.push(day(r.dates.as_ref().map(|d| d.updated)));
            } else if in_git {
                row.push(day(r.stamps.map(|s| s.changed.time)));
            }
            if tags {
                row.push(r.matched_tags.join(","));
            }
            if usage {
                let u = &r.usage;
                row.push(u.shown.to_string());
                row.push(u.followed.to_string());
                row.push(
                    u.utility()
                        .map_or_else(|| "-".into(), |x| format!("{x:.2}")),
                );
            }
            row.push(
                l.title
                    .value
                    .split_whitespace()
                    .collect::<Vec<_>>()
                    .join(" "),
            );
            row
        })
        .collect();
    let header: Vec<String> = header.into_iter().map(String::from).collect();
    super::aligned(&header, &table)
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

/// `lesson list` of a layered stack: [`listing_table`]'s columns, less the dates, with a
/// `BANK` column after the slug (`.` for the bank in front), the banks' rows in the stack's
/// order.
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
