//! What a write did, and one lesson with its ledger, as JSON for programs (`lesson mcp`'s
//! `record`, `propose` and `get` results, and `--format json` of the writers: `lesson new`,
//! `add`, `record`, `supersede`, `archive`, `distill`). Paths are relative to the bank,
//! `/`-separated.
//!
//! A writer's `--format json` is one object ([`report`]): `command`, `dry_run`, `changed`,
//! `files` and `events` (what the write door did, from its journal: [`changes`]), and
//! `result`, the command's own view ([`created`], [`added`], [`recorded`], [`superseded`],
//! [`archived`], [`distilled`]).

use std::path::Path;

use serde::Serialize;
use serde_json::{json, Value};

use crate::curate::add::{Added, Admitted, Why};
use crate::curate::archive::Move;
use crate::curate::new::Draft;
use crate::curate::record::Recorded;
use crate::curate::supersede::Superseded;
use crate::distill::{Distilled, Run};
use crate::edit::journal::Change;
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
            quarantine,
        } => {
            let mut out = json!({
                "action": "created",
                "label": label,
                "slug": slug,
                "path": rel(root, path),
                "counts": counts(*c),
                "conflicts_with": conflicts_with,
            });
            if let Some(rules) = quarantine {
                out["quarantined"] = json!(rules);
            }
            out
        }
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

/// A writer's report: `{command, dry_run, changed, files, events, result}`, where `changed`
/// says whether any file of the bank changed, `files` and `events` are [`changes`]'s and
/// `result` the command's own view.
pub fn report(
    command: &str,
    dry_run: bool,
    root: &Path,
    journal: &[Change],
    result: Value,
) -> Value {
    let (files, events) = changes(root, journal);
    json!({
        "command": command,
        "dry_run": dry_run,
        "changed": !journal.is_empty(),
        "files": files,
        "events": events,
        "result": result,
    })
}

/// The files a write changed, each once, in the order it first touched them: `{path, change}`
/// with `change` one of `created`, `modified`, `appended` or `moved` (with `from`), and for a
/// ledger `events`, how many events it gained; and the ledger events appended, in order, as `{ledger,
/// slug, event}` (`event` is the event's kind: `outcome`, `created`, `superseded`, ...).
pub fn changes(root: &Path, journal: &[Change]) -> (Value, Value) {
    // (path, change, from, appended lines)
    let mut files: Vec<(String, &'static str, Option<String>, usize)> = Vec::new();
    let mut events = Vec::new();
    for change in journal {
        let (path, kind, from, lines) = match change {
            Change::Written { path, created } => (
                rel(root, path),
                if *created { "created" } else { "modified" },
                None,
                0,
            ),
            Change::Appended {
                path,
                created,
                lines,
            } => {
                let ledger = rel(root, path);
                let slug = path
                    .file_stem()
                    .map(|s| s.to_string_lossy().into_owned())
                    .unwrap_or_default();
                for line in lines {
                    let event = serde_json::from_str::<Value>(line)
                        .ok()
                        .and_then(|v| v.get("event").and_then(Value::as_str).map(str::to_string));
                    events.push(json!({"ledger": ledger, "slug": slug, "event": event}));
                }
                let kind = if *created { "created" } else { "appended" };
                (ledger, kind, None, lines.len())
            }
            Change::Moved { from, to } => (rel(root, to), "moved", Some(rel(root, from)), 0),
        };
        match files.iter_mut().find(|f| f.0 == path) {
            // a file written twice stays `created` when the first write created it
            Some(seen) => seen.3 += lines,
            None => files.push((path, kind, from, lines)),
        }
    }
    let files = files
        .into_iter()
        .map(|(path, change, from, lines)| {
            let mut file = json!({"path": path, "change": change});
            if let Some(from) = from {
                file["from"] = Value::from(from);
            }
            if lines > 0 {
                file["events"] = Value::from(lines);
            }
            file
        })
        .collect();
    (Value::Array(files), Value::Array(events))
}

/// `lesson new`'s result: the lesson's slug, file and counts, its findings (as `lesson lint
/// --output-format json` objects), the lesson it looks like a near-duplicate of, and, when
/// `text` asks (a dry run), the lesson's text.
pub fn created(root: &Path, slug: &str, draft: &Draft, text: bool) -> Value {
    let sources: super::Sources = draft.bank.sources().collect();
    let lesson = draft
        .bank
        .documents
        .iter()
        .find(|d| d.source.path == draft.path)
        .and_then(|d| d.lesson.as_deref());
    json!({
        "slug": slug,
        "path": rel(root, &draft.path),
        "counts": lesson.map(|l| counts(l.counts())),
        "refused": draft.refused(),
        "findings": super::envelope::diagnostics_json(&draft.findings, &sources),
        "near_duplicate": draft.near.as_ref().map(|p| json!({
            "of": p.a,
            "score": p.score,
            "slug_similarity": p.slug_similarity,
            "text_similarity": p.text_similarity,
            "shared_tags": p.shared_tags,
        })),
        "text": text.then(|| draft.text.clone()),
    })
}

/// `lesson review --approve`'s result: the lesson released from quarantine, its file, and the
/// rules it had been quarantined for.
pub fn approved(root: &Path, a: &crate::curate::approve::Approved) -> Value {
    json!({
        "slug": a.slug,
        "path": rel(root, &a.path),
        "rules": a.rules,
    })
}

/// `lesson supersede`'s result: NEW's slug and file, the slugs added to its `supersedes`, the
/// OLD lessons whose ledger gained a `superseded` event.
pub fn superseded(root: &Path, new: &str, s: &Superseded) -> Value {
    json!({
        "slug": new,
        "path": rel(root, &s.path),
        "added": s.added,
        "logged": s.logged,
    })
}

/// `lesson archive`'s result: each lesson moved (or, in a dry run, to move), from and to,
/// and the lessons it alone superseded, active again.
pub fn archived(root: &Path, moves: &[Move]) -> Value {
    json!({
        "moved": moves.iter().map(|m| {
            let mut one = json!({
                "slug": m.slug,
                "from": rel(root, &m.from),
                "to": rel(root, &m.to),
                "reactivated": m.reactivated,
            });
            // `--policy`: the rule that archives it, and why
            if let Some((rule, why)) = &m.rule {
                one["rule"] = Value::from(rule.key());
                one["why"] = Value::from(why.as_str());
            }
            one
        }).collect::<Vec<_>>(),
    })
}

/// `lesson distill`'s result: the run, the lessons that matched it, each verdict recorded
/// (as [`recorded`]), the verdicts skipped and why, the judge's proposals admitted (as
/// [`added`]); for a run distilled before, where its ledger names it.
pub fn distilled(root: &Path, run: &Run, d: &Distilled) -> Value {
    let head = json!({"run": run.id, "outcome": run.outcome.as_str()});
    let mut out = match d {
        Distilled::Already { ledger, line, .. } => json!({
            "already": {"ledger": rel(root, ledger), "line": line},
        }),
        Distilled::TooShort { steps, min_steps } => json!({
            "already": null,
            "too_short": {"steps": steps, "min_steps": min_steps},
        }),
        Distilled::Done(r) => {
            let sources: super::Sources = r.warnings.sources.iter().collect();
            json!({
                "already": null,
                "matched": r.matched,
                "recorded": r.recorded.iter().map(|(v, rec)| {
                    let mut one = recorded(root, &v.slug, rec);
                    one["applied"] = Value::from(v.applied.as_str());
                    one
                }).collect::<Vec<_>>(),
                "skipped": r.skipped.iter().map(|(slug, why)| json!({
                    "slug": slug, "why": why
                })).collect::<Vec<_>>(),
                "admitted": r.admitted.iter().map(|x| admitted(root, x)).collect::<Vec<_>>(),
                "dropped": r.dropped.iter().map(|(label, why)| json!({
                    "candidate": label, "why": why
                })).collect::<Vec<_>>(),
                "redacted": r.redacted.iter().map(|(label, kind)| json!({
                    "at": label, "kind": kind
                })).collect::<Vec<_>>(),
                "warnings": super::envelope::diagnostics_json(&r.warnings.diagnostics, &sources),
            })
        }
    };
    if let (Value::Object(out), Value::Object(head)) = (&mut out, head) {
        out.extend(head);
    }
    out
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

/// `lesson promote`'s result: the lesson, the bank it went to, its file there, and where its
/// file in this bank went.
pub fn promoted(root: &Path, p: &crate::curate::promote::Promoted) -> Value {
    json!({
        "slug": p.slug,
        "bank": p.bank,
        "from": rel(root, &p.from),
        "archived": rel(root, &p.archived),
        "to": p.to.display().to_string(),
        "resumed": p.resumed,
    })
}
