//! Renderers for diagnostics: full (annotated snippet), concise, json, github, sarif.
//!
//! Every renderer is a pure function of the diagnostics and the sources they point into: none
//! touches the terminal, and the caller decides about colour through [`RenderOptions`].

mod concise;
pub mod diff;
pub mod envelope;
mod full;
mod github;
pub mod hits;
pub mod json;
pub mod lessons;
pub mod log;
pub mod pairs;
pub mod review;
pub mod rules;
mod sarif;
pub mod writes;

use std::collections::HashMap;
use std::path::Path;

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
    /// A stable JSON array; the schema is in [`json`].
    Json,
    /// GitHub Actions workflow commands (`::error file=...::`).
    Github,
    /// SARIF 2.1.0.
    Sarif,
}

/// How to render, beyond the format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RenderOptions {
    /// ANSI colours in the full format (the caller checks for a terminal and `NO_COLOR`).
    pub color: bool,
}

/// The sources diagnostics point into, by path: collected from the files a caller holds (for
/// a bank, [`crate::Bank::sources`] or [`crate::Bank::sources_for`]).
#[derive(Default)]
pub struct Sources<'a> {
    map: HashMap<&'a Path, &'a Source>,
}

impl<'a> Sources<'a> {
    /// The source of `path`, if it was read.
    pub fn get(&self, path: &Path) -> Option<&'a Source> {
        self.map.get(path).copied()
    }
}

impl<'a> FromIterator<&'a Source> for Sources<'a> {
    fn from_iter<I: IntoIterator<Item = &'a Source>>(iter: I) -> Self {
        Sources {
            map: iter.into_iter().map(|s| (s.path.as_path(), s)).collect(),
        }
    }
}

/// Render diagnostics in a format.
pub fn render(
    format: Format,
    diagnostics: &[Diagnostic],
    sources: &Sources<'_>,
    options: RenderOptions,
) -> String {
    match format {
        Format::Full => full::render(diagnostics, sources, options),
        Format::Concise => concise::render(diagnostics, sources),
        Format::Json => json::render(diagnostics, sources),
        Format::Github => github::render(diagnostics),
        Format::Sarif => sarif::render(diagnostics, sources),
    }
}

/// A path as shown in machine formats: as given, with `/` separators on every platform.
fn slash_path(path: &Path) -> String {
    let shown = path.display().to_string();
    if cfg!(windows) {
        shown.replace('\\', "/")
    } else {
        shown
    }
}

/// A path as the JSON format writes it: [`slash_path`] when the path is valid UTF-8; else each
/// byte of an invalid sequence, and each `%`, as `%XX` (upper-case hex), so the exact bytes of
/// the name can be read back (and the name is not shown as some other file's).
fn json_path(path: &Path) -> String {
    if path.to_str().is_some() {
        return slash_path(path);
    }
    let bytes = path.as_os_str().as_encoded_bytes();
    let mut out = String::with_capacity(bytes.len() + 8);
    for chunk in bytes.utf8_chunks() {
        for c in chunk.valid().chars() {
            match c {
                '%' => out.push_str("%25"),
                '\\' if cfg!(windows) => out.push('/'),
                c => out.push(c),
            }
        }
        for b in chunk.invalid() {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The 1-based (line, column) of each end of a fix edit in `source`; 1:1 for a file that has
/// no source yet (an `_index.md` a fix creates) or could not be read.
fn edit_positions(
    source: Option<&Source>,
    range: &std::ops::Range<usize>,
) -> ((usize, usize), (usize, usize)) {
    match source {
        Some(source) => source.range_positions(range),
        None => ((1, 1), (1, 1)),
    }
}

/// An aligned table for people: every column but the last padded to its widest cell (counted
/// in characters) and two spaces, the last as it is, lines trimmed at the end.
pub(crate) fn aligned<R: AsRef<[String]>>(header: &[String], rows: &[R]) -> String {
    let n = header.len();
    let mut widths = vec![0usize; n];
    for row in std::iter::once(header).chain(rows.iter().map(AsRef::as_ref)) {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    for row in std::iter::once(header).chain(rows.iter().map(AsRef::as_ref)) {
        let mut line = String::new();
        for (i, cell) in row.iter().enumerate() {
            line.push_str(cell);
            if i + 1 < n {
                line.push_str(&" ".repeat(widths[i] - cell.chars().count() + 2));
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}
