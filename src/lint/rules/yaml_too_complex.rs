//! `yaml-too-complex` (P010).

use crate::declare_rule;
use crate::lint::Check;

declare_rule! {
    /// The frontmatter nests too deeply or uses too many aliases.
    ///
    /// ## What it does
    /// Reports YAML nested deeper than 64 levels or with more than 1024 aliases.
    ///
    /// ## Why is this bad?
    /// Neither occurs in a real lesson; both are the shape of a resource-exhaustion attack (an alias bomb) on the tools that read the bank.
    ///
    /// ## Example
    /// ```text
    /// a: &a [x, x]
    /// b: &b [*a, *a]
    /// c: &c [*b, *b]   # ... and so on
    /// ```
    pub static RULE = {
        code: "P010",
        name: "yaml-too-complex",
        level: Error,
        fixable: false,
        check: Check::Emitted,
    }
}
