//! `invalid-utf8` (P003).

use crate::declare_rule;
use crate::lint::Check;

declare_rule! {
    /// A file is not valid UTF-8.
    ///
    /// ## What it does
    /// Reports the byte offset of the first byte that is not UTF-8.
    ///
    /// ## Why is this bad?
    /// YAML and markdown are text; a file in another encoding (often cp1252 from an old editor) is misread by every consumer.
    ///
    /// ## Example
    /// ```text
    /// lessons/x.md:3:12: P003 invalid UTF-8 at byte 40
    /// ```
    pub static RULE = {
        code: "P003",
        name: "invalid-utf8",
        level: Error,
        fixable: false,
        check: Check::Emitted,
    }
}
