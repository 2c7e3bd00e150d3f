//! `--output-format json`: a stable JSON array, one object per finding, for scripts and CI.
//!
//! The output is pretty-printed and ends with a newline; findings are sorted by path, position
//! and code. No finding prints `[]`. Each object has exactly these keys, in this order:
//!
//! | key          | type             | meaning                                                   |
//! |--------------|------------------|-----------------------------------------------------------|
//! | `code`       | string           | the rule's stable code, e.g. `"P008"`                     |
//! | `name`       | string           | the rule's kebab-case name, e.g. `"yaml-syntax"`          |
//! | `severity`   | string           | `"error"`, `"warning"` or `"info"` (after configuration)  |
//! | `message`    | string           | what is wrong, one line                                   |
//! | `help`       | string or null   | how to fix it by hand, or what else to know               |
//! | `path`       | string           | the file as given on the command line, `/`-separated (1)  |
//! | `line`       | integer          | 1-based start line                                        |
//! | `column`     | integer          | 1-based start column, in Unicode scalar values            |
//! | `end_line`   | integer          | 1-based end line                                          |
//! | `end_column` | integer          | 1-based end column, exclusive                             |
//! | `fix`        | object or null   | a fix, below                                              |
//!
//! (1) A path that is not valid UTF-8 (a file name with a byte such as `0xE9` of Latin-1) has
//! each byte of its invalid sequences, and each `%`, written as `%XX` in upper-case hex:
//! `caf%E9.md` is the file whose name is the bytes `caf`, `0xE9`, `.md`. A valid UTF-8 path is
//! written as it is.
//!
//! A `fix` is `{ "message", "applicability", "edits" }`: `applicability` is `"safe"` (applied by
//! `--fix`) or `"unsafe"` (only with `--unsafe-fixes`), and each edit replaces the text between
//! two positions of the finding's file with `content`:
//!
//! ```json
//! { "content": "supersedes", "location": { "line": 4, "column": 1 },
//!   "end_location": { "line": 4, "column": 11 } }
//! ```
//!
//! An insertion has `location == end_location`; an edit to a file that does not exist yet (an
//! `_index.md` the fix creates) is at 1:1. Positions count like `line`/`column` above.
//! A finding that has no position of its own (an unreadable file) is at 1:1.

use serde::Serialize;

use super::{edit_positions, json_path, Sources};
use crate::diagnostic::{Applicability, Diagnostic, Severity};

#[derive(Serialize)]
pub(crate) struct JsonDiagnostic<'a> {
    code: &'a str,
    name: &'a str,
    severity: Severity,
    message: &'a str,
    help: Option<&'a str>,
    path: String,
    line: usize,
    column: usize,
    end_line: usize,
    end_column: usize,
    fix: Option<JsonFix<'a>>,
}

#[derive(Serialize)]
struct JsonFix<'a> {
    message: &'a str,
    applicability: Applicability,
    edits: Vec<JsonEdit<'a>>,
}

#[derive(Serialize)]
struct JsonEdit<'a> {
    content: &'a str,
    location: Location,
    end_location: Location,
}

#[derive(Serialize)]
struct Location {
    line: usize,
    column: usize,
}

impl From<(usize, usize)> for Location {
    fn from((line, column): (usize, usize)) -> Self {
        Location { line, column }
    }
}

/// Render the array described in the module docs.
pub fn render(diagnostics: &[Diagnostic], sources: &Sources<'_>) -> String {
    let items: Vec<JsonDiagnostic<'_>> = diagnostics
        .iter()
        .map(|d| json_diagnostic(d, sources))
        .collect();
    let mut out = serde_json::to_string_pretty(&items).unwrap_or_else(|_| "[]".to_string());
    out.push('\n');
    out
}

/// The objects of the array, for a view that embeds findings (`lesson diff --format json`).
pub(crate) fn objects<'a>(
    diagnostics: &'a [Diagnostic],
    sources: &Sources<'_>,
) -> Vec<JsonDiagnostic<'a>> {
    diagnostics
        .iter()
        .map(|d| json_diagnostic(d, sources))
        .collect()
}

fn json_diagnostic<'a>(d: &'a Diagnostic, sources: &Sources<'_>) -> JsonDiagnostic<'a> {
    let source = sources.get(&d.path);
    JsonDiagnostic {
        code: d.code,
        name: d.name,
        severity: d.severity,
        message: &d.message,
        help: d.help.as_deref(),
        path: json_path(&d.path),
        line: d.line,
        column: d.column,
        end_line: d.end_line,
        end_column: d.end_column,
        fix: d.fix.as_ref().map(|fix| JsonFix {
            message: &fix.message,
            applicability: fix.applicability,
            edits: fix
                .edits
                .iter()
                .map(|edit| {
                    let (start, end) = edit_positions(source, &edit.range);
                    JsonEdit {
                        content: &edit.content,
                        location: start.into(),
                        end_location: end.into(),
                    }
                })
                .collect(),
        }),
    }
}
