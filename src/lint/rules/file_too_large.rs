//! `file-too-large` (P002).

use crate::declare_rule;
use crate::lint::Check;

declare_rule! {
    /// A file is larger than the configured size limit.
    ///
    /// ## What it does
    /// Reports a file larger than `[lint] size-limit` (default 1 MiB) without reading it.
    ///
    /// ## Why is this bad?
    /// A lesson is a short distilled heuristic; a file that size is a mistake (a pasted log, a binary) and would bloat every prompt it is injected into.
    ///
    /// ## Example
    /// ```text
    /// lessons/x.md:1:1: P002 file is 5242880 bytes, over the 1048576-byte limit
    /// ```
    pub static RULE = {
        code: "P002",
        name: "file-too-large",
        level: Error,
        fixable: false,
        check: Check::Emitted,
    }
}
