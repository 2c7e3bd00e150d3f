//! `--output-format github`: GitHub Actions workflow commands, which the runner turns into
//! annotations on the pull request:
//!
//! ```text
//! ::error title=lesson (S006),file=lessons/x.md,line=3,col=7,endLine=3,endColumn=12::S006 message
//! ```
//!
//! `warning` stays `::warning`, `info` becomes `::notice`. `col` and `endColumn` are given only
//! for a span on one line (GitHub ignores them otherwise). Values are escaped as the runner
//! expects: `%`, CR and LF everywhere, and also `:` and `,` in properties.

use std::fmt::Write;

use super::slash_path;
use crate::diagnostic::{Diagnostic, Severity};

/// Render one workflow command per diagnostic.
pub fn render(diagnostics: &[Diagnostic]) -> String {
    let mut out = String::new();
    for d in diagnostics {
        let command = match d.severity {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Info => "notice",
        };
        let title = format!("lesson ({})", d.code);
        let _ = write!(
            out,
            "::{command} title={},file={},line={}",
            escape_property(&title),
            escape_property(&slash_path(&d.path)),
            d.line
        );
        if d.line == d.end_line {
            let _ = write!(
                out,
                ",col={},endLine={},endColumn={}",
                d.column, d.end_line, d.end_column
            );
        } else {
            let _ = write!(out, ",endLine={}", d.end_line);
        }
        let message = format!("{} {}", d.code, d.message);
        let _ = writeln!(out, "::{}", escape_data(&message));
    }
    out
}

/// Escape the message of a workflow command.
fn escape_data(text: &str) -> String {
    text.replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
}

/// Escape a `key=value` property of a workflow command.
fn escape_property(text: &str) -> String {
    escape_data(text).replace(':', "%3A").replace(',', "%2C")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_percent_first() {
        assert_eq!(escape_data("50%\r\n"), "50%25%0D%0A");
        assert_eq!(escape_property("a:b,c%"), "a%3Ab%2Cc%25");
    }
}
