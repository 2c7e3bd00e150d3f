//! `lesson diff`: what a change does to the bank, as text (a terminal), markdown (a pull-request
//! comment) and JSON (scripts).
//!
//! The JSON is one object: `base` and `head` (the revisions as given; `head` is `null` for the
//! working tree), then the arrays `added` (`slug`, `path`, `title`, `nearest` when dedup finds an
//! existing lesson like it: `{slug, score}`), `recorded` (`slug`, `before` and `after` counts,
//! `events`: the outcome events the ledger gained, `by`: who recorded them), `superseded`
//! (`by`, `supersedes`: the entries added), `archived` and `moved` (`slug`, `from`, `to`),
//! `rewritten` (`slug`, `path`, `body`, `trigger`), and `findings`: the `lesson lint --base`
//! findings, each as `lesson lint --output-format json` writes it.

use std::fmt::Write;

use serde::Serialize;

use super::Sources;
use crate::diagnostic::{Diagnostic, Severity};
use crate::pr::{Added, Moved, Recorded, Rewritten, Summary, Supersession};

fn head_name(summary: &Summary) -> String {
    match &summary.revisions.head {
        Some(head) => format!("`{head}`"),
        None => "the working tree".to_string(),
    }
}

fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

fn is_empty(s: &Summary) -> bool {
    s.added.is_empty()
        && s.recorded.is_empty()
        && s.superseded.is_empty()
        && s.archived.is_empty()
        && s.moved.is_empty()
        && s.rewritten.is_empty()
        && s.findings.is_empty()
}

/// The one-line tally of the findings: `1 error, 2 warnings`, or `no finding`.
fn findings_tally(findings: &[Diagnostic]) -> String {
    let count = |s: Severity| findings.iter().filter(|d| d.severity == s).count();
    let mut parts = Vec::new();
    for (severity, one, many) in [
        (Severity::Error, "error", "errors"),
        (Severity::Warning, "warning", "warnings"),
        (Severity::Info, "info", "infos"),
    ] {
        let n = count(severity);
        if n > 0 {
            parts.push(plural(n, one, many));
        }
    }
    if parts.is_empty() {
        "no finding".to_string()
    } else {
        parts.join(", ")
    }
}

fn by_whom(r: &Recorded) -> String {
    r.by.join(", ")
}

fn what_changed(r: &Rewritten) -> &'static str {
    match (r.body, r.trigger) {
        (true, true) => "trigger and body",
        (false, true) => "trigger",
        _ => "body",
    }
}

/// The summary for a terminal.
pub fn text(summary: &Summary) -> String {
    let mut out = String::new();
    let head = match &summary.revisions.head {
        Some(h) => h.clone(),
        None => "working tree".to_string(),
    };
    let _ = writeln!(out, "{} → {head}", summary.revisions.base);
    if is_empty(summary) {
        out.push_str("no change to the bank's lessons or ledgers\n");
        return out;
    }
    if !summary.added.is_empty() {
        let _ = writeln!(out, "\nadded ({}):", summary.added.len());
        for a in &summary.added {
            let nearest = match &a.nearest {
                Some(n) => format!(" (nearest existing lesson: {} {:.2})", n.slug, n.score),
                None => String::new(),
            };
            let _ = writeln!(out, "  {}  {}{nearest}", a.slug, a.title);
        }
    }
    if !summary.recorded.is_empty() {
        let _ = writeln!(out, "\noutcomes recorded ({}):", summary.recorded.len());
        for r in &summary.recorded {
            let _ = writeln!(
                out,
                "  {}  {} → {}  ({} by {})",
                r.slug,
                r.before,
                r.after,
                plural(r.events, "outcome", "outcomes"),
                by_whom(r)
            );
        }
    }
    if !summary.superseded.is_empty() {
        out.push_str("\nsuperseded:\n");
        for s in &summary.superseded {
            let _ = writeln!(out, "  {} supersedes {}", s.by, s.supersedes.join(", "));
        }
    }
    for (title, moves) in [("archived", &summary.archived), ("moved", &summary.moved)] {
        if !moves.is_empty() {
            let _ = writeln!(out, "\n{title}:");
            for m in moves {
                let _ = writeln!(out, "  {}  {} → {}", m.slug, m.from, m.to);
            }
        }
    }
    if !summary.rewritten.is_empty() {
        out.push_str("\nrewritten (review: AIP-11 asks for a supersession):\n");
        for r in &summary.rewritten {
            let _ = writeln!(out, "  {}  {}", r.slug, what_changed(r));
        }
    }
    let _ = writeln!(out, "\nchecks: {}", findings_tally(&summary.findings));
    for d in &summary.findings {
        let _ = writeln!(
            out,
            "  {}:{}:{}: {} {}",
            d.path.display(),
            d.line,
            d.column,
            d.code,
            d.message
        );
    }
    out
}

/// Text in a markdown table cell: `|` escaped, line breaks as spaces.
fn cell(text: &str) -> String {
    text.replace('|', "\\|").replace(['\n', '\r'], " ")
}

/// The summary as a markdown comment for a pull request.
pub fn markdown(summary: &Summary) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "### Lesson bank: `{}` → {}\n",
        summary.revisions.base,
        head_name(summary)
    );
    if is_empty(summary) {
        out.push_str("No change to the bank's lessons or ledgers.\n");
        return out;
    }
    let mut tally = Vec::new();
    for (n, one, many) in [
        (summary.added.len(), "lesson added", "lessons added"),
        (
            summary.recorded.len(),
            "lesson with recorded outcomes",
            "lessons with recorded outcomes",
        ),
        (summary.superseded.len(), "supersession", "supersessions"),
        (summary.archived.len(), "archived", "archived"),
        (summary.rewritten.len(), "rewrite", "rewrites"),
    ] {
        if n > 0 {
            tally.push(plural(n, one, many));
        }
    }
    if !tally.is_empty() {
        let _ = writeln!(out, "{}.\n", tally.join(" · "));
    }
    if !summary.added.is_empty() {
        let _ = writeln!(out, "#### Added ({})\n", summary.added.len());
        out.push_str("| lesson | title | nearest existing lesson |\n|---|---|---|\n");
        for a in &summary.added {
            let nearest = match &a.nearest {
                Some(n) => format!("`{}` ({:.2})", n.slug, n.score),
                None => "none".to_string(),
            };
            let _ = writeln!(out, "| `{}` | {} | {nearest} |", a.slug, cell(&a.title));
        }
        out.push('\n');
    }
    if !summary.recorded.is_empty() {
        let _ = writeln!(out, "#### Outcomes recorded ({})\n", summary.recorded.len());
        out.push_str(
            "| lesson | counts (success/failure) | outcome events | by |\n|---|---|---|---|\n",
        );
        for r in &summary.recorded {
            let _ = writeln!(
                out,
                "| `{}` | {} → {} | {} | {} |",
                r.slug,
                r.before,
                r.after,
                r.events,
                cell(&by_whom(r))
            );
        }
        out.push('\n');
    }
    if !summary.superseded.is_empty() {
        out.push_str("#### Superseded\n\n");
        for s in &summary.superseded {
            let old: Vec<String> = s.supersedes.iter().map(|o| format!("`{o}`")).collect();
            let _ = writeln!(out, "- `{}` supersedes {}", s.by, old.join(", "));
        }
        out.push('\n');
    }
    for (title, moves) in [("Archived", &summary.archived), ("Moved", &summary.moved)] {
        if !moves.is_empty() {
            let _ = writeln!(out, "#### {title}\n");
            for m in moves {
                let _ = writeln!(out, "- `{}`: `{}` → `{}`", m.slug, m.from, m.to);
            }
            out.push('\n');
        }
    }
    if !summary.rewritten.is_empty() {
        out.push_str("#### Rewritten\n\nAIP-11 asks for a new lesson that supersedes the old one; review these:\n\n");
        for r in &summary.rewritten {
            let _ = writeln!(out, "- `{}` (`{}`): {}", r.slug, r.path, what_changed(r));
        }
        out.push('\n');
    }
    let _ = writeln!(
        out,
        "#### Checks (`lesson lint --base`): {}\n",
        findings_tally(&summary.findings)
    );
    for d in &summary.findings {
        let mark = match d.severity {
            Severity::Error => "❌",
            Severity::Warning => "⚠️",
            Severity::Info => "ℹ️",
        };
        let _ = writeln!(
            out,
            "- {mark} `{}:{}` **{}** {}",
            super::slash_path(&d.path),
            d.line,
            d.code,
            d.message.replace('\n', " ")
        );
    }
    out
}

#[derive(Serialize)]
struct JsonSummary<'a> {
    base: &'a str,
    head: Option<&'a str>,
    added: &'a [Added],
    recorded: &'a [Recorded],
    superseded: &'a [Supersession],
    archived: &'a [Moved],
    moved: &'a [Moved],
    rewritten: &'a [Rewritten],
    findings: Vec<super::json::JsonDiagnostic<'a>>,
}

/// The summary as the JSON object the module docs describe, pretty-printed, with a final
/// newline.
pub fn json(summary: &Summary) -> serde_json::Result<String> {
    let sources: Sources<'_> = summary.sources.iter().collect();
    let findings = super::json::objects(&summary.findings, &sources);
    let view = JsonSummary {
        base: &summary.revisions.base,
        head: summary.revisions.head.as_deref(),
        added: &summary.added,
        recorded: &summary.recorded,
        superseded: &summary.superseded,
        archived: &summary.archived,
        moved: &summary.moved,
        rewritten: &summary.rewritten,
        findings,
    };
    let mut out = serde_json::to_string_pretty(&view)?;
    out.push('\n');
    Ok(out)
}
