//! `missing-frontmatter` (P005).

use crate::declare_rule;
use crate::lint::Check;

declare_rule! {
    /// A lesson file has no YAML frontmatter.
    ///
    /// ## What it does
    /// Reports a markdown file in the bank that does not start with a `---` fence.
    ///
    /// ## Why is this bad?
    /// Every AIP-11 lesson starts with YAML frontmatter holding its schema, slug, trigger and evidence; without it the file is not a lesson.
    ///
    /// ## Example
    /// ```text
    /// # Just a heading
    ///
    /// Some text that is not a lesson.
    /// ```
    pub static RULE = {
        code: "P005",
        name: "missing-frontmatter",
        level: Error,
        fixable: false,
        check: Check::Emitted,
    }
}
