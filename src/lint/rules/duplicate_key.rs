//! `duplicate-key` (P009).

use crate::declare_rule;
use crate::lint::Check;

declare_rule! {
    /// A mapping repeats a key.
    ///
    /// ## What it does
    /// Reports the second occurrence of a key in the same mapping; the first one is what lesson reads.
    ///
    /// ## Why is this bad?
    /// YAML parsers disagree on which duplicate wins, so two runtimes may read two different lessons from one file.
    ///
    /// ## Example
    /// ```text
    /// title: One title
    /// title: Another title
    /// ```
    pub static RULE = {
        code: "P009",
        name: "duplicate-key",
        level: Error,
        fixable: false,
        check: Check::Emitted,
    }
}
