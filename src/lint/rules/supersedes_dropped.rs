//! `supersedes-dropped` (G005), reported by `lesson lint --base` (`crate::pr`).

use crate::declare_rule;
use crate::lint::Check;

declare_rule! {
    /// A `supersedes` entry of the base revision was removed.
    ///
    /// ## What it does
    /// With `lesson lint --base REV`, compares the `supersedes` list of each lesson that exists
    /// in both versions: entries may be added (`lesson supersede`), never dropped. The finding
    /// is at the head's `supersedes` (at the frontmatter's first line when the field is gone)
    /// and names each dropped slug.
    ///
    /// ## Why is this bad?
    /// Dropping an entry silently makes the older lesson active again: retrieval serves advice
    /// the bank had replaced, and the older lesson's ledger still says it was superseded. If the
    /// older advice is right after all, say so with a new lesson that supersedes this one.
    ///
    /// ## Example
    /// Base `supersedes: [retry-forever, retry-once]`, head `supersedes: [retry-once]`.
    pub static RULE = {
        code: "G005",
        name: "supersedes-dropped",
        level: Error,
        fixable: false,
        check: Check::Base,
    }
}
