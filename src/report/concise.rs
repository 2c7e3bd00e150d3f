//! `path:line:col: CODE [*] message`, one line a finding; `[*]` marks a fixable one.

use std::fmt::Write;

use super::Sources;
use crate::diagnostic::Diagnostic;

/// Render one line per diagnostic.
pub fn render(diagnostics: &[Diagnostic], _sources: &Sources<'_>) -> String {
    let mut out = String::new();
    for d in diagnostics {
        let fixable = if d.fix.is_some() { "[*] " } else { "" };
        let _ = writeln!(
            out,
            "{}:{}:{}: {} {}{}",
            d.path.display(),
            d.line,
            d.column,
            d.code,
            fixable,
            d.message
        );
    }
    out
}
