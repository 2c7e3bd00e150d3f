//! `non-yaml-frontmatter` (P007).

use crate::declare_rule;
use crate::lint::Check;

declare_rule! {
    /// The frontmatter is not YAML (TOML `+++` or `---json`).
    ///
    /// ## What it does
    /// Reports frontmatter fenced with `+++` (TOML, as Hugo and Zola write it) or tagged with another language.
    ///
    /// ## Why is this bad?
    /// AIP-11 frontmatter is YAML between `---` fences; other languages are not read by AIP-11 runtimes.
    ///
    /// ## Example
    /// ```text
    /// +++
    /// title = "not yaml"
    /// +++
    /// ```
    pub static RULE = {
        code: "P007",
        name: "non-yaml-frontmatter",
        level: Error,
        fixable: false,
        check: Check::Emitted,
    }
}
