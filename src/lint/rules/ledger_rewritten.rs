//! `ledger-rewritten` (G001), reported by `lesson lint --base` (`crate::pr`).

use crate::declare_rule;
use crate::lint::Check;

declare_rule! {
    /// A ledger lost or changed a line between the base revision and the head.
    ///
    /// ## What it does
    /// With `lesson lint --base REV`, compares each ledger (`_log/<slug>.jsonl`) of the head
    /// (the working tree, or `--head REV`) with the same ledger at `REV`: every line of the base
    /// must still be there, in order. Lines may be appended, and a merge may interleave the
    /// lines both sides appended (the union merge of `.gitattributes`), but no line may be
    /// edited or removed, and no ledger deleted. The finding is at the first changed line of
    /// the head version (the file's first line for a deleted ledger).
    ///
    /// ## Why is this bad?
    /// Ledgers are the audit trail the counts are computed from. Editing or removing an event
    /// changes a lesson's counts with no observed outcome behind the change; a wrong event is
    /// corrected by recording what really happened, never by rewriting history.
    ///
    /// ## Example
    /// Base:
    /// ```text
    /// {"at":"2026-11-23T08:14:02Z","event":"outcome","by":"ci","applied":"followed","run":"success",...}
    /// ```
    /// Head: the same line with `"applied":"contradicted"`.
    pub static RULE = {
        code: "G001",
        name: "ledger-rewritten",
        level: Error,
        fixable: false,
        check: Check::Base,
    }
}
