//! Diagnostics, their severities and fixes (span edits on the original bytes).
//!
//! This is the bottom of the lint layer: a rule's identity ([`RuleId`]) lives here, and
//! `lint::Rule` holds one, so nothing here imports `lint`.

mod edit;

use std::ops::Range;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::source::Source;

pub use edit::{apply_edits, Edit};

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

/// Who a diagnostic comes from: a rule's stable code, its kebab-case name and its level unless
/// `lesson.toml` says otherwise. `lint::Rule` holds one, with the rule's docs and check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RuleId {
    /// Stable code, e.g. `S006`. Never reused.
    pub code: &'static str,
    /// Kebab-case name, e.g. `invalid-slug`.
    pub name: &'static str,
    /// Level unless `lesson.toml` says otherwise.
    pub default_level: Severity,
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
        rule: &RuleId,
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
