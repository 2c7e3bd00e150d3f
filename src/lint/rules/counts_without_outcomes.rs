//! `counts-without-outcomes` (G002), reported by `lesson lint --base` (`crate::pr`).

use crate::declare_rule;
use crate::lint::Check;

declare_rule! {
    /// `success_count` / `failure_count` changed without the matching ledger events.
    ///
    /// ## What it does
    /// With `lesson lint --base REV`, compares the counts of each lesson that exists in both
    /// versions: the change of `success_count` and of `failure_count` between `REV` and the head
    /// must equal what the outcomes appended to the lesson's ledger in the same change add up to
    /// (counted as the ledger counts them: one per distinct outcome). A count raised by hand, or
    /// an outcome recorded without its count, is reported at the count in the head version. A
    /// new lesson's counts are checked against its ledger by L001 and L004.
    ///
    /// ## Why is this bad?
    /// Counts typed by hand are the "confidence laundering" AIP-11 warns about: runtimes rank
    /// and label lessons by their counts, so a count must come from a recorded outcome
    /// (`lesson record`), never from an author or a reviewer.
    ///
    /// ## Example
    /// ```yaml
    /// success_count: 9   # was 3 at the base; the ledger gained one `outcome` event
    /// ```
    pub static RULE = {
        code: "G002",
        name: "counts-without-outcomes",
        level: Error,
        fixable: false,
        check: Check::Base,
    }
}
