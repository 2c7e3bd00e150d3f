//! Renderers for diagnostics: full (annotated snippet), concise, json, github, sarif.

mod concise;

use std::collections::HashMap;
use std::path::Path;

use crate::bank::Bank;
use crate::diagnostic::Diagnostic;
use crate::source::Source;

/// An output format of `lesson lint`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Format {
    /// The source line with a caret under the span.
    #[default]
    Full,
    /// `path:line:col: CODE message`.
    Concise,
    /// A stable JSON array.
    Json,
    /// GitHub Actions workflow commands (`::error file=...::`).
    Github,
    /// SARIF 2.1.0.
    Sarif,
}

/// The sources diagnostics point into, by path.
pub struct Sources<'a> {
    map: HashMap<&'a Path, &'a Source>,
}

impl<'a> Sources<'a> {
    /// Every file of a bank, and its `_index.md`.
    pub fn of(bank: &'a Bank) -> Self {
        let mut map: HashMap<&Path, &Source> = bank
            .documents
            .iter()
            .map(|d| (d.source.path.as_path(), &d.source))
            .collect();
        if let Some(index) = &bank.index {
            map.insert(index.path.as_path(), index);
        }
        Sources { map }
    }

    /// The source of `path`, if it was read.
    pub fn get(&self, path: &Path) -> Option<&'a Source> {
        self.map.get(path).copied()
    }
}

/// Render diagnostics in a format.
pub fn render(format: Format, diagnostics: &[Diagnostic], sources: &Sources<'_>) -> String {
    match format {
        Format::Concise | Format::Full | Format::Json | Format::Github | Format::Sarif => {
            concise::render(diagnostics, sources)
        }
    }
}
