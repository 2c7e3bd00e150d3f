//! `lesson list` and the MCP `list` tool: the bank's lessons selected by status, time, tag,
//! outcome, origin and author, sorted and cut ([`list`]). The front ends parse their flags or
//! parameters into a [`Query`]; `report::lessons` renders the rows.
//!
//! **Dates.** A lesson's *created* and *updated* dates come from git when the bank is in a
//! repository and the lesson is committed (the commit that added it and the newest commit that
//! changed it, following renames: [`crate::git::provenance`]); otherwise from its ledger (the
//! oldest and the newest event of `_log/<slug>.jsonl`). A lesson with neither has no dates: a
//! date filter leaves it out and a date sort puts it last.
//!
//! **Origin.** AIP-11's provenance field is `evidence` (refs into runs, conversations, work
//! items); `lesson add --origin`, MCP `propose` and `define_lesson` also keep where a lesson came
//! from in `metadata.lesson.origin.source`, and `lesson distill` the run in
//! `metadata.lesson.origin.run`. An [`Origin`] pattern matches any of them.

use std::cmp::Ordering;
use std::collections::HashMap;
use std::fmt;
use std::str::FromStr;

use globset::{Glob, GlobMatcher};
use jiff::tz::TimeZone;
use jiff::{SignedDuration, Timestamp};
use rayon::prelude::*;

use crate::bank::{Bank, Status};
use crate::document::Document;
use crate::git::provenance::{LessonStamps, Provenance};
use crate::ledger::{EventKind, Ledger};
use crate::lesson::{EvidenceKind, Lesson, Outcome};
use crate::usage::{SortKey, Usage};

/// How [`list`] orders its rows. Ties are broken by slug, then path.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum Sort {
    /// By slug (then path): the order of `_index.md`.
    #[default]
    Name,
    /// Newest created first; lessons without a date last.
    Created,
    /// Most recently updated first; lessons without a date last.
    Updated,
    /// Most of the query's tags shared first, then most recently updated.
    Tags,
    /// Shown to the most runs first, then most recently shown ([`crate::usage`]).
    Shown,
    /// Highest utility first, lessons never shown last, then most shown ([`crate::usage`]).
    Utility,
}

impl Sort {
    /// Every sort key, as the command line and the MCP tool name them.
    pub const ALL: &'static [Sort] = &[
        Sort::Name,
        Sort::Created,
        Sort::Updated,
        Sort::Tags,
        Sort::Shown,
        Sort::Utility,
    ];

    /// The key's name (`name`, `created`, `updated`, `tags`).
    pub fn as_str(self) -> &'static str {
        match self {
            Sort::Name => "name",
            Sort::Created => "created",
            Sort::Updated => "updated",
            Sort::Tags => "tags",
            Sort::Shown => "shown",
            Sort::Utility => "utility",
        }
    }

    /// Whether ordering by this key needs each lesson's dates.
    fn needs_dates(self) -> bool {
        matches!(self, Sort::Created | Sort::Updated | Sort::Tags)
    }
}

impl fmt::Display for Sort {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Sort {
    type Err = String;

    fn from_str(s: &str) -> Result<Sort, String> {
        Sort::ALL
            .iter()
            .copied()
            .find(|k| k.as_str() == s)
            .ok_or_else(|| {
                let names: Vec<&str> = Sort::ALL.iter().map(|k| k.as_str()).collect();
                format!("unknown sort `{s}` (one of {})", names.join(", "))
            })
    }
}

/// Which of a lesson's dates `since` and `until` test.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum DateField {
    /// When it was added ("what did we learn this week").
    #[default]
    Created,
    /// When it last changed.
    Updated,
}

/// Which statuses [`list`] keeps.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum StatusFilter {
    /// Every lesson.
    #[default]
    All,
    /// Retrievable lessons.
    Active,
    /// Lessons another one supersedes.
    Superseded,
    /// Lessons past their `expires_at`.
    Expired,
    /// Lessons in quarantine (`lesson review --approve` releases them).
    Quarantined,
}

impl StatusFilter {
    /// Whether a lesson with this status label (`active`, `superseded`, `expired`,
    /// `quarantined`) is kept.
    pub fn keeps(self, label: &str) -> bool {
        match self {
            StatusFilter::All => true,
            StatusFilter::Active => label == "active",
            StatusFilter::Superseded => label == "superseded",
            StatusFilter::Expired => label == "expired",
            StatusFilter::Quarantined => label == "quarantined",
        }
    }
}

/// A query string that [`list`] cannot use.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum QueryError {
    /// Not a date [`parse_since`] and [`parse_until`] know.
    #[error("`{0}` is not a date: use today, yesterday, 7d (also h, w), 2026-11-20 or an RFC 3339 timestamp")]
    Date(String),
    /// Not a glob.
    #[error("`{pattern}` is not a pattern: {message}")]
    Pattern {
        /// The pattern.
        pattern: String,
        /// Why.
        message: String,
    },
}

/// A glob (`*`, `?`, `[...]`), matched against a whole string.
#[derive(Debug, Clone)]
pub struct Pattern {
    text: String,
    glob: Option<GlobMatcher>,
}

impl Pattern {
    /// A pattern; a text without glob characters matches itself only.
    pub fn new(text: &str) -> Result<Pattern, QueryError> {
        let glob = if text.contains(['*', '?', '[', '{']) {
            let glob = Glob::new(text).map_err(|e| QueryError::Pattern {
                pattern: text.to_string(),
                message: e.kind().to_string(),
            })?;
            Some(glob.compile_matcher())
        } else {
            None
        };
        Ok(Pattern {
            text: text.to_string(),
            glob,
        })
    }

    /// Whether `s` matches.
    pub fn matches(&self, s: &str) -> bool {
        match &self.glob {
            Some(g) => g.is_match(s),
            None => self.text == s,
        }
    }
}

/// What `--origin` names: an evidence kind (`run`, `conversation`, `work-item`, `audit`,
/// `wiki-page`), `KIND:REF`, or a REF alone (REF a [`Pattern`]). A lesson matches when one of its
/// `evidence` items does, or (for a REF alone) when its `metadata.lesson.origin.source` or
/// `metadata.lesson.origin.run` does.
#[derive(Debug, Clone)]
pub struct Origin {
    kind: Option<EvidenceKind>,
    reference: Option<Pattern>,
}

impl Origin {
    /// Read an origin pattern.
    pub fn new(text: &str) -> Result<Origin, QueryError> {
        if let Some(kind) = EvidenceKind::parse(text) {
            return Ok(Origin {
                kind: Some(kind),
                reference: None,
            });
        }
        if let Some((kind, reference)) = text.split_once(':') {
            if let Some(kind) = EvidenceKind::parse(kind) {
                return Ok(Origin {
                    kind: Some(kind),
                    reference: Some(Pattern::new(reference)?),
                });
            }
        }
        Ok(Origin {
            kind: None,
            reference: Some(Pattern::new(text)?),
        })
    }

    fn matches(&self, doc: &Document, lesson: &Lesson) -> bool {
        let in_evidence = lesson.evidence.iter().any(|e| {
            self.kind.is_none_or(|k| k == e.kind.value)
                && self
                    .reference
                    .as_ref()
                    .is_none_or(|p| p.matches(&e.reference.value))
        });
        in_evidence
            || match (&self.kind, &self.reference) {
                (None, Some(p)) => metadata_origin(doc).iter().any(|s| p.matches(s)),
                _ => false,
            }
    }
}

/// `metadata.lesson.origin.source` and `.run` of a lesson's file, when they are strings.
fn metadata_origin(doc: &Document) -> Vec<String> {
    // a listing's documents are slimmed: this reads the frontmatter again, only for the
    // lessons whose evidence did not match
    let full = doc.full();
    let (Some(yaml), Some(root)) = (full.yaml.as_deref(), full.root_map()) else {
        return Vec::new();
    };
    let Some(origin) = yaml
        .get(root, "metadata")
        .and_then(|(_, m)| yaml.get(m, "lesson"))
        .and_then(|(_, ours)| yaml.get(ours, "origin"))
        .map(|(_, o)| o)
    else {
        return Vec::new();
    };
    ["source", "run"]
        .into_iter()
        .filter_map(|key| crate::lesson::string(yaml, origin, key))
        .map(|s| s.value)
        .collect()
}

/// What [`list`] selects and how it orders it. The default selects every lesson by name.
#[derive(Debug, Clone, Default)]
pub struct Query {
    /// Statuses kept.
    pub status: StatusFilter,
    /// Kept: lessons whose `date` is at or after this instant.
    pub since: Option<Timestamp>,
    /// Kept: lessons whose `date` is before this instant (exclusive: [`parse_until`] gives the
    /// end of a day).
    pub until: Option<Timestamp>,
    /// The date `since` and `until` test.
    pub date: DateField,
    /// Kept: lessons with at least one of these tags (case-insensitive); none: every lesson.
    pub tags: Vec<String>,
    /// Kept: lessons with one of these outcomes; none: every lesson.
    pub outcomes: Vec<Outcome>,
    /// Kept: lessons matching one of these origins; none: every lesson.
    pub origins: Vec<Origin>,
    /// Kept: lessons whose first ledger event (`created`, or `imported` for a lesson older
    /// than its ledger) was recorded by one of these ([`Pattern`]s); none: every lesson.
    pub by: Vec<Pattern>,
    /// The order.
    pub sort: Sort,
    /// At most this many rows (after sorting).
    pub limit: Option<usize>,
    /// Read every row's dates and author even when no filter or sort needs them (for a view
    /// that shows them, such as `list --format json`).
    pub dates: bool,
}

/// The filters of a [`Query`] that a front end receives as text (flags, tool parameters).
#[derive(Debug, Clone, Copy, Default)]
pub struct QueryText<'a> {
    /// `--since` ([`parse_since`]).
    pub since: Option<&'a str>,
    /// `--until` ([`parse_until`]).
    pub until: Option<&'a str>,
    /// `--origin` ([`Origin`]).
    pub origins: &'a [String],
    /// `--by` ([`Pattern`]).
    pub by: &'a [String],
}

impl Query {
    /// This query with the filters given as `text`, relative dates counted from `now`.
    pub fn with_text(mut self, text: QueryText<'_>, now: Timestamp) -> Result<Query, QueryError> {
        self.since = text.since.map(|s| parse_since(s, now)).transpose()?;
        self.until = text.until.map(|s| parse_until(s, now)).transpose()?;
        self.origins = text
            .origins
            .iter()
            .map(|o| Origin::new(o))
            .collect::<Result<_, _>>()?;
        self.by = text
            .by
            .iter()
            .map(|b| Pattern::new(b))
            .collect::<Result<_, _>>()?;
        Ok(self)
    }

    /// Whether [`list`] reads each lesson's dates and author.
    pub fn reads_dates(&self) -> bool {
        self.dates
            || self.since.is_some()
            || self.until.is_some()
            || !self.by.is_empty()
            || self.sort.needs_dates()
    }
}

/// Where a row's dates come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DatesFrom {
    /// The commits of the lesson's file.
    Git,
    /// The lesson's ledger.
    Ledger,
}

impl DatesFrom {
    /// `git` or `ledger`.
    pub fn as_str(self) -> &'static str {
        match self {
            DatesFrom::Git => "git",
            DatesFrom::Ledger => "ledger",
        }
    }
}

/// A lesson's dates and author, as [`list`] reads them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dates {
    /// When it was added.
    pub created: Timestamp,
    /// When it last changed.
    pub updated: Timestamp,
    /// Which source gave them.
    pub from: DatesFrom,
}

/// One row of [`list`].
#[derive(Debug)]
pub struct Listed<'a> {
    /// The lesson's file.
    pub doc: &'a Document,
    /// The lesson.
    pub lesson: &'a Lesson,
    /// Its status in the bank.
    pub status: Status,
    /// Its commits, when the bank is in git and the lesson is committed.
    pub stamps: Option<LessonStamps<'a>>,
    /// Its dates (read when the query needs them or asks for them; `None` when it has none).
    pub dates: Option<Dates>,
    /// Who recorded its first ledger event (read with the dates).
    pub added_by: Option<String>,
    /// The query's tags it has, in its own order and spelling.
    pub matched_tags: Vec<&'a str>,
    /// Its retrieval figures ([`crate::usage`]; zero when never shown).
    pub usage: Usage,
}

impl Listed<'_> {
    fn date(&self, field: DateField) -> Option<Timestamp> {
        self.dates.as_ref().map(|d| match field {
            DateField::Created => d.created,
            DateField::Updated => d.updated,
        })
    }
}

/// The lessons of `bank` that `query` selects, in its order, files with errors of their own left
/// out (as `_index.md` leaves them out). `provenance` is the bank's git history when it has one,
/// `usage` the retrieval figures by slug ([`crate::usage::figures`]; a lesson missing from it
/// was never shown).
pub fn list<'a>(
    bank: &'a Bank,
    provenance: Option<&'a Provenance>,
    usage: &HashMap<String, Usage>,
    query: &Query,
) -> Vec<Listed<'a>> {
    let reads_dates = query.reads_dates();
    let wanted: Vec<String> = query.tags.iter().map(|t| t.to_lowercase()).collect();
    let lessons: Vec<(&Document, &Lesson)> = bank
        .lessons()
        .filter(|(doc, _)| !doc.has_file_errors())
        .collect();
    let mut rows: Vec<Listed<'a>> = lessons
        .into_par_iter()
        .filter_map(|(doc, lesson)| {
            let status = bank.status_of(doc).unwrap_or(Status::Active);
            if !query.status.keeps(status.label()) {
                return None;
            }
            if !query.outcomes.is_empty() && !query.outcomes.contains(&lesson.outcome.value) {
                return None;
            }
            let matched_tags: Vec<&str> = lesson
                .trigger
                .tags
                .iter()
                .map(|t| t.value.as_str())
                .filter(|t| wanted.iter().any(|w| w.eq_ignore_ascii_case(t)))
                .collect();
            if !wanted.is_empty() && matched_tags.is_empty() {
                return None;
            }
            if !query.origins.is_empty() && !query.origins.iter().any(|o| o.matches(doc, lesson)) {
                return None;
            }
            let stamps = provenance
                .and_then(|p| p.get(&crate::layout::bank_relative(&bank.root, &doc.source.path)));
            let (dates, added_by) = if reads_dates {
                dates_of(bank, lesson, stamps)
            } else {
                (None, None)
            };
            let row = Listed {
                doc,
                lesson,
                status,
                stamps,
                dates,
                added_by,
                matched_tags,
                usage: usage
                    .get(lesson.slug.value.as_str())
                    .copied()
                    .unwrap_or_default(),
            };
            let date = row.date(query.date);
            let in_range = query.since.is_none_or(|s| date.is_some_and(|d| d >= s))
                && query.until.is_none_or(|u| date.is_some_and(|d| d < u));
            let by = query.by.is_empty()
                || row
                    .added_by
                    .as_deref()
                    .is_some_and(|a| query.by.iter().any(|p| p.matches(a)));
            (in_range && by).then_some(row)
        })
        .collect();
    rows.par_sort_unstable_by(|a, b| order(query.sort, a, b));
    if let Some(limit) = query.limit {
        rows.truncate(limit);
    }
    rows
}

/// `a` before `b` under `sort`, ties by slug then path.
fn order(sort: Sort, a: &Listed<'_>, b: &Listed<'_>) -> Ordering {
    // newest first, a row without a date last
    let newest = |field| match (a.date(field), b.date(field)) {
        (Some(x), Some(y)) => y.cmp(&x),
        (Some(_), None) => Ordering::Less,
        (None, Some(_)) => Ordering::Greater,
        (None, None) => Ordering::Equal,
    };
    let by_name = || {
        (&a.lesson.slug.value, &a.doc.source.path).cmp(&(&b.lesson.slug.value, &b.doc.source.path))
    };
    match sort {
        Sort::Name => by_name(),
        Sort::Created => newest(DateField::Created).then_with(by_name),
        Sort::Updated => newest(DateField::Updated).then_with(by_name),
        Sort::Tags => b
            .matched_tags
            .len()
            .cmp(&a.matched_tags.len())
            .then_with(|| newest(DateField::Updated))
            .then_with(by_name),
        Sort::Shown => SortKey::Shown
            .compare(&a.usage, &b.usage)
            .then_with(by_name),
        Sort::Utility => SortKey::Utility
            .compare(&a.usage, &b.usage)
            .then_with(by_name),
    }
}

/// A lesson's dates (git's when it has commits, else its ledger's) and who recorded its first
/// ledger event. A ledger that cannot be read counts as empty.
fn dates_of(
    bank: &Bank,
    lesson: &Lesson,
    stamps: Option<LessonStamps<'_>>,
) -> (Option<Dates>, Option<String>) {
    let ledger = Ledger::read(&bank.root, &lesson.slug.value).unwrap_or_default();
    let added_by = ledger
        .entries
        .iter()
        .find(|e| matches!(e.event.kind, EventKind::Created(_) | EventKind::Imported(_)))
        .or(ledger.entries.first())
        .map(|e| e.event.by.clone());
    if let Some(s) = stamps {
        let dates = Dates {
            created: s.created.time,
            updated: s.changed.time,
            from: DatesFrom::Git,
        };
        return (Some(dates), added_by);
    }
    let ats = ledger.entries.iter().map(|e| e.event.at);
    let dates = ats
        .clone()
        .min()
        .zip(ats.max())
        .map(|(created, updated)| Dates {
            created,
            updated,
            from: DatesFrom::Ledger,
        });
    (dates, added_by)
}

/// The start of a `--since` range: `today` and `yesterday` (midnight UTC), `Nh`, `Nd`, `Nw`
/// (that long before `now`), a date (its midnight UTC) or an RFC 3339 timestamp.
pub fn parse_since(text: &str, now: Timestamp) -> Result<Timestamp, QueryError> {
    parse_date(text, now, false)
}

/// The end of an `--until` range, exclusive: as [`parse_since`], but a date (or `today`,
/// `yesterday`) ends at the next midnight UTC, so that the day is included; a timestamp is
/// included too.
pub fn parse_until(text: &str, now: Timestamp) -> Result<Timestamp, QueryError> {
    parse_date(text, now, true)
}

fn parse_date(text: &str, now: Timestamp, end: bool) -> Result<Timestamp, QueryError> {
    let bad = || QueryError::Date(text.to_string());
    let text = text.trim();
    let day = |date: jiff::civil::Date| -> Result<Timestamp, QueryError> {
        let date = if end {
            date.tomorrow().map_err(|_| bad())?
        } else {
            date
        };
        Ok(date.to_zoned(TimeZone::UTC).map_err(|_| bad())?.timestamp())
    };
    let today = now.to_zoned(TimeZone::UTC).date();
    match text {
        "today" => return day(today),
        "yesterday" => return day(today.yesterday().map_err(|_| bad())?),
        _ => {}
    }
    if let Some(unit) = text.chars().last().filter(|c| matches!(c, 'h' | 'd' | 'w')) {
        if let Ok(n) = text[..text.len() - 1].parse::<i64>() {
            let hours = match unit {
                'h' => 1,
                'd' => 24,
                _ => 24 * 7,
            };
            let back = n
                .checked_mul(hours)
                .filter(|h| *h >= 0)
                .and_then(|h| h.checked_mul(3600))
                .ok_or_else(bad)?;
            return now
                .checked_sub(SignedDuration::from_secs(back))
                .map_err(|_| bad());
        }
    }
    if let Ok(date) = text.parse::<jiff::civil::Date>() {
        return day(date);
    }
    let at: Timestamp = text.parse().map_err(|_| bad())?;
    if end {
        // a timestamp's own second is included (ledgers and commits count whole seconds)
        at.checked_add(SignedDuration::from_secs(1))
            .map_err(|_| bad())
    } else {
        Ok(at)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn now() -> Timestamp {
        "2026-11-26T15:30:00Z".parse().unwrap()
    }

    #[test]
    fn dates_relative_to_now_and_whole_days() {
        let at = |s: &str| s.parse::<Timestamp>().unwrap();
        assert_eq!(parse_since("7d", now()), Ok(at("2026-11-19T15:30:00Z")));
        assert_eq!(parse_since("2w", now()), Ok(at("2026-11-12T15:30:00Z")));
        assert_eq!(parse_since("3h", now()), Ok(at("2026-11-26T12:30:00Z")));
        assert_eq!(parse_since("today", now()), Ok(at("2026-11-26T00:00:00Z")));
        assert_eq!(parse_until("today", now()), Ok(at("2026-11-27T00:00:00Z")));
        assert_eq!(
            parse_since("yesterday", now()),
            Ok(at("2026-11-25T00:00:00Z"))
        );
        assert_eq!(
            parse_since("2026-11-01", now()),
            Ok(at("2026-11-01T00:00:00Z"))
        );
        assert_eq!(
            parse_until("2026-11-01", now()),
            Ok(at("2026-11-02T00:00:00Z"))
        );
        assert_eq!(
            parse_until("2026-11-01T10:00:00Z", now()),
            Ok(at("2026-11-01T10:00:01Z"))
        );
        for bad in [
            "",
            "d",
            "-3d",
            "7x",
            "last week",
            "2026-13-01",
            "99999999999999999d",
        ] {
            assert!(parse_since(bad, now()).is_err(), "{bad}");
        }
    }

    #[test]
    fn sorts_parse_from_their_names() {
        for &s in Sort::ALL {
            assert_eq!(s.as_str().parse::<Sort>(), Ok(s));
        }
        assert!("size"
            .parse::<Sort>()
            .unwrap_err()
            .contains("name, created"));
    }

    #[test]
    fn patterns_match_whole_strings_and_globs() {
        let p = Pattern::new("r_2026-11-*").unwrap();
        assert!(p.matches("r_2026-11-22"));
        assert!(!p.matches("x_r_2026-11-22"));
        let p = Pattern::new("ana@laptop").unwrap();
        assert!(p.matches("ana@laptop") && !p.matches("ana@laptop2"));
        assert!(Pattern::new("[oops").is_err());
    }
}
