//! `duplicate-path` (P014).

use crate::declare_rule;
use crate::lint::Check;

declare_rule! {
    /// A symlink in the bank leads to a file or directory the bank already has.
    ///
    /// ## What it does
    /// Reports a symlink whose target is inside the bank and reached by its own path too. The link is not followed, so no lesson is loaded, linted or indexed twice.
    ///
    /// ## Why is this bad?
    /// A lesson reachable by two paths would come back twice from a search and count twice in every listing.
    ///
    /// ## Example
    /// ```text
    /// lessons/alias: P014 symlink to `ci`, which is walked by its own path; not followed
    /// ```
    pub static RULE = {
        code: "P014",
        name: "duplicate-path",
        level: Warning,
        fixable: false,
        check: Check::Emitted,
    }
}
