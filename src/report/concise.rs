//! `path:line:col: CODE [*] message`, one line a finding; `[*]` marks one that `--fix` fixes
//! (a safe fix: as in ruff, an unsafe fix is not marked).

use std::fmt::Write;

use super::Sources;
use crate::diagnostic::{Applicability, Diagnostic};

/// Render one line per diagnostic.
pub fn render(diagnostics: &[Diagnostic], _sources: &Sources<'_>) -> String {
    let mut out = String::new();
    for d in diagnostics {
        let safe = d
            .fix
            .as_ref()
            .is_some_and(|fix| fix.applicability == Applicability::Safe);
        let fixable = if safe { "[*] " } else { "" };
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
