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

/// The ledger of the lesson `slug` in the bank at `root` (empty when it has none), for a view
/// of the lesson (`lesson mcp`'s `get`).
pub fn ledger(root: &std::path::Path, slug: &str) -> Result<crate::ledger::Ledger, CurateError> {
    Ok(crate::ledger::Ledger::read(root, slug)?)
}
