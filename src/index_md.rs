//! `_index.md`: rendered from `templates/_index.md.j2`, deterministic byte for byte.
//!
//! The template is built in and can be overridden by the bank's own `templates/_index.md.j2`.
//! Its context is `lessons` (a list of [`IndexEntry`], sorted by slug then path) and `counts`
//! ([`StatusCounts`]); the filter `cell` makes a value safe for a markdown table cell.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use rayon::prelude::*;
use serde::Serialize;

use crate::bank::{Bank, BankError, ErrorCheck, Status};
use crate::document::Document;
use crate::edit::{write_atomic, BankLock, EditError};
use crate::lesson::Lesson;
use crate::template::{Template, TemplateError};

/// The template's file name (built in, or in the bank's `templates/`).
pub const TEMPLATE: &str = "_index.md.j2";
/// The built-in template.
pub const BUILTIN_TEMPLATE: &str = include_str!("../templates/_index.md.j2");

/// `_index.md` could not be rendered or written.
#[derive(Debug, thiserror::Error)]
pub enum IndexError {
    /// The template could not be read, parsed or rendered.
    #[error(transparent)]
    Template(#[from] TemplateError),
    /// The bank's lock could not be taken.
    #[error("cannot lock the bank at {path}")]
    Lock {
        /// The bank.
        path: String,
        /// Why.
        #[source]
        source: EditError,
    },
    /// The bank could not be read.
    #[error("cannot load the bank at {path}")]
    Load {
        /// The bank.
        path: String,
        /// Why.
        #[source]
        source: BankError,
    },
    /// The bank is missing.
    #[error(transparent)]
    Bank(#[from] BankError),
    /// The file could not be written.
    #[error(transparent)]
    Edit(#[from] EditError),
}

/// One lesson as the index shows it.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct IndexEntry {
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
    /// Retrieval figures ([`crate::usage`]), filled in only for a template that names one of
    /// them ([`USAGE_VARIABLES`]); 0 and none otherwise. Runs whose logged searches showed it.
    pub shown: u64,
    /// When a logged search last showed it (RFC 3339, UTC).
    pub last_shown: Option<String>,
    /// Runs among those that followed it.
    pub followed: u64,
    /// Followed runs that succeeded.
    pub helped: u64,
    /// `helped / shown` (4 decimals), none while never shown.
    pub utility: Option<f64>,
}

/// The variables of each lesson an `_index.md` template can use for its retrieval figures.
/// The built-in template uses none (a logged search would make `_index.md`, which goes into
/// git, stale); a bank's own template that names one of them is given the figures of the
/// retrieval log as it is when `_index.md` is rendered (`lesson index`, a writer, a watcher's
/// change of lessons), never by a search.
pub const USAGE_VARIABLES: [&str; 5] = ["shown", "last_shown", "followed", "helped", "utility"];

/// Fill in `entries`' retrieval figures from the bank at `root` when `template` names one.
fn fill_usage(root: &Path, template: &Template, entries: &mut [IndexEntry]) {
    if !USAGE_VARIABLES.iter().any(|v| template.mentions(v)) {
        return;
    }
    let Ok((figures, _)) = crate::usage::figures(root) else {
        return;
    };
    for e in entries {
        if let Some(u) = figures.get(&e.slug) {
            e.shown = u.shown;
            e.last_shown = u.last_shown.map(|t| t.to_string());
            e.followed = u.followed;
            e.helped = u.helped;
            e.utility = u.utility().map(|x| (x * 1e4).round() / 1e4);
        }
    }
}

/// How many lessons there are, by status.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct StatusCounts {
    /// Every lesson.
    pub total: usize,
    /// Active lessons.
    pub active: usize,
    /// Superseded lessons.
    pub superseded: usize,
    /// Expired (and neither superseded nor quarantined) lessons.
    pub expired: usize,
    /// Quarantined (and not superseded) lessons: `metadata.lesson.quarantine`.
    pub quarantined: usize,
}

#[derive(Serialize)]
struct Context {
    lessons: minijinja::Value,
    counts: StatusCounts,
}

/// The entries as a template sequence whose items become template values one at a time, as the
/// template reaches them: a bank of 100,000 lessons is never held as a tree of values.
#[derive(Debug)]
struct Lazy(Vec<IndexEntry>);

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
        Status::Quarantined(rules) if !rules.is_empty() => {
            format!("quarantined ({})", rules.join(", "))
        }
        other => other.label().to_string(),
    }
}

/// Every lesson of the bank as an index entry, sorted by slug, then path. A file with an
/// error-level finding of its own is left out ([`left_out`]).
pub fn entries(bank: &Bank) -> Vec<IndexEntry> {
    rows(bank).into_par_iter().map(Row::into_entry).collect()
}

/// Every lesson of the bank as a row with its status, sorted by slug, then path. The rows
/// borrow the lessons' slugs and titles.
fn rows(bank: &Bank) -> Vec<Row<'_>> {
    // the lessons first, so that the rows are written in place into one vector of the exact
    // size (a filtered parallel collection grows vectors piece by piece, then joins them)
    let lessons: Vec<(&Document, &Lesson)> = bank
        .lessons()
        .filter(|(doc, _)| !doc.has_file_errors())
        .collect();
    let mut rows: Vec<Row> = lessons
        .par_iter()
        .map(|&(doc, lesson)| Row {
            status: bank.status_of(doc).unwrap_or(Status::Active),
            ..Row::new(&bank.root, doc, lesson, bank.now)
        })
        .collect();
    sort(&mut rows);
    rows
}

/// The files of the bank that `_index.md` and `lesson list` leave out, relative to the bank
/// and sorted: those that do not parse into a lesson, or have an error-level finding of their
/// own ([`crate::lint::ErrorRules`]). `lesson lint` says why.
pub fn left_out(bank: &Bank) -> Vec<String> {
    let mut out: Vec<String> = bank
        .documents
        .iter()
        .filter(|doc| doc.is_left_out())
        .map(|doc| relative_link(&bank.root, &doc.source.path))
        .collect();
    out.sort();
    out
}

/// The stderr note of a command that left files out: `None` when it left none.
pub fn left_out_note(left_out: &[String]) -> Option<String> {
    match left_out.len() {
        0 => None,
        n => Some(format!(
            "note: {n} file{} left out (errors): {}; `lesson lint` says why",
            if n == 1 { "" } else { "s" },
            left_out.join(", ")
        )),
    }
}

fn sort(rows: &mut [Row]) {
    rows.par_sort_unstable_by(|a, b| (&a.slug, &a.path).cmp(&(&b.slug, &b.path)));
}

/// What the index shows of one lesson: a few short strings, where a loaded document holds its
/// whole model. Borrowed from a loaded lesson, or owned when read by [`scan`] (whose documents
/// are let go as they are parsed).
#[derive(Debug)]
struct Row<'a> {
    slug: Cow<'a, str>,
    path: String,
    title: Cow<'a, str>,
    outcome: &'static str,
    confidence: f64,
    success_count: u64,
    failure_count: u64,
    expired: bool,
    /// `metadata.lesson.quarantine`, when the lesson has it.
    quarantine: Option<Vec<String>>,
    /// What the row supersedes (kept by [`scan`] only, which works out the statuses itself).
    supersedes: Vec<String>,
    status: Status,
}

impl<'a> Row<'a> {
    fn new(root: &Path, doc: &Document, lesson: &'a Lesson, now: jiff::Timestamp) -> Row<'a> {
        Row {
            slug: Cow::Borrowed(&lesson.slug.value),
            path: relative_link(root, &doc.source.path),
            title: Cow::Borrowed(&lesson.title.value),
            outcome: lesson.outcome.value.as_str(),
            confidence: lesson.confidence(),
            success_count: lesson.successes(),
            failure_count: lesson.failures(),
            expired: lesson.is_expired(now),
            quarantine: lesson.quarantine.clone(),
            supersedes: Vec::new(),
            status: Status::Active,
        }
    }

    /// The row, owning its strings.
    fn owned(doc: &Document, lesson: &Lesson, root: &Path, now: jiff::Timestamp) -> Row<'static> {
        let row = Row::new(root, doc, lesson, now);
        Row {
            slug: Cow::Owned(row.slug.into_owned()),
            title: Cow::Owned(row.title.into_owned()),
            supersedes: lesson.supersedes.iter().map(|s| s.value.clone()).collect(),
            ..row
        }
    }

    /// A file that is no lesson: only its path counts.
    fn unparsed(path: String) -> Row<'static> {
        Row {
            slug: Cow::Borrowed(""),
            path,
            title: Cow::Borrowed(""),
            outcome: "",
            confidence: 0.0,
            success_count: 0,
            failure_count: 0,
            expired: false,
            quarantine: None,
            supersedes: Vec::new(),
            status: Status::Active,
        }
    }

    /// The row's status when `by` supersede it, as [`Status::of`] judges a lesson.
    fn status_with(&self, by: Vec<String>) -> Status {
        if !by.is_empty() {
            Status::Superseded(by)
        } else if let Some(rules) = &self.quarantine {
            Status::Quarantined(rules.clone())
        } else if self.expired {
            Status::Expired
        } else {
            Status::Active
        }
    }

    fn into_entry(self) -> IndexEntry {
        let superseded_by = match &self.status {
            Status::Superseded(by) => by.clone(),
            _ => Vec::new(),
        };
        IndexEntry {
            link: link(&self.slug, &self.path),
            slug: self.slug.into_owned(),
            path: self.path,
            title: self.title.into_owned(),
            outcome: self.outcome.to_string(),
            confidence: format!("{:.2}", self.confidence),
            success_count: self.success_count,
            failure_count: self.failure_count,
            status: status_text(&self.status),
            state: self.status.label(),
            superseded_by,
            shown: 0,
            last_shown: None,
            followed: 0,
            helped: 0,
            utility: None,
        }
    }
}

/// The index of a bank as [`scan`] reads it: one row per lesson, with its status, sorted by
/// slug, then path.
#[derive(Debug)]
pub struct Scanned {
    rows: Vec<Row<'static>>,
    left_out: Vec<String>,
    root: std::path::PathBuf,
}

impl Scanned {
    /// How many lessons there are.
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    /// Whether there is none.
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// The files left out ([`left_out`]), relative to the bank and sorted.
    pub fn left_out(&self) -> &[String] {
        &self.left_out
    }

    /// The rows as index entries (what a template sees).
    pub fn into_entries(self) -> Vec<IndexEntry> {
        self.rows.into_par_iter().map(Row::into_entry).collect()
    }

    /// Render `_index.md` with `template`.
    pub fn render(&self, template: &Template) -> Result<Rendered, IndexError> {
        render_rows(&self.root, template, &self.rows)
    }
}

/// The bank at `root` and its index rows, read without holding any lesson's model: each file
/// becomes a row as it is parsed. The bank has no documents (see [`Bank::scan`]); it is there
/// for its root and configuration, and has `_index.md` when `with_index` asks for it. On the
/// 100,000-lesson bench bank `lesson index --stdout` peaks at 89 MiB (404 when it loaded the
/// bank).
/// Files are judged by `check` (the linter's `lint::FileErrors`): one with errors of its own is
/// left out of the rows and named in [`Scanned::left_out`].
pub fn scan(
    root: &Path,
    now: jiff::Timestamp,
    with_index: bool,
    check: &dyn ErrorCheck,
) -> Result<(Bank, Scanned), BankError> {
    scan_with(root, now, with_index, check, &crate::progress::Silent)
}

/// [`scan`], telling `progress` the phase `reading` (one step per file, its total unknown).
pub fn scan_with(
    root: &Path,
    now: jiff::Timestamp,
    with_index: bool,
    check: &dyn ErrorCheck,
    progress: &dyn crate::progress::Progress,
) -> Result<(Bank, Scanned), BankError> {
    // a lesson left out for its errors still supersedes what it names, as in a loaded bank
    progress.begin("reading", None);
    let scanned = Bank::scan(root, now, with_index, check, |_, doc| {
        progress.advance(1);
        Some(match doc.lesson.as_ref() {
            Some(lesson) => (Row::owned(&doc, lesson, root, now), doc.has_file_errors()),
            None => (Row::unparsed(relative_link(root, &doc.source.path)), true),
        })
    });
    progress.end();
    let (bank, scanned) = scanned?;
    let mut rows = Vec::with_capacity(scanned.len());
    let mut errors = Vec::new();
    for (row, left_out) in scanned {
        if left_out {
            errors.push(row);
        } else {
            rows.push(row);
        }
    }
    // the same statuses as [`Bank::status`] gives: superseded (by the sorted slugs of every
    // lesson naming it, itself aside) wins over expired
    let mut superseded_by: foldhash::HashMap<&str, Vec<&str>> = foldhash::HashMap::default();
    for row in rows.iter().chain(&errors) {
        for old in &row.supersedes {
            if *old != row.slug {
                superseded_by
                    .entry(old.as_str())
                    .or_default()
                    .push(&row.slug);
            }
        }
    }
    for by in superseded_by.values_mut() {
        by.sort_unstable();
        by.dedup();
    }
    let statuses: Vec<Option<Status>> = rows
        .iter()
        .map(|row| match superseded_by.get(&*row.slug) {
            Some(by) => Some(Status::Superseded(
                by.iter().map(|s| s.to_string()).collect(),
            )),
            None if row.expired || row.quarantine.is_some() => Some(row.status_with(Vec::new())),
            None => None,
        })
        .collect();
    drop(superseded_by);
    for (row, status) in rows.iter_mut().zip(statuses) {
        if let Some(status) = status {
            row.status = status;
        }
    }
    sort(&mut rows);
    let mut left_out: Vec<String> = errors.into_iter().map(|row| row.path).collect();
    left_out.sort();
    let root = root.to_path_buf();
    Ok((
        bank,
        Scanned {
            rows,
            left_out,
            root,
        },
    ))
}

/// `[slug](path)` as an entry's `link`: the slug escaped for link text, the path
/// percent-encoded, the whole made safe for a table cell.
pub fn link(slug: &str, path: &str) -> String {
    let mut text = String::with_capacity(slug.len() + path.len() + 4);
    text.push('[');
    push_link_text(&mut text, slug);
    text.push_str("](");
    push_link_target(&mut text, path);
    text.push(')');
    crate::template::table_cell(&text)
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

/// Append `s` as link text: brackets and backslashes escaped.
fn push_link_text(out: &mut String, s: &str) {
    if !s.bytes().any(|b| matches!(b, b'[' | b']' | b'\\')) {
        out.push_str(s);
        return;
    }
    for c in s.chars() {
        if matches!(c, '[' | ']' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
}

/// Append `path` as a link target: every byte but unreserved characters and `/`
/// percent-encoded.
fn push_link_target(out: &mut String, path: &str) {
    if path.bytes().all(unreserved) {
        out.push_str(path);
        return;
    }
    for b in path.bytes() {
        if unreserved(b) {
            out.push(b as char);
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
}

fn unreserved(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~' | b'/')
}

/// Count entries by status.
pub fn counts(entries: &[IndexEntry]) -> StatusCounts {
    counts_of(entries.iter().map(|e| e.state))
}

fn counts_of<'s>(states: impl ExactSizeIterator<Item = &'s str>) -> StatusCounts {
    let mut c = StatusCounts {
        total: states.len(),
        ..StatusCounts::default()
    };
    for state in states {
        match state {
            "active" => c.active += 1,
            "superseded" => c.superseded += 1,
            "quarantined" => c.quarantined += 1,
            _ => c.expired += 1,
        }
    }
    c
}

/// `_index.md` as rendered, in pieces: the built-in template's rows are written in parallel
/// chunks, which are compared with the file (or written) without being joined first. On a
/// bank of 100,000 lessons, joining them cost more than writing them.
#[derive(Debug, Clone)]
pub struct Rendered {
    pieces: Vec<String>,
}

impl From<String> for Rendered {
    fn from(text: String) -> Rendered {
        Rendered { pieces: vec![text] }
    }
}

impl Rendered {
    /// The length in bytes.
    pub fn len(&self) -> usize {
        self.pieces.iter().map(String::len).sum()
    }

    /// Whether it renders to nothing.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether `text` is exactly this.
    pub fn matches(&self, text: &str) -> bool {
        if text.len() != self.len() {
            return false;
        }
        let mut at = 0;
        let spans: Vec<(usize, &String)> = self
            .pieces
            .iter()
            .map(|piece| {
                at += piece.len();
                (at - piece.len(), piece)
            })
            .collect();
        let text = text.as_bytes();
        spans
            .par_iter()
            .all(|(at, piece)| &text[*at..*at + piece.len()] == piece.as_bytes())
    }

    /// Write it out.
    pub fn write_to(&self, out: &mut impl std::io::Write) -> std::io::Result<()> {
        self.pieces
            .iter()
            .try_for_each(|piece| out.write_all(piece.as_bytes()))
    }

    /// The text in one string.
    pub fn into_string(self) -> String {
        if self.pieces.len() == 1 {
            return self.pieces.into_iter().next().unwrap_or_default();
        }
        let mut out = String::with_capacity(self.len());
        for piece in &self.pieces {
            out.push_str(piece);
        }
        self.pieces.into_par_iter().for_each(drop);
        out
    }
}

/// Render `_index.md` for the bank, with the bank's template override when it has one.
pub fn render(bank: &Bank) -> Result<String, IndexError> {
    Ok(render_parts(bank)?.into_string())
}

/// Render `_index.md` for the bank in pieces (see [`Rendered`]), with the bank's template
/// override when it has one.
pub fn render_parts(bank: &Bank) -> Result<Rendered, IndexError> {
    let template = Template::load(&bank.root, TEMPLATE, BUILTIN_TEMPLATE)?;
    render_parts_with(bank, &template)
}

/// Render `_index.md` with a given template.
pub fn render_with(bank: &Bank, template: &Template) -> Result<String, IndexError> {
    Ok(render_parts_with(bank, template)?.into_string())
}

fn render_parts_with(bank: &Bank, template: &Template) -> Result<Rendered, IndexError> {
    let rows = rows(bank);
    let rendered = render_rows(&bank.root, template, &rows);
    // a large bank's rows are many small strings: they are let go side by side
    rows.into_par_iter().for_each(drop);
    rendered
}

fn render_rows(root: &Path, template: &Template, rows: &[Row]) -> Result<Rendered, IndexError> {
    if builtin(template) {
        return Ok(render_builtin(rows));
    }
    let entries = rows
        .par_iter()
        .map(|row| {
            Row {
                slug: Cow::Borrowed(&*row.slug),
                path: row.path.clone(),
                title: Cow::Borrowed(&*row.title),
                supersedes: Vec::new(),
                quarantine: row.quarantine.clone(),
                status: row.status.clone(),
                ..*row
            }
            .into_entry()
        })
        .collect();
    let text = render_entries_at(root, template, entries, false)?;
    Ok(Rendered { pieces: vec![text] })
}

fn builtin(template: &Template) -> bool {
    template.path.is_none() && template.is_source(BUILTIN_TEMPLATE)
}

/// Render `lessons` (sorted by slug, then path, as [`entries`] makes them; a watcher makes them
/// from its index) with `template`. `direct` lets the built-in template be written without the
/// template engine; the tests turn it off to hold the two to the same bytes.
pub fn render_entries(
    template: &Template,
    lessons: Vec<IndexEntry>,
    direct: bool,
) -> Result<String, IndexError> {
    if direct && builtin(template) {
        return Ok(render_builtin(&lessons).into_string());
    }
    let counts = counts(&lessons);
    Ok(template.render(Context {
        lessons: minijinja::Value::from_object(Lazy(lessons)),
        counts,
    })?)
}

/// [`render_entries`] for the bank at `root`: a template that names a retrieval figure
/// ([`USAGE_VARIABLES`]) is given them from the bank's retrieval log.
pub fn render_entries_at(
    root: &Path,
    template: &Template,
    mut lessons: Vec<IndexEntry>,
    direct: bool,
) -> Result<String, IndexError> {
    if !builtin(template) {
        fill_usage(root, template, &mut lessons);
    }
    if direct && builtin(template) {
        return Ok(render_builtin(&lessons).into_string());
    }
    let counts = counts(&lessons);
    Ok(template.render(Context {
        lessons: minijinja::Value::from_object(Lazy(lessons)),
        counts,
    })?)
}

/// The cells of one row of the built-in template's table: an [`IndexEntry`] (what the template
/// sees) or a [`Row`] (written straight from the lesson, without building the entry).
trait Cells: Sync {
    fn state(&self) -> &'static str;
    /// Append the `link` cell, made safe for the table (`scratch` is a buffer to compose it in).
    fn link(&self, out: &mut String, scratch: &mut String);
    fn title(&self) -> &str;
    fn outcome(&self) -> &str;
    fn confidence(&self, out: &mut String);
    fn success_count(&self) -> u64;
    fn failure_count(&self) -> u64;
    /// Append the `status` cell, made safe for the table (`scratch` is a buffer to compose it
    /// in).
    fn status(&self, out: &mut String, scratch: &mut String);
}

impl Cells for IndexEntry {
    fn state(&self) -> &'static str {
        self.state
    }
    fn link(&self, out: &mut String, _: &mut String) {
        out.push_str(&self.link);
    }
    fn title(&self) -> &str {
        &self.title
    }
    fn outcome(&self) -> &str {
        &self.outcome
    }
    fn confidence(&self, out: &mut String) {
        out.push_str(&self.confidence);
    }
    fn success_count(&self) -> u64 {
        self.success_count
    }
    fn failure_count(&self) -> u64 {
        self.failure_count
    }
    fn status(&self, out: &mut String, _: &mut String) {
        crate::template::push_table_cell(out, &self.status);
    }
}

impl Cells for Row<'_> {
    fn state(&self) -> &'static str {
        self.status.label()
    }
    fn link(&self, out: &mut String, scratch: &mut String) {
        // the common case: a slug and a path with nothing to escape or encode
        let plain =
            |b: u8| b.is_ascii() && !matches!(b, b'[' | b']' | b'\\' | b'|' | b'\n' | b'\r');
        if self.slug.bytes().all(plain) && self.path.bytes().all(unreserved) {
            out.push('[');
            out.push_str(&self.slug);
            out.push_str("](");
            out.push_str(&self.path);
            out.push(')');
            return;
        }
        scratch.clear();
        scratch.push('[');
        push_link_text(scratch, &self.slug);
        scratch.push_str("](");
        push_link_target(scratch, &self.path);
        scratch.push(')');
        crate::template::push_table_cell(out, scratch);
    }
    fn title(&self) -> &str {
        &self.title
    }
    fn outcome(&self) -> &str {
        self.outcome
    }
    fn confidence(&self, out: &mut String) {
        push_two_decimals(out, self.confidence);
    }
    fn success_count(&self) -> u64 {
        self.success_count
    }
    fn failure_count(&self) -> u64 {
        self.failure_count
    }
    fn status(&self, out: &mut String, scratch: &mut String) {
        match &self.status {
            Status::Superseded(by) => {
                scratch.clear();
                scratch.push_str("superseded by ");
                for (i, slug) in by.iter().enumerate() {
                    if i > 0 {
                        scratch.push_str(", ");
                    }
                    scratch.push_str(slug);
                }
                crate::template::push_table_cell(out, scratch);
            }
            Status::Quarantined(_) => {
                crate::template::push_table_cell(out, &status_text(&self.status))
            }
            other => out.push_str(other.label()),
        }
    }
}

/// Append `x` as `format!("{x:.2}")` writes it. A value within a millionth of a hundredth is
/// written from its integer hundredths (its rounding is then not in doubt: the nearest rounding
/// boundaries are half a hundredth away); any other value goes through the formatter.
fn push_two_decimals(out: &mut String, x: f64) {
    let scaled = x * 100.0;
    let hundredths = scaled.round();
    if x.is_finite()
        && x.is_sign_positive()
        && hundredths < 1e15
        && (scaled - hundredths).abs() < 1e-6
    {
        let hundredths = hundredths as u64;
        push_u64(out, hundredths / 100);
        out.push('.');
        if hundredths % 100 < 10 {
            out.push('0');
        }
        push_u64(out, hundredths % 100);
    } else {
        let _ = write!(out, "{x:.2}");
    }
}

/// Append `n` in decimal.
fn push_u64(out: &mut String, mut n: u64) {
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    loop {
        at -= 1;
        digits[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.push_str(std::str::from_utf8(&digits[at..]).expect("ASCII digits"));
}

/// What the built-in template renders, written directly: the same bytes (the tests compare
/// the two on every fixture bank and on generated ones), with the rows written in parallel.
/// A bank of 100,000 lessons spends most of `lesson index` in the template engine otherwise.
fn render_builtin<C: Cells>(lessons: &[C]) -> Rendered {
    let counts = counts_of(lessons.iter().map(Cells::state));
    let out = builtin_head(&counts);
    if lessons.is_empty() {
        return Rendered { pieces: vec![out] };
    }
    let mut pieces = vec![out];
    pieces.par_extend(lessons.par_chunks(1024).map(|chunk| {
        let mut rows = String::with_capacity(chunk.len() * 192);
        let mut cell = String::new();
        for l in chunk {
            push_row(&mut rows, &mut cell, l);
        }
        rows
    }));
    Rendered { pieces }
}

/// The built-in template's text before the rows: the title, the comment, the counts line and
/// the table's head (or the line of an empty bank).
fn builtin_head(counts: &StatusCounts) -> String {
    // the template's text up to its first tag: the title and the comment
    let head = BUILTIN_TEMPLATE
        .split("{{")
        .next()
        .expect("split yields a first piece");
    let mut out = String::with_capacity(head.len() + 512);
    out.push_str(head);
    let _ = write!(
        out,
        "{} lesson{}: {} active, {} superseded, {} expired",
        counts.total,
        if counts.total == 1 { "" } else { "s" },
        counts.active,
        counts.superseded,
        counts.expired
    );
    if counts.quarantined > 0 {
        let _ = write!(out, ", {} quarantined", counts.quarantined);
    }
    out.push_str(".\n");
    if counts.total == 0 {
        out.push_str("\nNo lessons yet: add one with `lesson new`.\n");
    } else {
        out.push_str(TABLE_HEAD);
    }
    out
}

const TABLE_HEAD: &str = "\n| slug | title | outcome | confidence | successes | failures | status |\n| --- | --- | --- | ---: | ---: | ---: | --- |\n";

/// Append the built-in template's row of one lesson.
fn push_row<C: Cells>(rows: &mut String, cell: &mut String, l: &C) {
    rows.push_str("| ");
    l.link(rows, cell);
    rows.push_str(" | ");
    crate::template::push_table_cell(rows, l.title());
    rows.push_str(" | ");
    rows.push_str(l.outcome());
    rows.push_str(" | ");
    l.confidence(rows);
    rows.push_str(" | ");
    push_u64(rows, l.success_count());
    rows.push_str(" | ");
    push_u64(rows, l.failure_count());
    rows.push_str(" | ");
    l.status(rows, cell);
    rows.push_str(" |\n");
}

/// A change to a bank whose `_index.md` is to be updated row by row ([`patch`]).
pub struct Patch<'a> {
    /// The lesson files (relative to the bank, `/`-separated) whose rows go: those changed,
    /// moved or deleted, as the current `_index.md` lists them.
    pub remove: std::collections::BTreeSet<String>,
    /// The lessons whose rows are written anew (changed, added, or whose status may have
    /// changed), loaded on their own; `now` is the bank's.
    pub rows: &'a Bank,
    /// The slugs of the lessons that supersede `slug` after the change, given those the current
    /// `_index.md` says (`superseded by …`, empty for an active or expired lesson).
    pub superseded_by: &'a dyn Fn(&str, &[String]) -> Vec<String>,
}

/// The files (relative to the bank) of the rows of `slug` in an `_index.md` the built-in
/// template wrote (rows with a plain link: see [`patch`]).
pub fn paths_of(current: &str, slug: &str) -> Vec<String> {
    let needle = format!("\n| [{slug}](");
    current
        .match_indices(&needle)
        .filter_map(|(at, _)| {
            let rest = &current[at + needle.len()..];
            rest.split_once(") | ").map(|(path, _)| path.to_string())
        })
        .collect()
}

/// One row of a current `_index.md` as [`patch`] reads it.
struct Line<'t> {
    text: &'t str,
    state: &'static str,
}

/// `current` (an `_index.md` the built-in template wrote) with the rows of `patch.remove`
/// dropped and the rows of `patch.rows` written in slug, then path order, the counts line
/// recomputed. It equals what [`render`] writes for the changed bank when `current` was the
/// rendering of the bank before the change (at the same `now`), which is what `lesson sync`
/// needs: on a bank of 100,000 lessons it reads the changed lessons only. `None` when
/// `current` is not in the built-in template's shape, or a row's link is not plain (a slug or
/// path with characters to escape): render it whole then.
pub fn patch(current: &str, patch: &Patch<'_>) -> Option<String> {
    let head = BUILTIN_TEMPLATE.split("{{").next()?;
    let rest = current.strip_prefix(head)?;
    let (_, rest) = rest.split_once('\n')?;
    let body = rest.strip_prefix(TABLE_HEAD)?;
    let mut lines: BTreeMap<(&str, &str), Line<'_>> = BTreeMap::new();
    let mut by_slug: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for text in body.split_inclusive('\n') {
        let row = text.strip_prefix("| [")?.strip_suffix(" |\n")?;
        let (slug, row) = row.split_once("](")?;
        let (path, row) = row.split_once(") | ")?;
        let plain =
            |b: u8| b.is_ascii() && !matches!(b, b'[' | b']' | b'\\' | b'|' | b'\n' | b'\r');
        if !slug.bytes().all(plain) || !path.bytes().all(unreserved) {
            return None;
        }
        let status = row.rsplit_once(" | ")?.1;
        let (state, superseded_by) = match status {
            "active" => ("active", Vec::new()),
            "expired" => ("expired", Vec::new()),
            s if s.starts_with("quarantined") => ("quarantined", Vec::new()),
            s => {
                let by = s.strip_prefix("superseded by ")?;
                if !by.bytes().all(plain) {
                    return None;
                }
                ("superseded", by.split(", ").map(str::to_string).collect())
            }
        };
        by_slug.entry(slug).or_insert(superseded_by);
        if lines.insert((slug, path), Line { text, state }).is_some() {
            return None;
        }
    }
    lines.retain(|(_, path), _| !patch.remove.contains(*path));
    let mut new: BTreeMap<(String, String), (String, &'static str)> = BTreeMap::new();
    let mut cell = String::new();
    for (doc, lesson) in patch.rows.lessons() {
        if doc.has_file_errors() {
            continue;
        }
        let mut row = Row::new(&patch.rows.root, doc, lesson, patch.rows.now);
        let before = by_slug
            .get(lesson.slug.value.as_str())
            .map(Vec::as_slice)
            .unwrap_or_default();
        let by = (patch.superseded_by)(&lesson.slug.value, before);
        row.status = row.status_with(by);
        let mut text = String::new();
        push_row(&mut text, &mut cell, &row);
        let state = row.status.label();
        new.insert((row.slug.to_string(), row.path.clone()), (text, state));
    }
    for (slug, path) in new.keys() {
        lines.remove(&(slug.as_str(), path.as_str()));
    }
    let states = lines
        .values()
        .map(|l| l.state)
        .chain(new.values().map(|(_, s)| *s));
    let counts = counts_of(states.collect::<Vec<_>>().into_iter());
    let mut out = builtin_head(&counts);
    let mut old = lines.iter().peekable();
    let mut added = new.iter().peekable();
    loop {
        let take_old = match (old.peek(), added.peek()) {
            (None, None) => break,
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (Some(((s, p), _)), Some(((s2, p2), _))) => (*s, *p) < (s2.as_str(), p2.as_str()),
        };
        if take_old {
            out.push_str(old.next()?.1.text);
        } else {
            out.push_str(&added.next()?.1 .0);
        }
    }
    Some(out)
}

/// `current` (the bank's `_index.md` as the built-in template wrote it) with the one row of the
/// one lesson in `one` written anew, for a change that leaves the lesson's file where it was and
/// its status as it was (`lesson record`: two count lines and an evidence item), so the counts
/// line stays. What supersedes the lesson is read from its row. Reads nothing but that row: on
/// a bank of 100,000 lessons it costs a scan of `current`, where [`patch`] parses every row.
/// It equals [`render`] of the changed bank when `current` was the rendering of the bank before
/// the change; `None` when `current` does not start as the built-in template does, lists the
/// lesson other than once, or its row's link is not plain.
pub fn replace_row(current: &str, one: &Bank) -> Option<String> {
    let head = BUILTIN_TEMPLATE.split("{{").next()?;
    let [doc] = one.documents.as_slice() else {
        return None;
    };
    let lesson = doc.lesson.as_ref().filter(|_| !doc.has_file_errors())?;
    if !current.starts_with(head) {
        return None;
    }
    let slug = lesson.slug.value.as_str();
    let needle = format!("\n| [{slug}](");
    let mut found = current.match_indices(&needle);
    let (at, _) = found.next()?;
    if found.next().is_some() {
        return None;
    }
    let start = at + 1;
    let end = start + current[start..].find('\n')? + 1;
    let old = &current[start..end];
    let status = old.strip_suffix(" |\n")?.rsplit_once(" | ")?.1;
    let plain = |b: u8| b.is_ascii() && !matches!(b, b'[' | b']' | b'\\' | b'|' | b'\n' | b'\r');
    let by: Vec<String> = match status.strip_prefix("superseded by ") {
        Some(by) if by.bytes().all(plain) => by.split(", ").map(str::to_string).collect(),
        Some(_) => return None,
        None => Vec::new(),
    };
    let mut row = Row::new(&one.root, doc, lesson, one.now);
    if !slug.bytes().all(plain) || !row.path.bytes().all(unreserved) {
        return None;
    }
    row.status = row.status_with(by);
    let mut text = String::with_capacity(old.len() + 16);
    push_row(&mut text, &mut String::new(), &row);
    if !text.starts_with(&needle[1..]) {
        return None;
    }
    let mut out = String::with_capacity(current.len() + text.len());
    out.push_str(&current[..start]);
    out.push_str(&text);
    out.push_str(&current[end..]);
    Some(out)
}

/// Whether the bank's `_index.md` exists and equals `rendered`.
pub fn is_current(bank: &Bank, rendered: &str) -> bool {
    bank.index.as_ref().is_some_and(|s| s.text == rendered)
}

/// Write an already rendered `_index.md` (atomically) unless the bank's file holds exactly
/// that; whether it was written. The one place `_index.md` is written: the caller holds the
/// bank's lock.
pub fn write_if_changed(bank: &Bank, rendered: &Rendered) -> Result<bool, EditError> {
    if bank
        .index
        .as_ref()
        .is_some_and(|s| rendered.matches(&s.text))
    {
        return Ok(false);
    }
    let text: Cow<'_, str> = match rendered.pieces.as_slice() {
        [one] => Cow::Borrowed(one),
        pieces => Cow::Owned(pieces.concat()),
    };
    write_atomic(&bank.root, &bank.index_path(), text.as_bytes())?;
    Ok(true)
}

/// Render the bank's `_index.md` and write it when the file differs; whether it was written.
/// The caller holds the bank's lock.
pub fn refresh(bank: &Bank) -> Result<bool, IndexError> {
    let rendered = render_parts(bank)?;
    Ok(write_if_changed(bank, &rendered)?)
}

/// What [`write()`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexWrite {
    /// The files it leaves out ([`left_out`]).
    pub left_out: Vec<String>,
    /// The bank's `_index.md`.
    pub path: std::path::PathBuf,
    /// How many lessons it lists.
    pub lessons: usize,
    /// Whether the file was written (false: it was up to date).
    pub written: bool,
}

/// `lesson index`: under the bank's lock, render the `_index.md` of the bank at `root` as of
/// `now` and write it when the file differs. A missing bank is an error, not a directory to
/// create.
pub fn write(
    root: &Path,
    now: jiff::Timestamp,
    check: &dyn ErrorCheck,
) -> Result<IndexWrite, IndexError> {
    write_with(root, now, check, &crate::progress::Silent)
}

/// [`write()`], telling `progress` how the read goes ([`scan_with`]).
pub fn write_with(
    root: &Path,
    now: jiff::Timestamp,
    check: &dyn ErrorCheck,
    progress: &dyn crate::progress::Progress,
) -> Result<IndexWrite, IndexError> {
    if !root.is_dir() {
        return Err(BankError::NotFound(root.display().to_string()).into());
    }
    let mut lock = BankLock::open(root).map_err(|source| IndexError::Lock {
        path: root.display().to_string(),
        source,
    })?;
    lock.with(|| {
        let (bank, scanned) =
            scan_with(root, now, true, check, progress).map_err(|source| IndexError::Load {
                path: root.display().to_string(),
                source,
            })?;
        let lessons = scanned.len();
        let left_out = scanned.left_out.clone();
        let template = Template::load(&bank.root, TEMPLATE, BUILTIN_TEMPLATE)?;
        let rendered = scanned.render(&template)?;
        // thousands of rows: freed in parallel, as `Rendered::into_string` frees its pieces
        scanned.rows.into_par_iter().for_each(drop);
        let written = write_if_changed(&bank, &rendered)?;
        Ok(IndexWrite {
            left_out,
            path: bank.index_path(),
            lessons,
            written,
        })
    })?
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_decimals_and_integers_are_written_as_the_formatter_writes_them() {
        let mut values = vec![
            0.0,
            -0.0,
            0.5,
            0.85,
            0.005,
            0.015,
            0.125,
            0.994999,
            0.995,
            0.9999999,
            1.0,
            1e-9,
            -0.25,
            12345.678,
            1e15,
            1e300,
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::MIN_POSITIVE,
        ];
        // every thousandth in [0, 2] and values beside it
        for i in 0..=2000 {
            let x = f64::from(i) / 1000.0;
            values.extend([x, x + 1e-7, x - 1e-7, x + 1e-9, f64::from(i) * 0.001]);
        }
        for x in values {
            let mut out = String::new();
            push_two_decimals(&mut out, x);
            assert_eq!(out, format!("{x:.2}"), "{x:e}");
        }
        for n in [0, 1, 9, 10, 99, 100, 12345, u64::MAX] {
            let mut out = String::new();
            push_u64(&mut out, n);
            assert_eq!(out, n.to_string());
        }
    }

    #[test]
    fn link_targets_are_encoded_and_texts_escaped() {
        let mut out = String::new();
        push_link_target(&mut out, "sub/a b(1).md");
        assert_eq!(out, "sub/a%20b%281%29.md");
        out.clear();
        push_link_text(&mut out, "a[b]");
        assert_eq!(out, "a\\[b\\]");
    }

    fn lesson(slug: &str, successes: u64, extra: &str) -> Vec<u8> {
        format!(
            "---\nschema: learning/v1\nslug: {slug}\ntitle: About {slug}.\ntrigger:\n  description: When {slug} applies.\n  tags: [t]\noutcome: success\nevidence:\n  - kind: run\n    ref: r-{slug}\nsuccess_count: {successes}\nfailure_count: 0\n{extra}---\n\n# About {slug}.\n\n## When this applies\n\nWhen {slug} applies.\n\n## What to do (or avoid)\n\nDo {slug}.\n\n## Counter-example\n\nNot doing {slug} broke a run.\n"
        )
        .into_bytes()
    }

    fn bank(root: &Path, files: &BTreeMap<String, Vec<u8>>) -> Bank {
        let at = "2026-11-22T12:00:00Z".parse().unwrap();
        let files = files.iter().map(|(rel, b)| (root.join(rel), b.clone()));
        Bank::from_files(root, Default::default(), files, at, None)
    }

    /// Rows changed, added, removed and renamed, an expired lesson and a superseded one: the
    /// patched index is the full rendering, byte for byte.
    #[test]
    fn a_patched_index_is_the_full_rendering() {
        let root = Path::new("/bank");
        let mut before = BTreeMap::new();
        for (i, slug) in ["a", "b", "c", "d", "e", "f"].iter().enumerate() {
            before.insert(format!("{slug}.md"), lesson(slug, i as u64, ""));
        }
        before.insert("old.md".into(), lesson("old", 1, ""));
        before.insert("new.md".into(), lesson("new", 1, "supersedes: [old]\n"));
        let current = render(&bank(root, &before)).unwrap();
        assert!(current.contains("superseded by new"), "{current}");
        let mut after = before.clone();
        // counts changed, a lesson added between rows and at the end, one removed, one expired
        after.insert("b.md".into(), lesson("b", 9, ""));
        after.insert("bb.md".into(), lesson("bb", 0, ""));
        after.insert("zz.md".into(), lesson("zz", 0, ""));
        after.remove("d.md");
        after.insert(
            "e.md".into(),
            lesson("e", 4, "expires_at: 2026-01-01T00:00:00Z\n"),
        );
        // the supersession dropped
        after.insert("new.md".into(), lesson("new", 1, ""));
        let changed = ["b.md", "bb.md", "zz.md", "d.md", "e.md", "new.md", "old.md"];
        let rows: BTreeMap<String, Vec<u8>> = changed
            .iter()
            .filter_map(|p| after.get(*p).map(|b| (p.to_string(), b.clone())))
            .collect();
        let rows = bank(root, &rows);
        let superseded_by = |slug: &str, before: &[String]| -> Vec<String> {
            before
                .iter()
                .filter(|s| !(slug == "old" && *s == "new"))
                .cloned()
                .collect()
        };
        let patch = Patch {
            remove: changed.iter().map(|p| p.to_string()).collect(),
            rows: &rows,
            superseded_by: &superseded_by,
        };
        let patched = super::patch(&current, &patch).expect("the built-in shape");
        assert_eq!(patched, render(&bank(root, &after)).unwrap());
        assert_eq!(paths_of(&current, "old"), ["old.md"]);
        // an index in another shape is not patched
        assert_eq!(super::patch("# Lessons\n\nhand-written\n", &patch), None);
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
