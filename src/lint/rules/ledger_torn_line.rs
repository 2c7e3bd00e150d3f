//! `ledger-torn-line` (L002).

use crate::bank::Bank;
use crate::declare_rule;
use crate::diagnostic::Diagnostic;
use crate::ledger::{ledger_files, Ledger};
use crate::lint::Check;
use crate::source::Source;

declare_rule! {
    /// A ledger line is not a whole event; it is ignored.
    ///
    /// ## What it does
    /// Reads every ledger (`_log/*.jsonl`) and reports each line that is not one whole JSON
    /// event: cut short (a `lesson record` killed mid-append leaves a last line without a line
    /// ending), not JSON, or an event missing a field it needs. Such a line counts for nothing:
    /// the counts are added up from the whole events only, and the next append starts on a
    /// fresh line. Events of a kind this version does not know are not reported.
    ///
    /// ## Why is this bad?
    /// Whatever the line recorded is lost to the counts, so the lesson may be missing an
    /// outcome. The ledger is append-only and nothing rewrites it; if the outcome happened,
    /// record it again with `lesson record`.
    ///
    /// ## Example
    /// ```text
    /// {"at":"2026-11-22T12:00:00Z","event":"outcome","by":"ci","applied":"follo
    /// ```
    pub static RULE = {
        code: "L002",
        name: "ledger-torn-line",
        level: Warning,
        fixable: false,
        check: Check::Bank(check),
    }
}

fn check(bank: &Bank, out: &mut Vec<Diagnostic>) {
    for path in ledger_files(&bank.root) {
        let ledger = match Ledger::read_file(&path) {
            Ok(ledger) => ledger,
            Err(err) => {
                let source = Source::new(path.clone(), String::new());
                out.push(Diagnostic::new(
                    &RULE,
                    &source,
                    0..0,
                    format!("cannot read the ledger: {}", err.source),
                ));
                continue;
            }
        };
        let source = Source::new(path.clone(), ledger.text.clone());
        for problem in &ledger.problems {
            let message = if problem.unterminated {
                format!(
                    "line {} was cut short (no line ending, {}): an append did not finish; the line is ignored",
                    problem.line, problem.message
                )
            } else {
                format!(
                    "line {} is not a whole ledger event ({}); it is ignored",
                    problem.line, problem.message
                )
            };
            let mut d = Diagnostic::new(&RULE, &source, problem.range.clone(), message).with_help(
                "if it recorded an outcome that happened, record it again with `lesson record`",
            );
            if d.line != problem.line {
                // the range is unknown for a line that is not UTF-8
                (d.line, d.column, d.end_line, d.end_column) = (problem.line, 1, problem.line, 1);
            }
            out.push(d);
        }
    }
}
