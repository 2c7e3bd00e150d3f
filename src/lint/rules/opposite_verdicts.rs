//! `opposite-verdicts` (L005).

use crate::bank::Bank;
use crate::declare_rule;
use crate::diagnostic::Diagnostic;
use crate::ledger::{ledger_files, EventKind, Ledger, LedgerEntry, LOG_DIR};
use crate::lint::Check;
use crate::source::Source;

declare_rule! {
    /// One run is recorded in a ledger with two different verdicts.
    ///
    /// ## What it does
    /// An outcome is identified by its lesson and its evidence (`kind` and `ref`: the run).
    /// Reads every ledger (`_log/*.jsonl`) and reports each `outcome` event whose `applied` or
    /// `run` differs from the first outcome event of the same run, naming both ledger lines.
    /// Only the first one counts. `lesson record` refuses a second verdict for a run it has
    /// already recorded, so this happens when two clones of a bank recorded the same run
    /// differently (`--followed` on one, `--contradicted` on the other) and git merged their
    /// ledgers. The same run recorded alike on two clones is no finding: it counts once.
    ///
    /// ## Why is this bad?
    /// The counts rest on the first line, which may be the wrong verdict, and the ledger is
    /// append-only: nothing can remove the other line. Decide which verdict is true; when it is
    /// the later one, record the truth with new evidence (the run with a note) and say why in
    /// the lesson, or suppress the finding for the ledger with `[lint.rules]`.
    ///
    /// ## Example
    /// ```text
    /// {"at":"2026-11-23T08:14:02Z","event":"outcome","by":"ana@laptop","applied":"followed","run":"success",...,"evidence":{"kind":"run","ref":"r_812"}}
    /// {"at":"2026-11-23T08:15:40Z","event":"outcome","by":"ci@runner-7","applied":"contradicted","run":"success",...,"evidence":{"kind":"run","ref":"r_812"}}
    /// ```
    pub static RULE = {
        code: "L005",
        name: "opposite-verdicts",
        level: Error,
        fixable: false,
        check: Check::Bank(check),
    }
}

fn check(bank: &Bank, out: &mut Vec<Diagnostic>) {
    for path in ledger_files(&bank.root) {
        let Ok(ledger) = Ledger::read_file(&path) else {
            continue; // L002 reports a ledger it cannot read
        };
        let pairs = ledger.opposite_verdicts();
        if pairs.is_empty() {
            continue;
        }
        let name = path
            .file_name()
            .map(|n| format!("{LOG_DIR}/{}", n.to_string_lossy()))
            .unwrap_or_default();
        let source = Source::new(path.clone(), ledger.text.clone());
        for (first, later) in pairs {
            let EventKind::Outcome(o) = &later.event.kind else {
                continue;
            };
            let start = source.line_start(later.line);
            let end = start + source.line_text(later.line).trim_end_matches('\r').len();
            let message = format!(
                "run {}:{} has two verdicts: `{name}:{}` says {} and `{name}:{}` says {}; only the first counts",
                o.evidence.kind,
                o.evidence.reference,
                first.line,
                verdict(first),
                later.line,
                verdict(later),
            );
            out.push(
                Diagnostic::new(&RULE, &source, start..end, message).with_help(
                    "one run is one observation: decide which verdict is true (the ledger is append-only; see `lesson rule L005`)",
                ),
            );
        }
    }
}

fn verdict(entry: &LedgerEntry) -> String {
    match &entry.event.kind {
        EventKind::Outcome(o) => format!(
            "{}, run {} (by {})",
            o.applied.as_str(),
            o.run.as_str(),
            entry.event.by
        ),
        other => other.name().to_string(),
    }
}
