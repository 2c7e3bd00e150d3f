//! `nul-byte` (P004).

use crate::declare_rule;
use crate::lint::Check;

declare_rule! {
    /// A file contains a NUL byte.
    ///
    /// ## What it does
    /// Reports the first NUL byte in a file, which marks it as binary or corrupted.
    ///
    /// ## Why is this bad?
    /// A NUL byte is never part of a lesson; it truncates the text in many consumers and hides content from reviewers.
    ///
    /// ## Example
    /// ```text
    /// lessons/x.md:2:5: P004 NUL byte at byte 17
    /// ```
    pub static RULE = {
        code: "P004",
        name: "nul-byte",
        level: Error,
        fixable: false,
        check: Check::Emitted,
    }
}
