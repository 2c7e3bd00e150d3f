//! `lesson show`: one lesson found by its slug for reading, wherever it is: live in the bank,
//! or moved to `_archive/` by `lesson archive`. A slug two files share is refused, listing them.

use crate::bank::Bank;
use crate::document::Document;
use crate::lesson::slug_problem;
use crate::source::Source;

use super::{archive_path, CurateError};

/// Where the lesson with a slug was found.
#[derive(Debug)]
pub enum Found<'a> {
    /// A lesson of the bank.
    Live(&'a Document),
    /// A file of the bank named like the slug that does not parse as a lesson.
    NotALesson(&'a Document),
    /// A lesson moved out of the live set: its file in `_archive/`, read and parsed.
    Archived(Box<Document>),
}

/// The lesson with `slug`, for reading. Refuses a slug that several files share (naming them)
/// and an unknown one (with the nearest slug as a hint).
pub fn find<'a>(bank: &'a Bank, slug: &str) -> Result<Found<'a>, CurateError> {
    let mut live = bank
        .lessons()
        .filter(|(_, lesson)| lesson.slug.value == slug)
        .map(|(doc, _)| doc);
    match (live.next(), live.next()) {
        (Some(doc), None) => return Ok(Found::Live(doc)),
        (Some(first), Some(second)) => {
            let paths = [first, second]
                .into_iter()
                .chain(live)
                .map(|d| d.source.path.display().to_string())
                .collect();
            return Err(CurateError::Duplicate {
                slug: slug.to_string(),
                paths,
            });
        }
        (None, _) => {}
    }
    if let Some(doc) = bank.documents.iter().find(|d| d.stem() == Some(slug)) {
        return Ok(Found::NotALesson(doc));
    }
    let archived = archive_path(&bank.root, slug);
    if slug_problem(slug).is_none() && archived.is_file() {
        let (source, problem) =
            Source::read(&archived, archived.clone(), bank.config.lint.size_limit);
        return Ok(Found::Archived(Box::new(Document::parse(source, problem))));
    }
    Err(super::not_found(bank, slug))
}

/// The lesson with `slug` in a layered stack ([`super::stack`]): the first bank's that has it
/// live, else the front bank's archived lesson or file that is not a lesson, else the first
/// included bank's archived one. A slug no bank has is the front bank's error.
pub fn find_in_stack<'a>(
    stack: &'a [super::stack::Stacked],
    slug: &str,
) -> Result<(&'a super::stack::Stacked, Found<'a>), CurateError> {
    let mut fallback = None;
    let mut error = None;
    for (i, layer) in stack.iter().enumerate() {
        match find(&layer.bank, slug) {
            Ok(Found::Live(doc)) => return Ok((layer, Found::Live(doc))),
            Ok(Found::NotALesson(_)) if i > 0 => {}
            Ok(other) => {
                fallback.get_or_insert((layer, other));
            }
            Err(e @ (CurateError::NotFound { .. } | CurateError::Included { .. })) => {
                error.get_or_insert(e);
            }
            Err(e) if i == 0 => return Err(e),
            Err(_) => {}
        }
    }
    match (fallback, error) {
        (Some(found), _) => Ok(found),
        (None, Some(e)) => Err(e),
        (None, None) => Err(super::not_found(&stack[0].bank, slug)),
    }
}

/// The ledger of the lesson `slug` in the bank at `root` (empty when it has none), for a view
/// of the lesson (`lesson mcp`'s `get`).
pub fn ledger(root: &std::path::Path, slug: &str) -> Result<crate::ledger::Ledger, CurateError> {
    Ok(crate::ledger::Ledger::read(root, slug)?)
}

/// A live lesson found through the retrieval index ([`find_indexed`]).
#[derive(Debug)]
pub struct Indexed {
    /// Its file, read and parsed.
    pub doc: Document,
    /// Its status, as [`Bank::status`] gives it.
    pub status: crate::bank::Status,
}

/// The live lesson with `slug`, found through the bank's retrieval index (which must be
/// current: [`crate::retrieve::Retriever`] keeps it so) and read from its one file, without
/// loading the bank. `Ok(None)` when the index knows no live lesson with the slug, its file no
/// longer has it, or the index is damaged: then [`find`] on a loaded bank says what there is
/// (an archived lesson, a file that is not a lesson, the nearest slug). A slug several live
/// files share is refused.
pub fn find_indexed(
    retriever: &crate::retrieve::Retriever,
    slug: &str,
    now: jiff::Timestamp,
) -> Result<Option<Indexed>, CurateError> {
    let root = retriever.root();
    // a damaged index cannot say: the loaded bank will
    let Ok((paths, superseded_by)) = retriever.index().slug_lookup(slug) else {
        return Ok(None);
    };
    let rel = match paths.as_slice() {
        [] => return Ok(None),
        [one] => one,
        many => {
            return Err(CurateError::Duplicate {
                slug: slug.to_string(),
                paths: many
                    .iter()
                    .map(|p| root.join(p).display().to_string())
                    .collect(),
            })
        }
    };
    let path = root.join(rel);
    let (source, problem) = Source::read(&path, path.clone(), retriever.config().lint.size_limit);
    let doc = Document::parse(source, problem);
    let Some(lesson) = doc.lesson.as_deref() else {
        return Ok(None);
    };
    if lesson.slug.value != slug {
        return Ok(None);
    }
    let status = crate::bank::Status::of(lesson, superseded_by, now);
    Ok(Some(Indexed { doc, status }))
}
