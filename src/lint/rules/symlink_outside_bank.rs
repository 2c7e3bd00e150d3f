//! `symlink-outside-bank` (P013).

use crate::declare_rule;
use crate::lint::Check;

declare_rule! {
    /// A symlink in the bank leads out of it.
    ///
    /// ## What it does
    /// Reports a lesson file or directory in the bank that is a symlink whose target resolves outside the bank. The finding is at the link; the target is never opened, read or indexed.
    ///
    /// ## Why is this bad?
    /// A bank is shared through git and linted in CI: a link added by a pull request could make every reader of the bank print whatever it points at (a system file, a secret). A lesson belongs in the bank itself.
    ///
    /// ## Example
    /// ```text
    /// lessons/leak.md: P013 symlink to a path outside the bank; not read
    /// ```
    pub static RULE = {
        code: "P013",
        name: "symlink-outside-bank",
        level: Error,
        fixable: false,
        check: Check::Emitted,
    }
}
