//! `walk-error` (P012).

use crate::declare_rule;
use crate::lint::Check;

declare_rule! {
    /// A path in the bank could not be walked.
    ///
    /// ## What it does
    /// Reports symlink loops and unreadable directories met while looking for lesson files; the rest of the bank is still linted.
    ///
    /// ## Why is this bad?
    /// Lessons behind the path are invisible to every runtime.
    ///
    /// ## Example
    /// ```text
    /// lessons/loop: P012 symlink loop; not followed
    /// ```
    pub static RULE = {
        code: "P012",
        name: "walk-error",
        level: Error,
        fixable: false,
        check: Check::Emitted,
    }
}
