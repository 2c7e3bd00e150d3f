//! `unreadable-file` (P001).

use crate::declare_rule;
use crate::lint::Check;

declare_rule! {
    /// A file of the bank could not be read.
    ///
    /// ## What it does
    /// Reports a lesson file that the operating system refused to read (permissions, a vanished file).
    ///
    /// ## Why is this bad?
    /// An unreadable lesson is a lesson no runtime sees; CI should say so rather than skip it.
    ///
    /// ## Example
    /// ```text
    /// lessons/x.md:1:1: P001 cannot read file: Permission denied (os error 13)
    /// ```
    pub static RULE = {
        code: "P001",
        name: "unreadable-file",
        level: Error,
        fixable: false,
        check: Check::Emitted,
    }
}
