//! `_index.md`: rendered from `templates/_index.md.j2`, deterministic byte for byte.
//!
//! The template is built in and can be overridden by the bank's own `templates/_index.md.j2`.
//! Its context is `lessons` (a list of [`Entry`], sorted by slug then path) and `counts`
//! ([`Counts`]); the filter `cell` makes a value safe for a markdown table cell.

use std::fmt::Write as _;
use std::path::Path;

use rayon::prelude::*;
use serde::Serialize;

use crate::bank::{Bank, BankError, Status};
use crate::document::Document;
use crate::lesson::Lesson;
use crate::template::{Template, TemplateError};

/// The template's file name (built in, or in the bank's `templates/`).
pub const TEMPLATE: &str = "_index.md.j2";
/// The built-in template.
pub const BUILTIN_TEMPLATE: &str = include_str!("../templates/_index.md.j2");

/// `_index.md` could not be rendered.
#[derive(Debug, thiserror::Error)]
pub enum IndexError {
    /// The template could not be read, parsed or rendered.
    #[error(transparent)]
    Template(#[from] TemplateError),
}

/// One lesson as the index shows it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Entry {
    /// The lesson's slug.
    pub slug: String,
    /// The file, relative to the bank, with `/` separators.
    pub path: String,
    /// `[slug](path)`, escaped for a table cell.
    pub link: String,
    /// The title as written.
    pub title: String,
    /// `success`, `failure` or `mixed`.
    pub outcome: String,
    /// Confidence with two decimals (`0.50` when absent).
    pub confidence: String,
    /// `success_count` (0 when absent).
    pub success_count: u64,
    /// `failure_count` (0 when absent).
    pub failure_count: u64,
    /// `active`, `superseded by x, y` or `expired`.
    pub status: String,
    /// `active`, `superseded` or `expired`.
    pub state: &'static str,
    /// The slugs of the lessons that supersede this one, sorted.
    pub superseded_by: Vec<String>,
}

/// How many lessons there are, by status.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Counts {
    /// Every lesson.
    pub total: usize,
    /// Active lessons.
    pub active: usize,
    /// Superseded lessons.
    pub superseded: usize,
    /// Expired (and not superseded) lessons.
    pub expired: usize,
}

#[derive(Serialize)]
struct Context {
    lessons: minijinja::Value,
    counts: Counts,
}

/// The entries as a template sequence whose items become template values one at a time, as the
/// template reaches them: a bank of 100,000 lessons is never held as a tree of values.
#[derive(Debug)]
struct Lazy(Vec<Entry>);

impl minijinja::value::Object for Lazy {
    fn repr(self: &std::sync::Arc<Self>) -> minijinja::value::ObjectRepr {
        minijinja::value::ObjectRepr::Seq
    }

    fn get_value(self: &std::sync::Arc<Self>, key: &minijinja::Value) -> Option<minijinja::Value> {
        let entry = self.0.get(key.as_usize()?)?;
        Some(minijinja::Value::from_serialize(entry))
    }

    fn enumerate(self: &std::sync::Arc<Self>) -> minijinja::value::Enumerator {
        minijinja::value::Enumerator::Seq(self.0.len())
    }
}

/// A status as the index writes it.
pub fn status_text(status: &Status) -> String {
    match status {
        Status::Superseded(by) => format!("superseded by {}", by.join(", ")),
        other => other.label().to_string(),
    }
}

/// Every lesson of the bank as an index entry, sorted by slug, then path.
pub fn entries(bank: &Bank) -> Vec<Entry> {
    let mut entries: Vec<Entry> = bank
        .documents
        .par_iter()
        .filter_map(|doc| Some(entry(bank, doc, doc.lesson.as_ref()?)))
        .collect();
    entries.par_sort_unstable_by(|a, b| (&a.slug, &a.path).cmp(&(&b.slug, &b.path)));
    entries
}

fn entry(bank: &Bank, doc: &Document, lesson: &Lesson) -> Entry {
    let row = Row::new(&bank.root, doc, lesson, bank.now);
    let status = bank.status(lesson);
    row.into_entry(status)
}

/// What the index shows of one lesson before the rest of the bank is known (its status needs
/// every lesson's `supersedes`): a few short strings, where a loaded document holds its whole
/// model.
#[derive(Debug)]
struct Row {
    slug: String,
    path: String,
    title: String,
    outcome: &'static str,
    confidence: f64,
    success_count: u64,
    failure_count: u64,
    expired: bool,
    supersedes: Vec<String>,
}

impl Row {
    fn new(root: &Path, doc: &Document, lesson: &Lesson, now: jiff::Timestamp) -> Row {
        Row {
            slug: lesson.slug.value.clone(),
            path: relative_link(root, &doc.source.path),
            title: lesson.title.value.clone(),
            outcome: lesson.outcome.value.as_str(),
            confidence: lesson.confidence(),
            success_count: lesson.successes(),
            failure_count: lesson.failures(),
            expired: lesson.is_expired(now),
            supersedes: lesson.supersedes.iter().map(|s| s.value.clone()).collect(),
        }
    }

    fn into_entry(self, status: Status) -> Entry {
        let superseded_by = match &status {
            Status::Superseded(by) => by.clone(),
            _ => Vec::new(),
        };
        Entry {
            link: link(&self.slug, &self.path),
            slug: self.slug,
            path: self.path,
            title: self.title,
            outcome: self.outcome.to_string(),
            confidence: format!("{:.2}", self.confidence),
            success_count: self.success_count,
            failure_count: self.failure_count,
            status: status_text(&status),
            state: status.label(),
            superseded_by,
        }
    }
}

/// The bank at `root` and its index entries (sorted as [`entries`] sorts them), read without
/// holding any lesson's model: each file becomes a [`Row`] as it is parsed. The bank has no
/// documents (see [`Bank::scan`]); it is there for its root, configuration and `_index.md`.
/// On the 100,000-lesson bench bank this halves `lesson index`'s peak memory (170 MiB, from 404).
pub fn scan(root: &Path, now: jiff::Timestamp) -> Result<(Bank, Vec<Entry>), BankError> {
    let (bank, rows) = Bank::scan(root, now, |_, doc| {
        let lesson = doc.lesson.as_ref()?;
        Some(Row::new(root, &doc, lesson, now))
    })?;
    // the same statuses as [`Bank::status`] gives: superseded (by the sorted slugs of every
    // lesson naming it, itself aside) wins over expired
    let mut superseded_by: foldhash::HashMap<&str, Vec<&str>> = foldhash::HashMap::default();
    for row in &rows {
        for old in &row.supersedes {
            if *old != row.slug {
                superseded_by
                    .entry(old.as_str())
                    .or_default()
                    .push(row.slug.as_str());
            }
        }
    }
    for by in superseded_by.values_mut() {
        by.sort_unstable();
        by.dedup();
    }
    let statuses: Vec<Status> = rows
        .iter()
        .map(|row| match superseded_by.get(row.slug.as_str()) {
            Some(by) => Status::Superseded(by.iter().map(|s| s.to_string()).collect()),
            None if row.expired => Status::Expired,
            None => Status::Active,
        })
        .collect();
    drop(superseded_by);
    let mut entries: Vec<Entry> = rows
        .into_par_iter()
        .zip(statuses)
        .map(|(row, status)| row.into_entry(status))
        .collect();
    entries.par_sort_unstable_by(|a, b| (&a.slug, &a.path).cmp(&(&b.slug, &b.path)));
    Ok((bank, entries))
}

/// `[slug](path)` as an entry's `link`: the slug escaped for link text, the path
/// percent-encoded, the whole made safe for a table cell.
pub fn link(slug: &str, path: &str) -> String {
    crate::template::table_cell(&format!(
        "[{}]({})",
        escape_link_text(slug),
        encode_link_target(path)
    ))
}

/// A lesson file's path relative to the bank root, with `/` separators.
pub fn relative_link(root: &Path, path: &Path) -> String {
    // the common case, `<root>/<name>` in UTF-8 on a `/` system, without walking components
    if let (Some(full), Some(root)) = (path.to_str(), root.to_str()) {
        if let Some(rest) = full.strip_prefix(root).and_then(|r| r.strip_prefix('/')) {
            if std::path::MAIN_SEPARATOR == '/'
                && !rest.starts_with('/')
                && !rest.contains("/./")
                && !rest.starts_with("./")
            {
                return rest.to_string();
            }
        }
    }
    let rel = path.strip_prefix(root).unwrap_or(path);
    rel.components()
        .map(|c| c.as_os_str().to_string_lossy())
        .collect::<Vec<_>>()
        .join("/")
}

fn escape_link_text(s: &str) -> String {
    if !s.bytes().any(|b| matches!(b, b'[' | b']' | b'\\')) {
        return s.to_string();
    }
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if matches!(c, '[' | ']' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// Percent-encode every byte of a relative path but unreserved characters and `/`.
fn encode_link_target(path: &str) -> String {
    if path.bytes().all(unreserved) {
        return path.to_string();
    }
    let mut out = String::with_capacity(path.len());
    for b in path.bytes() {
        if unreserved(b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

fn unreserved(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~' | b'/')
}

/// Count entries by status.
pub fn counts(entries: &[Entry]) -> Counts {
    let mut c = Counts {
        total: entries.len(),
        ..Counts::default()
    };
    for e in entries {
        match e.state {
            "active" => c.active += 1,
            "superseded" => c.superseded += 1,
            _ => c.expired += 1,
        }
    }
    c
}

/// Render `_index.md` for the bank, with the bank's template override when it has one.
pub fn render(bank: &Bank) -> Result<String, IndexError> {
    let template = Template::load(&bank.root, TEMPLATE, BUILTIN_TEMPLATE)?;
    render_with(bank, &template)
}

/// Render `_index.md` with a given template.
pub fn render_with(bank: &Bank, template: &Template) -> Result<String, IndexError> {
    render_entries(template, entries(bank), true)
}

/// Render `lessons` (sorted by slug, then path, as [`entries`] makes them; a watcher makes them
/// from its index) with `template`. `direct` lets the built-in template be written without the
/// template engine; the tests turn it off to hold the two to the same bytes.
pub fn render_entries(
    template: &Template,
    lessons: Vec<Entry>,
    direct: bool,
) -> Result<String, IndexError> {
    let counts = counts(&lessons);
    if direct && template.path.is_none() && template.is_source(BUILTIN_TEMPLATE) {
        return Ok(render_builtin(&lessons, counts));
    }
    Ok(template.render(Context {
        lessons: minijinja::Value::from_object(Lazy(lessons)),
        counts,
    })?)
}

/// What the built-in template renders, written directly: the same bytes (the tests compare
/// the two on every fixture bank and on generated ones), with the rows written in parallel.
/// A bank of 100,000 lessons spends most of `lesson index` in the template engine otherwise.
fn render_builtin(lessons: &[Entry], counts: Counts) -> String {
    // the template's text up to its first tag: the title and the comment
    let head = BUILTIN_TEMPLATE
        .split("{{")
        .next()
        .expect("split yields a first piece");
    let mut out = String::with_capacity(head.len() + 512 + lessons.len() * 192);
    out.push_str(head);
    let _ = writeln!(
        out,
        "{} lesson{}: {} active, {} superseded, {} expired.",
        counts.total,
        if counts.total == 1 { "" } else { "s" },
        counts.active,
        counts.superseded,
        counts.expired
    );
    if lessons.is_empty() {
        out.push_str("\nNo lessons yet: add one with `lesson new`.\n");
        return out;
    }
    out.push_str("\n| slug | title | outcome | confidence | successes | failures | status |\n");
    out.push_str("| --- | --- | --- | ---: | ---: | ---: | --- |\n");
    let rows: Vec<String> = lessons
        .par_chunks(1024)
        .map(|chunk| {
            let mut rows = String::with_capacity(chunk.len() * 192);
            for l in chunk {
                let _ = writeln!(
                    rows,
                    "| {} | {} | {} | {} | {} | {} | {} |",
                    l.link,
                    crate::template::table_cell(&l.title),
                    l.outcome,
                    l.confidence,
                    l.success_count,
                    l.failure_count,
                    crate::template::table_cell(&l.status)
                );
            }
            rows
        })
        .collect();
    for chunk in rows {
        out.push_str(&chunk);
    }
    out
}

/// Whether the bank's `_index.md` exists and equals `rendered`.
pub fn is_current(bank: &Bank, rendered: &str) -> bool {
    bank.index.as_ref().is_some_and(|s| s.text == rendered)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn link_targets_are_encoded_and_texts_escaped() {
        assert_eq!(encode_link_target("sub/a b(1).md"), "sub/a%20b%281%29.md");
        assert_eq!(escape_link_text("a[b]"), "a\\[b\\]");
    }

    #[test]
    fn builtin_template_renders_an_empty_bank() {
        let dir = tempfile::tempdir().unwrap();
        let bank =
            Bank::load_with(dir.path(), &Default::default(), jiff::Timestamp::UNIX_EPOCH).unwrap();
        let out = render(&bank).unwrap();
        assert!(out.contains("0 lessons: 0 active, 0 superseded, 0 expired.\n"));
        assert!(out.ends_with("No lessons yet: add one with `lesson new`.\n"));
    }
}
