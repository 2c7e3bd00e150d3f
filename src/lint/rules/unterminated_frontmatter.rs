//! `unterminated-frontmatter` (P006).

use crate::declare_rule;
use crate::lint::Check;

declare_rule! {
    /// The frontmatter's opening fence has no closing fence.
    ///
    /// ## What it does
    /// Reports a `---` opening line with no later `---` (or `...`) line.
    ///
    /// ## Why is this bad?
    /// Without a closing fence the whole file would be read as YAML, or the frontmatter silently ignored, depending on the tool.
    ///
    /// ## Example
    /// ```text
    /// ---
    /// schema: learning/v1
    /// slug: forgot-to-close
    /// ```
    pub static RULE = {
        code: "P006",
        name: "unterminated-frontmatter",
        level: Error,
        fixable: false,
        check: Check::Emitted,
    }
}
