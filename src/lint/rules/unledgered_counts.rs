//! `unledgered-counts` (L004).

use crate::bank::Bank;
use crate::declare_rule;
use crate::diagnostic::{Diagnostic, Fix};
use crate::edit::frontmatter::Frontmatter;
use crate::ledger::{Counts, Ledger, LOG_DIR};
use crate::lesson::slug_problem;
use crate::lint::Check;

declare_rule! {
    /// `success_count` / `failure_count` are not zero, but no ledger backs them.
    ///
    /// ## What it does
    /// Reports a lesson with a non-zero `success_count` or `failure_count` whose ledger
    /// (`_log/<slug>.jsonl`) does not exist, or records neither initial counts (a `created` or
    /// `imported` event) nor any outcome. The finding is at the first non-zero count. The unsafe
    /// fix resets both counts to 0; record the outcomes that earned them with `lesson record`.
    /// A lesson with counts 0/0 needs no ledger. Once a ledger records the counts, L001 checks
    /// them against it.
    ///
    /// ## Why is this bad?
    /// Counts are evidence, so they come from observed outcomes, never from the author (AIP-11
    /// "confidence laundering": runtimes MUST NOT trust author-supplied counts). Retrieval
    /// ranks and labels lessons by them, and the first `lesson record` on a lesson without a
    /// ledger writes the file's counts into its new ledger as an `imported` event: a count
    /// edited by hand would become the ledger's truth. A bank whose lessons predate ledgers
    /// can lower this rule to `warning` in `[lint.rules]`; `lesson review` lists the counts
    /// that entered a ledger that way (`imported-counts`).
    ///
    /// ## Example
    /// No `_log/retry-with-jitter.jsonl`:
    /// ```yaml
    /// slug: retry-with-jitter
    /// success_count: 7   # no recorded outcome says so
    /// failure_count: 0
    /// ```
    pub static RULE = {
        code: "L004",
        name: "unledgered-counts",
        level: Error,
        fixable: true,
        check: Check::Bank(check),
    }
}

fn check(bank: &Bank, out: &mut Vec<Diagnostic>) {
    for (doc, lesson) in bank.lessons() {
        let counts = lesson.counts();
        if counts == Counts::default() {
            continue;
        }
        let slug = lesson.slug.value.as_str();
        if slug_problem(slug).is_some() {
            continue;
        }
        // one open per lesson with counts: a missing ledger costs no more than a stat
        let Ok(ledger) = Ledger::read(&bank.root, slug) else {
            continue;
        };
        if ledger.tally().is_some() {
            continue;
        }
        // a lean lint dropped the tree: the fix needs it, for this one file
        let full = doc.full();
        let Ok(fm) = Frontmatter::of(&full) else {
            continue;
        };
        let range = [
            ("success_count", counts.success_count),
            ("failure_count", counts.failure_count),
        ]
        .into_iter()
        .filter(|(_, n)| *n != 0)
        .find_map(|(key, _)| fm.value_range(key).filter(|r| !r.is_empty()))
        .or_else(|| doc.fences().map(|f| f.open.clone()))
        .unwrap_or(0..0);
        let ledger_name = format!("{LOG_DIR}/{slug}.jsonl");
        let why = if ledger.exists {
            format!("its ledger `{ledger_name}` records no initial counts and no outcome")
        } else {
            format!("it has no ledger (`{ledger_name}`)")
        };
        let mut d = Diagnostic::new(
            &RULE,
            &doc.source,
            range,
            format!(
                "counts are {counts} (success/failure) but {why}: no recorded outcome backs them"
            ),
        )
        .with_help(
            "counts come from outcomes recorded with `lesson record`, never from the author: reset them to 0 (the unsafe fix) and record the outcomes that earned them",
        );
        if let Ok(edits) = fm.set_counts(Counts::default()) {
            d = d.with_fix(Fix::unsafe_("reset the counts to 0/0", edits));
        }
        out.push(d);
    }
}
