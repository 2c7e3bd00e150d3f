//! `yaml-syntax` (P008).

use crate::declare_rule;
use crate::lint::Check;

declare_rule! {
    /// The frontmatter is not valid YAML.
    ///
    /// ## What it does
    /// Reports the position where the YAML parser gave up, with its message.
    ///
    /// ## Why is this bad?
    /// Invalid YAML cannot be read by any runtime. A frequent cause is an unquoted value that starts with `*` or contains `: `.
    ///
    /// ## Example
    /// ```text
    /// ---
    /// globs: **/*.rs
    /// ---
    /// ```
    pub static RULE = {
        code: "P008",
        name: "yaml-syntax",
        level: Error,
        fixable: false,
        check: Check::Emitted,
    }
}
