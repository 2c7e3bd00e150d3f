//! What a change does to the bank, worked out once for both `lesson lint --base` (the findings)
//! and `lesson diff` (the summary): each changed file is classified (lesson, archived lesson,
//! ledger, other), and only changed files are read.

use std::collections::BTreeSet;
use std::ops::Range;
use std::path::{Path, PathBuf};

use globset::GlobSet;
use serde::Serialize;

use super::changes::{Change, ChangeKind, Changes};
use crate::diagnostic::Diagnostic;
use crate::document::Document;
use crate::git::repo::GitError;
use crate::layout::{ARCHIVE_DIR, LOG_DIR};
use crate::ledger::{EventKind, Ledger};
use crate::lesson::{Counts, Lesson};
use crate::lint::rules::{
    counts_without_outcomes, ledger_rewritten, lesson_deleted, lesson_rewritten, slug_changed,
    supersedes_dropped,
};
use crate::source::Source;
use crate::walk::is_lesson_path;

/// What a bank path holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// A live lesson file.
    Lesson,
    /// A lesson in `_archive/`.
    Archived,
    /// A ledger, `_log/<slug>.jsonl`.
    Ledger,
    /// Anything else (`_index.md`, `lesson.toml`, templates, ...).
    Other,
}

fn kind_of(rel: &str, exclude: &GlobSet) -> Kind {
    if let Some(name) = rel
        .strip_prefix(LOG_DIR)
        .and_then(|r| r.strip_prefix('/'))
        .and_then(|r| r.strip_suffix(".jsonl"))
    {
        if !name.is_empty() && !name.contains('/') {
            return Kind::Ledger;
        }
    }
    if let Some(inner) = rel
        .strip_prefix(ARCHIVE_DIR)
        .and_then(|r| r.strip_prefix('/'))
    {
        return if is_lesson_path(inner, exclude) {
            Kind::Archived
        } else {
            Kind::Other
        };
    }
    if is_lesson_path(rel, exclude) {
        Kind::Lesson
    } else {
        Kind::Other
    }
}

fn is_lesson(kind: Kind) -> bool {
    matches!(kind, Kind::Lesson | Kind::Archived)
}

/// The ledger path of a slug, relative to the bank.
fn ledger_rel(slug: &str) -> String {
    format!("{LOG_DIR}/{slug}.jsonl")
}

/// The stem of a `.md` path.
fn stem(rel: &str) -> &str {
    let name = rel.rsplit('/').next().unwrap_or(rel);
    name.strip_suffix(".md").unwrap_or(name)
}

/// A lesson added by the change.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Added {
    /// Its slug.
    pub slug: String,
    /// Its path, relative to the bank.
    pub path: String,
    /// Its title.
    pub title: String,
    /// The existing lesson it looks most like (`lesson dedup`'s thresholds), if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nearest: Option<Nearest>,
}

/// The existing lesson an added one looks most like.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Nearest {
    /// Its slug.
    pub slug: String,
    /// The dedup score, 0 to 1.
    pub score: f64,
}

/// Outcomes recorded on one lesson by the change.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Recorded {
    /// The lesson's slug.
    pub slug: String,
    /// Its counts at the base.
    pub before: Counts,
    /// Its counts at the head.
    pub after: Counts,
    /// How many `outcome` events its ledger gained.
    pub events: usize,
    /// Who recorded them (the events' `by`), sorted, each once.
    pub by: Vec<String>,
}

/// `supersedes` entries a lesson gained.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Supersession {
    /// The superseding lesson's slug.
    pub by: String,
    /// The slugs it now supersedes that it did not at the base.
    pub supersedes: Vec<String>,
}

/// A lesson moved (to `_archive/`, or elsewhere in the bank).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Moved {
    /// The lesson's slug (at the head).
    pub slug: String,
    /// Its base path, relative to the bank.
    pub from: String,
    /// Its head path, relative to the bank.
    pub to: String,
}

/// A lesson whose body or trigger changed.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Rewritten {
    /// The lesson's slug.
    pub slug: String,
    /// Its head path, relative to the bank.
    pub path: String,
    /// Whether the body changed.
    pub body: bool,
    /// Whether the trigger changed.
    pub trigger: bool,
}

/// Everything a change does to the bank, before levels and suppressions.
#[derive(Default)]
pub(crate) struct Review {
    pub added: Vec<Added>,
    pub recorded: Vec<Recorded>,
    pub superseded: Vec<Supersession>,
    pub archived: Vec<Moved>,
    pub moved: Vec<Moved>,
    pub rewritten: Vec<Rewritten>,
    /// The findings (rules G001..G006), placed in the head versions.
    pub findings: Vec<Diagnostic>,
    /// The head versions of the changed lesson files (their suppressions apply to the findings).
    pub docs: Vec<Document>,
    /// The texts of the other files findings point into (ledgers, deleted files).
    pub sources: Vec<Source>,
    /// The head lessons of `added`, for the dedup look-up.
    pub added_lessons: Vec<Lesson>,
}

/// One version of a lesson file.
struct Version {
    rel: String,
    doc: Document,
}

impl Version {
    fn lesson(&self) -> Option<&Lesson> {
        self.doc.lesson.as_deref()
    }

    fn slug(&self) -> String {
        match self.lesson() {
            Some(l) if !l.slug.value.is_empty() => l.slug.value.clone(),
            _ => stem(&self.rel).to_string(),
        }
    }
}

/// Work out what the change does. `root` is the bank as the user named it (the findings' paths
/// are below it); with `summary`, also the outcomes recorded per lesson (for `lesson diff`).
pub(crate) fn review(
    root: &Path,
    changes: &Changes<'_>,
    exclude: &GlobSet,
    summary: bool,
) -> Result<Review, GitError> {
    let mut r = Review::default();
    let shown = |rel: &str| -> PathBuf { root.join(rel) };
    let read = |bytes: Vec<u8>, rel: &str| -> Version {
        let (source, problem) = Source::from_bytes(shown(rel), bytes);
        Version {
            rel: rel.to_string(),
            doc: Document::parse(source, problem),
        }
    };
    let mut ledgers_seen = BTreeSet::new();
    for change in &changes.changes {
        let old_kind = change.old.as_deref().map(|p| kind_of(p, exclude));
        let new_kind = change.new.as_deref().map(|p| kind_of(p, exclude));
        // ledgers
        if old_kind == Some(Kind::Ledger) {
            let old = change.old.as_deref().unwrap_or_default();
            ledger_change(&mut r, changes, change, old, &shown)?;
        }
        if new_kind == Some(Kind::Ledger) {
            if let Some(new) = change.new.as_deref() {
                ledgers_seen.insert(new.to_string());
            }
        }
        // lessons
        let was_lesson = old_kind.is_some_and(is_lesson);
        let is_now_lesson = new_kind.is_some_and(is_lesson);
        match (was_lesson, is_now_lesson) {
            (true, false) => {
                let old = change.old.as_deref().unwrap_or_default();
                let message = match change.new.as_deref() {
                    Some(to) => format!(
                        "lesson file `{old}` was moved out of the bank's lessons (to `{to}`): nothing is deleted from a bank"
                    ),
                    None => format!("lesson file `{old}` was deleted: nothing is deleted from a bank"),
                };
                let source = Source::new(shown(old), String::new());
                r.findings.push(
                    Diagnostic::new(&lesson_deleted::RULE, &source, 0..0, message).with_help(
                        "restore it; retire a lesson with `lesson archive` (to `_archive/`) or `lesson supersede`",
                    ),
                );
                r.sources.push(source);
            }
            (false, true) => {
                let new = change.new.as_deref().unwrap_or_default();
                if let Some(bytes) = changes.head_bytes(new)? {
                    let head = read(bytes, new);
                    if let Some(lesson) = head.lesson() {
                        if !lesson.supersedes.is_empty() {
                            r.superseded.push(Supersession {
                                by: head.slug(),
                                supersedes: lesson
                                    .supersedes
                                    .iter()
                                    .map(|s| s.value.clone())
                                    .collect(),
                            });
                        }
                        r.added.push(Added {
                            slug: head.slug(),
                            path: new.to_string(),
                            title: lesson.title.value.clone(),
                            nearest: None,
                        });
                        r.added_lessons.push(lesson.clone());
                    }
                    r.docs.push(head.doc);
                }
            }
            (true, true) => {
                let (old, new) = (
                    change.old.as_deref().unwrap_or_default(),
                    change.new.as_deref().unwrap_or_default(),
                );
                let (Some(before), Some(after)) =
                    (changes.base_bytes(old)?, changes.head_bytes(new)?)
                else {
                    continue;
                };
                let base = read(before, old);
                let head = read(after, new);
                paired(&mut r, changes, change, &base, &head, new_kind, old_kind)?;
                r.docs.push(head.doc);
            }
            (false, false) => {}
        }
    }
    // the outcomes recorded are for `lesson diff` only: `lint --base` reads no more than it checks
    if summary {
        for ledger in ledgers_seen {
            recorded(&mut r, changes, &ledger, exclude)?;
        }
    }
    Ok(r)
}

/// G001: a ledger of the base lost or changed a line, or is gone.
fn ledger_change(
    r: &mut Review,
    changes: &Changes<'_>,
    change: &Change,
    old: &str,
    shown: &dyn Fn(&str) -> PathBuf,
) -> Result<(), GitError> {
    let same_path = change.new.as_deref() == Some(old);
    if !same_path {
        let message = match change.new.as_deref() {
            Some(to) => format!("ledger `{old}` was moved to `{to}`: a ledger stays where it is"),
            None => {
                format!("ledger `{old}` was deleted: ledgers are the audit trail of the counts")
            }
        };
        let source = Source::new(shown(old), String::new());
        r.findings.push(
            Diagnostic::new(&ledger_rewritten::RULE, &source, 0..0, message)
                .with_help("restore it from the base revision"),
        );
        r.sources.push(source);
        return Ok(());
    }
    let (Some(before), Some(after)) = (changes.base_bytes(old)?, changes.head_bytes(old)?) else {
        return Ok(());
    };
    if after.starts_with(&before) {
        return Ok(());
    }
    let before = String::from_utf8_lossy(&before);
    let after = String::from_utf8_lossy(&after).into_owned();
    let old_lines: Vec<&str> = before.lines().collect();
    let new_lines: Vec<&str> = after.lines().collect();
    let ops = similar::capture_diff_slices(similar::Algorithm::Myers, &old_lines, &new_lines);
    let Some((base_line, head_line)) = ops.iter().find_map(|op| match *op {
        similar::DiffOp::Delete {
            old_index,
            new_index,
            ..
        }
        | similar::DiffOp::Replace {
            old_index,
            new_index,
            ..
        } => Some((old_index, new_index)),
        _ => None,
    }) else {
        return Ok(());
    };
    let source = Source::new(shown(old), after);
    let range = line_range(&source, head_line);
    let what = if ops.iter().any(
        |op| matches!(op, similar::DiffOp::Replace { old_index, .. } if *old_index == base_line),
    ) {
        "changed"
    } else {
        "removed"
    };
    r.findings.push(
        Diagnostic::new(
            &ledger_rewritten::RULE,
            &source,
            range,
            format!(
                "line {} of the base ledger was {what}: a ledger only grows (events are appended, never edited or removed)",
                base_line + 1
            ),
        )
        .with_help(
            "restore the base's lines; to correct an event, record what really happened with `lesson record`",
        ),
    );
    r.sources.push(source);
    Ok(())
}

/// The byte range of 0-based `line` of `source` (without its line ending); the end of the text
/// when the line is past the last.
fn line_range(source: &Source, line: usize) -> Range<usize> {
    let count = source.line_count();
    if count == 0 {
        return 0..0;
    }
    if line >= count {
        let end = source.text.len();
        return end..end;
    }
    let start = source.line_start(line + 1);
    start..start + source.line_text(line + 1).len()
}

/// The sum of the outcome deltas of a ledger, as the ledger counts them.
fn outcome_counts(ledger: Option<&Ledger>) -> Counts {
    ledger
        .and_then(Ledger::tally)
        .map(|t| t.added)
        .unwrap_or_default()
}

fn parse_ledger(rel: &str, bytes: Option<Vec<u8>>) -> Option<Ledger> {
    bytes.map(|b| Ledger::parse(Path::new(rel), &b))
}

/// G002, G004, G005, G006 and the summary of a lesson present in both versions.
fn paired(
    r: &mut Review,
    changes: &Changes<'_>,
    change: &Change,
    base: &Version,
    head: &Version,
    new_kind: Option<Kind>,
    old_kind: Option<Kind>,
) -> Result<(), GitError> {
    let (Some(before), Some(after)) = (base.lesson(), head.lesson()) else {
        return Ok(());
    };
    let src = &head.doc.source;
    let (old_slug, slug) = (base.slug(), head.slug());
    // G004: the slug is the lesson's identity
    if old_slug != slug && !after.supersedes.iter().any(|s| s.value == old_slug) {
        let how = if change.kind == ChangeKind::Renamed {
            format!("`{}` was renamed to `{}`", base.rel, head.rel)
        } else {
            format!("`{}` changed its slug", head.rel)
        };
        r.findings.push(
            Diagnostic::new(
                &slug_changed::RULE,
                src,
                after.slug.span.clone(),
                format!("{how}: slug `{old_slug}` became `{slug}` without superseding it"),
            )
            .with_help(format!(
                "keep the slug `{old_slug}`, or make a new lesson that supersedes it (`lesson supersede {old_slug} --by {slug}`)"
            )),
        );
    }
    // G005: `supersedes` only grows
    let now: BTreeSet<&str> = after.supersedes.iter().map(|s| s.value.as_str()).collect();
    let was: Vec<&str> = before.supersedes.iter().map(|s| s.value.as_str()).collect();
    let dropped: Vec<&str> = was.iter().copied().filter(|s| !now.contains(s)).collect();
    if !dropped.is_empty() {
        let range = key_range(&head.doc, "supersedes")
            .or_else(|| head.doc.fences().map(|f| f.open.clone()))
            .unwrap_or(0..0);
        let list = dropped
            .iter()
            .map(|s| format!("`{s}`"))
            .collect::<Vec<_>>()
            .join(", ");
        r.findings.push(
            Diagnostic::new(
                &supersedes_dropped::RULE,
                src,
                range,
                format!("`supersedes` of `{slug}` lost {list}: entries are only ever added"),
            )
            .with_help("put the entries back; to bring old advice back, write a new lesson that supersedes this one"),
        );
    }
    let was_set: BTreeSet<&str> = was.iter().copied().collect();
    let gained: Vec<String> = after
        .supersedes
        .iter()
        .map(|s| s.value.clone())
        .filter(|s| !was_set.contains(s.as_str()))
        .collect();
    if !gained.is_empty() {
        r.superseded.push(Supersession {
            by: slug.clone(),
            supersedes: gained,
        });
    }
    // G002: counts move only with the ledger's outcomes
    let (c0, c1) = (before.counts(), after.counts());
    if c0 != c1 {
        let ledger = ledger_rel(&slug);
        let old_ledger = ledger_rel(&old_slug);
        let (gained, ledger_changed) = if changes.touches(&ledger) || changes.touches(&old_ledger) {
            let b = parse_ledger(&old_ledger, changes.base_bytes(&old_ledger)?);
            let h = parse_ledger(&ledger, changes.head_bytes(&ledger)?);
            let (b, h) = (outcome_counts(b.as_ref()), outcome_counts(h.as_ref()));
            (
                (
                    h.success_count as i128 - b.success_count as i128,
                    h.failure_count as i128 - b.failure_count as i128,
                ),
                true,
            )
        } else {
            ((0, 0), false)
        };
        let delta = (
            c1.success_count as i128 - c0.success_count as i128,
            c1.failure_count as i128 - c0.failure_count as i128,
        );
        if delta != gained {
            let range = [
                (&after.success_count, delta.0 != gained.0),
                (&after.failure_count, delta.1 != gained.1),
            ]
            .into_iter()
            .find_map(|(field, off)| field.as_ref().filter(|_| off).map(|f| f.span.clone()))
            .or_else(|| head.doc.fences().map(|f| f.open.clone()))
            .unwrap_or(0..0);
            let backing = if ledger_changed {
                format!(
                    "the outcomes appended to `{ledger}` add {}/{}",
                    signed(gained.0),
                    signed(gained.1)
                )
            } else {
                format!("`{ledger}` gained no outcome")
            };
            r.findings.push(
                Diagnostic::new(
                    &counts_without_outcomes::RULE,
                    src,
                    range,
                    format!(
                        "counts went {c0} → {c1} (success/failure, {}/{}) but {backing}: counts change only with recorded outcomes",
                        signed(delta.0),
                        signed(delta.1)
                    ),
                )
                .with_help("restore the base's counts and record each observed outcome with `lesson record`"),
            );
        }
    }
    // G006: the advice itself
    let body_line = first_changed_body_line(&base.doc, &head.doc);
    let trigger_changed =
        serde_json::to_value(&before.trigger).ok() != serde_json::to_value(&after.trigger).ok();
    if body_line.is_some() || trigger_changed {
        let (range, what) = match (trigger_changed, body_line) {
            (true, Some(_)) => (
                key_range(&head.doc, "trigger").unwrap_or(0..0),
                "trigger and body",
            ),
            (true, None) => (key_range(&head.doc, "trigger").unwrap_or(0..0), "trigger"),
            (false, Some(line)) => (line_range(src, line), "body"),
            (false, None) => unreachable!(),
        };
        r.findings.push(
            Diagnostic::new(
                &lesson_rewritten::RULE,
                src,
                range,
                format!("the {what} of `{slug}` was rewritten: its counts were earned by the advice it gave before"),
            )
            .with_help(format!(
                "write the new advice as a new lesson and run `lesson supersede {slug} --by NEW`; a typo fix can be accepted as is"
            )),
        );
        r.rewritten.push(Rewritten {
            slug: slug.clone(),
            path: head.rel.clone(),
            body: body_line.is_some(),
            trigger: trigger_changed,
        });
    }
    if change.kind == ChangeKind::Renamed {
        let moved = Moved {
            slug,
            from: base.rel.clone(),
            to: head.rel.clone(),
        };
        if new_kind == Some(Kind::Archived) && old_kind != Some(Kind::Archived) {
            r.archived.push(moved);
        } else {
            r.moved.push(moved);
        }
    }
    Ok(())
}

fn signed(n: i128) -> String {
    if n >= 0 {
        format!("+{n}")
    } else {
        n.to_string()
    }
}

/// The range of a top-level key of a document's frontmatter.
fn key_range(doc: &Document, key: &str) -> Option<Range<usize>> {
    let yaml = doc.yaml.as_ref()?;
    let (k, _) = yaml.get(doc.root_map()?, key)?;
    Some(yaml.node(k).span.clone())
}

/// The 0-based line of `head` where its body first differs from `base`'s, if it does.
fn first_changed_body_line(base: &Document, head: &Document) -> Option<usize> {
    let body = |d: &Document| -> Option<(usize, String)> {
        let start = d.fences()?.body_start;
        Some((start, d.source.text.get(start..)?.to_string()))
    };
    let (_, old) = body(base)?;
    let (start, new) = body(head)?;
    if old == new {
        return None;
    }
    let first_line = head.source.line_col(start).0 - 1;
    let mut old_lines = old.lines();
    let mut i = 0;
    for line in new.lines() {
        if old_lines.next() != Some(line) {
            return Some(first_line + i);
        }
        i += 1;
    }
    // the head's body is the base's with lines removed at its end
    Some(first_line + i.saturating_sub(1))
}

/// The outcomes a ledger gained, for the summary.
fn recorded(
    r: &mut Review,
    changes: &Changes<'_>,
    rel: &str,
    exclude: &GlobSet,
) -> Result<(), GitError> {
    let Some(after) = changes.head_bytes(rel)? else {
        return Ok(());
    };
    let before = changes.base_bytes(rel)?.unwrap_or_default();
    let before = String::from_utf8_lossy(&before);
    let after = String::from_utf8_lossy(&after);
    let old_lines: Vec<&str> = before.lines().collect();
    let new_lines: Vec<&str> = after.lines().collect();
    let mut events = 0;
    let mut by = BTreeSet::new();
    for op in similar::capture_diff_slices(similar::Algorithm::Myers, &old_lines, &new_lines) {
        // a changed line is no recorded outcome (it is a G001 finding)
        let similar::DiffOp::Insert {
            new_index, new_len, ..
        } = op
        else {
            continue;
        };
        let new_range = new_index..new_index + new_len;
        for line in &new_lines[new_range] {
            if let Ok(event) = crate::ledger::Event::parse(line) {
                if let EventKind::Outcome(_) = event.kind {
                    events += 1;
                    by.insert(event.by);
                }
            }
        }
    }
    if events == 0 {
        return Ok(());
    }
    let slug = stem(rel.strip_suffix(".jsonl").unwrap_or(rel)).to_string();
    let counts_in = |bytes: Option<Vec<u8>>, path: &str| -> Option<Counts> {
        let (source, problem) = Source::from_bytes(PathBuf::from(path), bytes?);
        Document::parse_frontmatter(source, problem)
            .lesson
            .map(|l| l.counts())
    };
    // the lesson's file: a changed one with this slug, else its usual places
    let mut before_counts = None;
    let mut after_counts = None;
    for place in [format!("{slug}.md"), format!("{ARCHIVE_DIR}/{slug}.md")] {
        if before_counts.is_none() {
            before_counts = counts_in(changes.base_bytes(&place)?, &place);
        }
        if after_counts.is_none() {
            after_counts = counts_in(changes.head_bytes(&place)?, &place);
        }
    }
    for c in &changes.changes {
        let lesson_at = |p: &Option<String>| {
            p.as_deref()
                .filter(|p| is_lesson(kind_of(p, exclude)) && stem(p) == slug)
                .map(str::to_string)
        };
        if before_counts.is_none() {
            if let Some(p) = lesson_at(&c.old) {
                before_counts = counts_in(changes.base_bytes(&p)?, &p);
            }
        }
        if after_counts.is_none() {
            if let Some(p) = lesson_at(&c.new) {
                after_counts = counts_in(changes.head_bytes(&p)?, &p);
            }
        }
    }
    let tally = |text: &str| {
        Ledger::parse(Path::new(rel), text.as_bytes())
            .tally()
            .map(|t| t.counts())
            .unwrap_or_default()
    };
    r.recorded.push(Recorded {
        slug,
        before: before_counts.unwrap_or_else(|| tally(&before)),
        after: after_counts.unwrap_or_else(|| tally(&after)),
        events,
        by: by.into_iter().collect(),
    });
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_classified() {
        let none = globset::GlobSetBuilder::new().build().unwrap();
        assert_eq!(kind_of("a.md", &none), Kind::Lesson);
        assert_eq!(kind_of("ci/a.md", &none), Kind::Lesson);
        assert_eq!(kind_of("_archive/a.md", &none), Kind::Archived);
        assert_eq!(kind_of("_log/a.jsonl", &none), Kind::Ledger);
        assert_eq!(kind_of("_log/x/a.jsonl", &none), Kind::Other);
        assert_eq!(kind_of("_index.md", &none), Kind::Other);
        assert_eq!(kind_of("lesson.toml", &none), Kind::Other);
        assert_eq!(kind_of("templates/lesson.md", &none), Kind::Other);
    }
}
