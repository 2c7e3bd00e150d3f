//! `unused-suppression` (X001).

use crate::declare_rule;
use crate::lint::Check;

declare_rule! {
    /// A suppression matches no finding, or names no rule.
    ///
    /// ## What it does
    /// Reports entries of `metadata.lesson.allow` and `<!-- lesson-allow CODE: reason -->` comments that suppressed nothing, and codes that name no rule.
    ///
    /// ## Why is this bad?
    /// A stale suppression hides the next real finding of that rule in the file.
    ///
    /// ## Example
    /// ```text
    /// metadata:
    ///   lesson:
    ///     allow: [S999]
    /// ```
    pub static RULE = {
        code: "X001",
        name: "unused-suppression",
        level: Warning,
        fixable: false,
        check: Check::Emitted,
    }
}
