//! `lesson log SLUG`: a lesson's story in one view: the commits that touched its file (newest
//! first, following renames and the move to `_archive/`), its ledger's events in time order,
//! and the supersession chain in both directions.
//!
//! Unlike the other views, [`LessonLog::build`] reads one file itself, the lesson's ledger
//! (`_log/<slug>.jsonl`): the command line may not read ledgers, and the git layer sits beside
//! the ledger's.

use std::collections::BTreeSet;
use std::fmt::Write as _;

use serde::Serialize;

use crate::bank::Bank;
use crate::git::log::{Change, Touch};
use crate::ledger::{Ledger, LedgerError};

use super::lessons::StampJson;

/// A lesson's story, as `lesson log --format json` prints it.
#[derive(Debug, Serialize)]
pub struct LessonLog<'a> {
    slug: &'a str,
    /// The file, relative to the bank.
    path: String,
    status: &'a str,
    /// Newest first; `null` when the bank is not in git.
    commits: Option<Vec<CommitJson<'a>>>,
    /// The ledger's events, oldest first (file order among equal times).
    ledger: Vec<EventJson>,
    /// Supersession links that reach this lesson, newer lessons first, then older ones.
    supersession: Vec<Link>,
}

#[derive(Debug, Serialize)]
struct CommitJson<'a> {
    #[serde(flatten)]
    stamp: StampJson<'a>,
    summary: &'a str,
    /// `added`, `modified` or `renamed`.
    change: &'static str,
    path: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    from: Option<&'a str>,
}

#[derive(Debug, Serialize)]
struct EventJson {
    line: usize,
    at: String,
    by: String,
    event: String,
    /// The whole line, as written.
    fields: serde_json::Value,
}

/// `newer` supersedes `older`.
#[derive(Debug, Serialize, PartialEq, Eq, PartialOrd, Ord, Clone)]
struct Link {
    newer: String,
    older: String,
}

impl<'a> LessonLog<'a> {
    /// The story of the lesson `slug` at `path` (relative to the bank), with the commits that
    /// touched it (`None` outside git): reads its ledger from the bank's `_log/`.
    pub fn build(
        bank: &Bank,
        slug: &'a str,
        path: String,
        status: &'a str,
        commits: Option<&'a [Touch]>,
    ) -> Result<LessonLog<'a>, LedgerError> {
        let ledger = Ledger::read(&bank.root, slug)?;
        let lines: Vec<&str> = ledger.text.lines().collect();
        let mut events: Vec<EventJson> = ledger
            .entries
            .iter()
            .map(|e| EventJson {
                line: e.line,
                at: e.event.at.to_string(),
                by: e.event.by.clone(),
                event: e.event.kind.name().to_string(),
                fields: lines
                    .get(e.line - 1)
                    .and_then(|l| serde_json::from_str(l).ok())
                    .unwrap_or(serde_json::Value::Null),
            })
            .collect();
        let at_of = |e: &EventJson| e.at.parse::<jiff::Timestamp>().ok();
        events.sort_by_key(|e| (at_of(e), e.line));
        let commits = commits.map(|touches| {
            touches
                .iter()
                .map(|t| CommitJson {
                    stamp: StampJson::new(&t.stamp),
                    summary: &t.summary,
                    change: match t.change {
                        Change::Added => "added",
                        Change::Modified => "modified",
                        Change::Renamed { .. } => "renamed",
                    },
                    path: &t.path,
                    from: match &t.change {
                        Change::Renamed { from } => Some(from),
                        _ => None,
                    },
                })
                .collect()
        });
        Ok(LessonLog {
            slug,
            path,
            status,
            commits,
            ledger: events,
            supersession: chain(bank, slug),
        })
    }

    /// The story for people.
    pub fn text(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "{} ({}, {})", self.slug, self.path, self.status);
        out.push_str("\ncommits, newest first:\n");
        match &self.commits {
            None => out.push_str("  (the bank is not in git)\n"),
            Some(c) if c.is_empty() => out.push_str("  (not committed yet)\n"),
            Some(commits) => {
                for c in commits {
                    let what = match (c.change, c.from) {
                        ("renamed", Some(from)) => format!("renamed from {from}"),
                        (change, _) => change.to_string(),
                    };
                    let _ = writeln!(
                        out,
                        "  {} {} {}  {}  {}",
                        &c.stamp_date(),
                        c.short(),
                        c.stamp.author_name(),
                        what,
                        c.summary
                    );
                }
            }
        }
        out.push_str("\nledger, oldest first:\n");
        if self.ledger.is_empty() {
            out.push_str("  (no events)\n");
        }
        for e in &self.ledger {
            let mut rest = String::new();
            if let serde_json::Value::Object(map) = &e.fields {
                for (k, v) in map {
                    if matches!(k.as_str(), "at" | "by" | "event") {
                        continue;
                    }
                    let _ = write!(rest, " {k}={v}");
                }
            }
            let _ = writeln!(out, "  {} {} {}{}", e.at, e.by, e.event, rest);
        }
        out.push_str("\nsupersession:\n");
        if self.supersession.is_empty() {
            out.push_str("  (none)\n");
        }
        for l in &self.supersession {
            let _ = writeln!(out, "  {} supersedes {}", l.newer, l.older);
        }
        out
    }
}

impl CommitJson<'_> {
    fn stamp_date(&self) -> String {
        self.stamp
            .date
            .get(..10)
            .unwrap_or(&self.stamp.date)
            .to_string()
    }

    fn short(&self) -> &str {
        self.stamp.commit.get(..7).unwrap_or(self.stamp.commit)
    }
}

/// Every supersession link that reaches `slug`: the lessons that supersede it and those that
/// supersede them (newer), then the lessons it supersedes and theirs (older), each list in the
/// order found, without repeats (a cycle ends where it closes).
fn chain(bank: &Bank, slug: &str) -> Vec<Link> {
    let by_slug = bank.by_slug();
    let mut links = Vec::new();
    let mut seen = BTreeSet::new();
    // newer: who supersedes it
    let mut todo = vec![slug.to_string()];
    while let Some(older) = todo.pop() {
        for newer in bank.superseded_by(&older) {
            let link = Link {
                newer: newer.clone(),
                older: older.clone(),
            };
            if seen.insert(link.clone()) {
                links.push(link);
                todo.push(newer.clone());
            }
        }
    }
    // older: what it supersedes
    let mut todo = vec![slug.to_string()];
    while let Some(newer) = todo.pop() {
        let Some((_, lesson)) = by_slug.get(newer.as_str()) else {
            continue;
        };
        for older in &lesson.supersedes {
            let link = Link {
                newer: newer.clone(),
                older: older.value.clone(),
            };
            if seen.insert(link.clone()) {
                links.push(link);
                todo.push(older.value.clone());
            }
        }
    }
    links
}
