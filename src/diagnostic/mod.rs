//! Diagnostics, their severities and fixes (span edits on the original bytes).

use std::ops::Range;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::source::Source;

/// How serious a finding is. Ordered: `Info < Warning < Error`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// Worth knowing; never fails a run.
    Info,
    /// Probably wrong; fails nothing unless configured as an error.
    Warning,
    /// Wrong; `lesson lint` exits 1.
    Error,
}

impl Severity {
    /// The lowercase name used in every output format.
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Info => "info",
            Severity::Warning => "warning",
            Severity::Error => "error",
        }
    }
}

/// Whether a fix may be applied without a human looking.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Applicability {
    /// Applied only with `--unsafe-fixes`: it may change meaning.
    Unsafe,
    /// Applied by `--fix`: it keeps the meaning.
    Safe,
}

/// Replace `range` of a file's bytes with `content`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Edit {
    /// Byte range in the file the diagnostic names (empty for an insertion).
    pub range: Range<usize>,
    /// The new text.
    pub content: String,
}

impl Edit {
    /// Replace a range.
    pub fn replace(range: Range<usize>, content: impl Into<String>) -> Self {
        Edit {
            range,
            content: content.into(),
        }
    }

    /// Insert at an offset.
    pub fn insert(at: usize, content: impl Into<String>) -> Self {
        Edit::replace(at..at, content)
    }

    /// Delete a range.
    pub fn delete(range: Range<usize>) -> Self {
        Edit::replace(range, "")
    }
}

/// A set of edits that together resolve one diagnostic.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Fix {
    /// What the fix does, imperative ("rename `supercedes` to `supersedes`").
    pub message: String,
    /// Safe or unsafe.
    pub applicability: Applicability,
    /// Non-overlapping edits, sorted by start.
    pub edits: Vec<Edit>,
}

impl Fix {
    /// A fix that keeps the lesson's meaning.
    pub fn safe(message: impl Into<String>, edits: Vec<Edit>) -> Self {
        Fix::new(message, Applicability::Safe, edits)
    }

    /// A fix that may change the lesson's meaning.
    pub fn unsafe_(message: impl Into<String>, edits: Vec<Edit>) -> Self {
        Fix::new(message, Applicability::Unsafe, edits)
    }

    fn new(message: impl Into<String>, applicability: Applicability, mut edits: Vec<Edit>) -> Self {
        edits.sort_by_key(|e| (e.range.start, e.range.end));
        Fix {
            message: message.into(),
            applicability,
            edits,
        }
    }
}

/// One finding, pointing at a byte range of one file.
#[derive(Debug, Clone, PartialEq)]
pub struct Diagnostic {
    /// The rule's stable code, e.g. `S006`.
    pub code: &'static str,
    /// The rule's kebab-case name, e.g. `invalid-slug`.
    pub name: &'static str,
    /// Severity after configuration.
    pub severity: Severity,
    /// What is wrong, in one line, without a trailing period.
    pub message: String,
    /// An optional second line: how to fix it by hand, or what else to know.
    pub help: Option<String>,
    /// The file, as shown to the user.
    pub path: PathBuf,
    /// Byte range in the file.
    pub range: Range<usize>,
    /// 1-based start line.
    pub line: usize,
    /// 1-based start column, in characters.
    pub column: usize,
    /// 1-based end line.
    pub end_line: usize,
    /// 1-based end column (exclusive), in characters.
    pub end_column: usize,
    /// A fix, if the rule has one.
    pub fix: Option<Fix>,
}

impl Diagnostic {
    /// A diagnostic for `range` of `source`. Positions are computed from the source's line index.
    pub fn new(
        rule: &crate::lint::Rule,
        source: &Source,
        range: Range<usize>,
        message: impl Into<String>,
    ) -> Self {
        let ((line, column), (end_line, end_column)) = source.range_positions(&range);
        Diagnostic {
            code: rule.code,
            name: rule.name,
            severity: rule.default_level,
            message: message.into(),
            help: None,
            path: source.path.clone(),
            range,
            line,
            column,
            end_line,
            end_column,
            fix: None,
        }
    }

    /// Work out the line and column of the range again, in `source` (the text of the file it
    /// points into, read again).
    pub(crate) fn place_in(&mut self, source: &Source) {
        let ((line, column), (end_line, end_column)) = source.range_positions(&self.range);
        (self.line, self.column, self.end_line, self.end_column) =
            (line, column, end_line, end_column);
    }

    /// Attach a help line.
    pub fn with_help(mut self, help: impl Into<String>) -> Self {
        self.help = Some(help.into());
        self
    }

    /// Attach a fix.
    pub fn with_fix(mut self, fix: Fix) -> Self {
        self.fix = Some(fix);
        self
    }

    /// Sort key: path, position, code.
    pub fn sort_key(&self) -> (&PathBuf, usize, usize, &'static str) {
        (&self.path, self.line, self.column, self.code)
    }
}

/// Apply non-overlapping edits to `text`. Edits that overlap an earlier one are skipped;
/// returns the new text and how many edits were applied.
pub fn apply_edits<'a>(text: &str, edits: impl IntoIterator<Item = &'a Edit>) -> (String, usize) {
    let mut edits: Vec<&Edit> = edits.into_iter().collect();
    edits.sort_by_key(|e| (e.range.start, e.range.end));
    let mut out = String::with_capacity(text.len());
    let mut pos = 0;
    let mut applied = 0;
    for edit in edits {
        if edit.range.start < pos || edit.range.end > text.len() {
            continue;
        }
        out.push_str(&text[pos..edit.range.start]);
        out.push_str(&edit.content);
        pos = edit.range.end;
        applied += 1;
    }
    out.push_str(&text[pos..]);
    (out, applied)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn apply_edits_skips_overlaps() {
        let edits = [
            Edit::replace(0..3, "ABC"),
            Edit::replace(2..4, "zz"),
            Edit::insert(6, "!"),
        ];
        assert_eq!(apply_edits("abcdef", &edits), ("ABCdef!".to_string(), 2));
    }
}
