//! `ledger-count-mismatch` (L001).

use std::collections::HashSet;

use crate::bank::Bank;
use crate::declare_rule;
use crate::diagnostic::{Diagnostic, Fix};
use crate::edit::frontmatter::Frontmatter;
use crate::ledger::{ledger_files, Counts, Ledger, Tally};
use crate::lesson::slug_problem;
use crate::lint::Check;

declare_rule! {
    /// `success_count` / `failure_count` differ from the lesson's ledger.
    ///
    /// ## What it does
    /// For a lesson with a ledger (`_log/<slug>.jsonl`), adds up the counts the ledger records:
    /// the first `created` or `imported` event's counts, plus the `delta` of every distinct
    /// outcome (an outcome is identified by its run, the evidence's `kind` and `ref`: one run
    /// recorded on two clones of the bank counts once). Reports the lesson when its frontmatter
    /// says otherwise. The fix sets both count lines to the ledger's values (inserting a missing
    /// one). It is safe when the counts are behind the ledger by its last outcomes (they equal
    /// the initial counts plus the first outcomes': what a `lesson record` stopped between its
    /// ledger append and its lesson write leaves), unsafe otherwise (counts edited by hand). A
    /// lesson without a ledger is not checked here: L004 (`unledgered-counts`) reports its
    /// counts when they are not 0.
    ///
    /// ## Why is this bad?
    /// Counts are evidence, so they come from observed outcomes, never from the author (AIP-11
    /// "confidence laundering"): retrieval ranks and labels lessons by them. A count edited by
    /// hand, or a `lesson record` killed between its ledger append and its file write, leaves a
    /// count that no recorded outcome backs.
    ///
    /// ## Example
    /// With a ledger holding `imported` 2/0 and one followed, successful `outcome`:
    /// ```yaml
    /// success_count: 9   # the ledger says 3
    /// failure_count: 0
    /// ```
    pub static RULE = {
        code: "L001",
        name: "ledger-count-mismatch",
        level: Error,
        fixable: true,
        check: Check::Bank(check),
    }
}

fn check(bank: &Bank, out: &mut Vec<Diagnostic>) {
    let with_ledger: HashSet<String> = ledger_files(&bank.root)
        .iter()
        .filter_map(|p| Some(p.file_stem()?.to_str()?.to_string()))
        .collect();
    for (doc, lesson) in bank.lessons() {
        let slug = lesson.slug.value.as_str();
        if !with_ledger.contains(slug) || slug_problem(slug).is_some() {
            continue;
        }
        let Ok(ledger) = Ledger::read(&bank.root, slug) else {
            continue;
        };
        let Some(tally) = ledger.tally() else {
            continue;
        };
        let (actual, expected) = (lesson.counts(), tally.counts());
        if actual == expected {
            continue;
        }
        // a lean lint dropped the tree: the fix needs it, for this one file
        let full = doc.full();
        let Ok(fm) = Frontmatter::of(&full) else {
            continue;
        };
        let range = [
            (
                "success_count",
                actual.success_count != expected.success_count,
            ),
            (
                "failure_count",
                actual.failure_count != expected.failure_count,
            ),
        ]
        .into_iter()
        .filter(|(_, differs)| *differs)
        .find_map(|(key, _)| fm.value_range(key).filter(|r| !r.is_empty()))
        .or_else(|| doc.fences().map(|f| f.open.clone()))
        .unwrap_or(0..0);
        let mut outcomes = match tally.outcomes {
            1 => "1 outcome".to_string(),
            n => format!("{n} outcomes"),
        };
        match tally.repeated {
            0 => {}
            1 => outcomes.push_str(" (1 more line repeats a run, counted once)"),
            n => outcomes.push_str(&format!(" ({n} more lines repeat a run, counted once)")),
        }
        let mut d = Diagnostic::new(
            &RULE,
            &doc.source,
            range,
            format!(
                "counts are {actual} (success/failure) but the ledger `{}` says {expected}: initial {} + {outcomes}",
                ledger_name(slug),
                tally.initial
            ),
        )
        .with_help(
            "counts come from outcomes recorded with `lesson record`, never from the author; the fix resets them from the ledger",
        );
        if let Ok(edits) = fm.set_counts(expected) {
            let message = format!("set the counts to the ledger's {expected}");
            d = d.with_fix(if behind(&ledger, &tally, actual) {
                Fix::safe(message, edits)
            } else {
                Fix::unsafe_(message, edits)
            });
        }
        out.push(d);
    }
}

/// Whether `counts` are the ledger's initial counts plus its first distinct outcomes, short of
/// the last one or more: counts that missed outcomes the ledger recorded after them, never
/// counts the ledger does not back.
fn behind(ledger: &Ledger, tally: &Tally, counts: Counts) -> bool {
    let mut sum = tally.initial;
    let mut outcomes = ledger.distinct_outcomes().peekable();
    while let Some((_, o)) = outcomes.next() {
        if sum == counts {
            return true;
        }
        if outcomes.peek().is_none() {
            break;
        }
        sum.success_count += o.delta.success;
        sum.failure_count += o.delta.failure;
    }
    false
}

fn ledger_name(slug: &str) -> String {
    format!("{}/{slug}.jsonl", crate::ledger::LOG_DIR)
}
