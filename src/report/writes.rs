//! What a write did, and one lesson with its ledger, as JSON for programs (`lesson mcp`'s
//! `record`, `propose` and `get` results). Paths are relative to the bank, `/`-separated.

use std::path::Path;

use serde::Serialize;
use serde_json::{json, Value};

use crate::curate::add::{Added, Admitted, Why};
use crate::curate::record::Recorded;
use crate::ledger::{Counts, EventKind, Ledger};

fn rel(root: &Path, path: &Path) -> String {
    let shown = path.strip_prefix(root).unwrap_or(path);
    super::slash_path(shown)
}

fn counts(c: Counts) -> Value {
    json!({"success_count": c.success_count, "failure_count": c.failure_count})
}

/// `record`'s result: the file, counts before and after, what the outcome added, whether an
/// event was appended (false for a retry of an outcome already in the ledger) and whether the
/// lesson file changed.
pub fn recorded(root: &Path, slug: &str, r: &Recorded) -> Value {
    json!({
        "slug": slug,
        "path": rel(root, &r.path),
        "ledger": rel(root, &crate::ledger::path(root, slug)),
        "before": counts(r.before),
        "after": counts(r.after),
        "delta": {"success": r.delta.success, "failure": r.delta.failure},
        "appended": r.appended,
        "changed": r.changed,
        "ledger_problems": r.ledger_problems.iter().map(|p| json!({
            "line": p.line, "message": p.message
        })).collect::<Vec<_>>(),
    })
}

/// `propose`'s result (the `lesson add` gate): what became of each candidate, the warnings on
/// the new ones (as `lesson lint --output-format json` objects) and whether anything changed.
pub fn added(root: &Path, a: &Added) -> Value {
    let sources: super::Sources = a.warnings.sources.iter().collect();
    json!({
        "admitted": a.admitted.iter().map(|x| admitted(root, x)).collect::<Vec<_>>(),
        "warnings": super::envelope::diagnostics_json(&a.warnings.diagnostics, &sources),
        "changed": a.changed,
    })
}

fn admitted(root: &Path, a: &Admitted) -> Value {
    match a {
        Admitted::Created {
            label,
            slug,
            path,
            counts: c,
            conflicts_with,
        } => json!({
            "action": "created",
            "label": label,
            "slug": slug,
            "path": rel(root, path),
            "counts": counts(*c),
            "conflicts_with": conflicts_with,
        }),
        Admitted::Merged {
            label,
            candidate,
            into,
            path,
            added,
            why,
        } => {
            let why = match why {
                Why::SameSlug => json!({"reason": "same-slug"}),
                Why::Recorded => json!({"reason": "merged-before"}),
                Why::Similar(p) => json!({
                    "reason": "near-duplicate",
                    "score": p.score,
                    "text_similarity": p.text_similarity,
                    "slug_similarity": p.slug_similarity,
                    "shared_tags": p.shared_tags,
                }),
            };
            json!({
                "action": "merged",
                "label": label,
                "slug": candidate,
                "into": into,
                "path": rel(root, path),
                "evidence_added": added,
                "why": why,
            })
        }
    }
}

/// A ledger in brief: how many events of each kind, outcomes by how they went, the counts the
/// ledger backs, when it began and when it last changed, and lines that are not whole events.
#[derive(Debug, Serialize)]
pub struct LedgerSummary {
    /// The ledger file, relative to the bank.
    pub path: String,
    /// Whether the file exists.
    pub exists: bool,
    /// Whole events.
    pub events: usize,
    /// Outcome events.
    pub outcomes: usize,
    /// Outcomes where the advice was followed.
    pub followed: usize,
    /// Outcomes where it was contradicted.
    pub contradicted: usize,
    /// Outcomes of successful runs.
    pub runs_succeeded: usize,
    /// Outcomes of failed runs.
    pub runs_failed: usize,
    /// Evidence-only events.
    pub evidence: usize,
    /// The counts the ledger says the lesson has (`None`: it says nothing about them).
    pub counts: Option<Value>,
    /// The first `created` / `imported` event's time.
    pub since: Option<String>,
    /// The last event's time.
    pub last: Option<String>,
    /// Lines that are not whole events.
    pub torn_lines: Vec<usize>,
}

impl LedgerSummary {
    /// The summary of `ledger`, in the bank at `root`.
    pub fn of(root: &Path, ledger: &Ledger) -> LedgerSummary {
        let mut s = LedgerSummary {
            path: rel(root, &ledger.path),
            exists: ledger.exists,
            events: ledger.entries.len(),
            outcomes: 0,
            followed: 0,
            contradicted: 0,
            runs_succeeded: 0,
            runs_failed: 0,
            evidence: 0,
            counts: ledger.tally().map(|t| counts(t.counts())),
            since: ledger.since().map(|t| t.to_string()),
            last: ledger.entries.last().map(|e| e.event.at.to_string()),
            torn_lines: ledger.problems.iter().map(|p| p.line).collect(),
        };
        for e in &ledger.entries {
            match &e.event.kind {
                EventKind::Outcome(o) => {
                    s.outcomes += 1;
                    match o.applied {
                        crate::ledger::Applied::Followed => s.followed += 1,
                        crate::ledger::Applied::Contradicted => s.contradicted += 1,
                    }
                    match o.run {
                        crate::ledger::RunOutcome::Success => s.runs_succeeded += 1,
                        crate::ledger::RunOutcome::Failure => s.runs_failed += 1,
                    }
                }
                EventKind::Evidence(_) => s.evidence += 1,
                _ => {}
            }
        }
        s
    }
}
