//! `frontmatter-not-mapping` (P011).

use crate::declare_rule;
use crate::lint::Check;

declare_rule! {
    /// The frontmatter is empty or not a mapping.
    ///
    /// ## What it does
    /// Reports frontmatter that is empty, a scalar or a sequence.
    ///
    /// ## Why is this bad?
    /// A lesson's frontmatter is a mapping of fields (schema, slug, title, ...).
    ///
    /// ## Example
    /// ```text
    /// ---
    /// - just
    /// - a list
    /// ---
    /// ```
    pub static RULE = {
        code: "P011",
        name: "frontmatter-not-mapping",
        level: Error,
        fixable: false,
        check: Check::Emitted,
    }
}
