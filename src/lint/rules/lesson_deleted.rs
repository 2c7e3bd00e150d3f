//! `lesson-deleted` (G003), reported by `lesson lint --base` (`crate::pr`).

use crate::declare_rule;
use crate::lint::Check;

declare_rule! {
    /// A lesson file of the base revision is gone from the head.
    ///
    /// ## What it does
    /// With `lesson lint --base REV`, reports each lesson file (live, or in `_archive/`) of `REV`
    /// that the head neither keeps nor moves (git's rename detection pairs a moved file with its
    /// new path). Moving a lesson to `_archive/` (`lesson archive`) or elsewhere in the bank is
    /// not a deletion; moving it out of the bank is.
    ///
    /// ## Why is this bad?
    /// Nothing is deleted from a bank: a lesson that no longer applies is superseded by a newer
    /// one (`lesson supersede`) or archived (`lesson archive`), so its ledger keeps pointing at
    /// a file, its history stays readable, and a runtime that cached its slug can still resolve
    /// it.
    ///
    /// ## Example
    /// ```text
    /// $ git rm lessons/retry-with-jitter.md
    /// ```
    pub static RULE = {
        code: "G003",
        name: "lesson-deleted",
        level: Error,
        fixable: false,
        check: Check::Base,
    }
}
