//! The commands that change lessons after they are written: `record` an outcome, `supersede` a
//! lesson with a newer one, `archive` lessons, and `review` (which only reads).
//!
//! Each writer runs as one read-modify-write under the bank's lock: load the bank, compute span
//! edits on the original bytes, check that the edited file reads back as exactly the lesson
//! intended (else write nothing), append ledger events, replace the file atomically, regenerate
//! `_index.md`. Ledger lines go first: a writer killed after them leaves the ledger ahead of the
//! counts cached in the lesson, which `ledger-count-mismatch` (L001) reports and fixes; never
//! counts without their events.

pub mod add;
pub mod approve;
pub mod archive;
pub mod init;
pub mod new;
pub mod promote;
pub mod record;
pub mod retention;
pub mod review;
pub mod show;
pub mod stack;
pub mod supersede;

use std::path::Path;

use crate::bank::{Bank, BankError};
use crate::diagnostic::{apply_edits, Edit};
use crate::document::Document;
use crate::edit::frontmatter::{Frontmatter, Unedit};
use crate::edit::{BankLock, EditError};
use crate::index_md::IndexError;
use crate::ledger::{Event, EventKind, Ledger, LedgerError};
use crate::lesson::{slug_problem, Lesson};
use crate::source::Source;

pub use crate::layout::ARCHIVE_DIR;

/// A curation command was refused or failed. Nothing was written unless the message says so.
#[derive(Debug, thiserror::Error)]
pub enum CurateError {
    /// No lesson has the slug.
    #[error("no lesson `{slug}`{hint}; `lesson list` shows them")]
    NotFound {
        /// The slug asked for.
        slug: String,
        /// ` (did you mean `x`?)` or empty.
        hint: String,
    },
    /// The lesson is in a bank this one includes, which it only reads.
    #[error("lesson `{slug}` is in the included bank {bank}, which this bank only reads; change it there (--dir {path}), or `lesson promote` lessons into it")]
    Included {
        /// The slug.
        slug: String,
        /// The included bank's name.
        bank: String,
        /// Its directory.
        path: String,
    },
    /// The lesson was moved to `_archive/`.
    #[error("lesson `{slug}` is archived ({path}); archived lessons are not changed")]
    Archived {
        /// The slug.
        slug: String,
        /// Its file in `_archive/`.
        path: String,
    },
    /// Two lesson files share the slug.
    #[error("{} lessons have the slug `{slug}` ({}); give each its own slug first (`lesson lint` reports B002)", .paths.len(), .paths.join(", "))]
    Duplicate {
        /// The slug.
        slug: String,
        /// The files.
        paths: Vec<String>,
    },
    /// A file named like the slug does not parse as a lesson.
    #[error("{path} is not a valid lesson; `lesson lint {path}` says why")]
    NotALesson {
        /// The file.
        path: String,
    },
    /// The lesson's slug cannot name a ledger file.
    #[error("{path}: the slug `{slug}` is invalid ({problem}); fix it first")]
    InvalidSlug {
        /// The file.
        path: String,
        /// The slug.
        slug: String,
        /// Why.
        problem: String,
    },
    /// The request contradicts the bank (a cycle, self-supersession, a conflicting record).
    #[error("{0}")]
    Refused(String),
    /// The frontmatter's layout does not allow a span edit.
    #[error("cannot edit {path}: {reason}")]
    Uneditable {
        /// The file.
        path: String,
        /// Why.
        reason: String,
    },
    /// The edited text did not read back as the lesson intended; nothing was written.
    #[error("refusing to write {path}: the edited file does not read back as intended ({problem}); nothing was written, please report this")]
    ReadBack {
        /// The file.
        path: String,
        /// What differs.
        problem: String,
    },
    /// The bank could not be loaded.
    #[error(transparent)]
    Bank(#[from] BankError),
    /// A ledger could not be read.
    #[error(transparent)]
    Ledger(#[from] LedgerError),
    /// A write failed.
    #[error(transparent)]
    Edit(#[from] EditError),
    /// The bank's lock could not be taken (a read-only bank, say): nothing was written.
    #[error("cannot lock the bank at {root}: {source}")]
    Lock {
        /// The bank.
        root: String,
        /// Why.
        source: EditError,
    },
    /// The outcome reached the lesson's ledger, but a write after it failed (a full disk,
    /// say): the lesson's counts or `_index.md` are behind the ledger until the same outcome
    /// is recorded again (a retry appends nothing and brings them up to date) or `lesson lint
    /// --fix --unsafe-fixes` runs.
    #[error("the outcome is in {ledger}, but {source}; once that is fixed, record the same outcome again (a retry appends nothing and updates the counts)")]
    AfterLedger {
        /// The ledger that holds the outcome.
        ledger: String,
        /// The write that failed.
        source: EditError,
    },
    /// `_index.md` could not be rendered.
    #[error(transparent)]
    Index(#[from] IndexError),
}

/// Who and when, for the events a command appends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stamp {
    /// When (also the `now` expiry is judged at).
    pub at: jiff::Timestamp,
    /// Who records.
    pub by: String,
}

impl Stamp {
    /// An event with this stamp.
    pub fn event(&self, kind: EventKind) -> Event {
        Event::new(self.at, &self.by, kind)
    }
}

/// Run `f` holding the bank's lock. A missing bank is an error, not a directory to create.
pub fn locked<T>(
    root: &Path,
    f: impl FnOnce() -> Result<T, CurateError>,
) -> Result<T, CurateError> {
    if !root.is_dir() {
        return Err(BankError::NotFound(root.display().to_string()).into());
    }
    let lock_error = |source| CurateError::Lock {
        root: root.display().to_string(),
        source,
    };
    BankLock::open(root)
        .map_err(lock_error)?
        .with(f)
        .map_err(lock_error)?
}

/// The lesson with `slug`: its index in `bank.documents`. Refuses an unknown, archived,
/// duplicated or invalid slug.
pub fn find(bank: &Bank, slug: &str) -> Result<usize, CurateError> {
    let matches: Vec<usize> = bank
        .documents
        .iter()
        .enumerate()
        .filter(|(_, d)| d.lesson.as_ref().is_some_and(|l| l.slug.value == slug))
        .map(|(i, _)| i)
        .collect();
    match matches.as_slice() {
        [] => Err(not_found(bank, slug)),
        &[i] => {
            let doc = &bank.documents[i];
            if let Some(problem) = slug_problem(slug) {
                return Err(CurateError::InvalidSlug {
                    path: doc.source.path.display().to_string(),
                    slug: slug.to_string(),
                    problem,
                });
            }
            Ok(i)
        }
        many => Err(CurateError::Duplicate {
            slug: slug.to_string(),
            paths: many
                .iter()
                .map(|&i| bank.documents[i].source.path.display().to_string())
                .collect(),
        }),
    }
}

fn not_found(bank: &Bank, slug: &str) -> CurateError {
    if let Some(doc) = bank.documents.iter().find(|d| d.stem() == Some(slug)) {
        return CurateError::NotALesson {
            path: doc.source.path.display().to_string(),
        };
    }
    let archived = archive_path(&bank.root, slug);
    if slug_problem(slug).is_none() && archived.is_file() {
        return CurateError::Archived {
            slug: slug.to_string(),
            path: archived.display().to_string(),
        };
    }
    // a lesson of an included bank is read, never written, through this one
    if slug_problem(slug).is_none() {
        let layers = crate::layers::resolve(&bank.root, &bank.config).unwrap_or_default();
        if let Some(layer) = layers
            .iter()
            .find(|l| crate::layout::lesson_path(&l.root, slug).is_file())
        {
            return CurateError::Included {
                slug: slug.to_string(),
                bank: layer.name.clone(),
                path: layer.root.display().to_string(),
            };
        }
    }
    let hint = bank
        .by_slug()
        .keys()
        .map(|s| (strsim::jaro_winkler(slug, s), *s))
        .filter(|(score, _)| *score >= 0.8)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, s)| format!(" (did you mean `{s}`?)"))
        .unwrap_or_default();
    CurateError::NotFound {
        slug: slug.escape_debug().to_string(),
        hint,
    }
}

pub use crate::layout::archive_path;

/// The document's lesson (a document [`find`] returned has one).
fn lesson_of(doc: &Document) -> &Lesson {
    doc.lesson.as_ref().expect("found documents hold a lesson")
}

/// The events to append to a ledger: an `imported` event first when the ledger says nothing
/// about the counts yet (so that the lesson's own counts become its initial values).
pub fn with_import(ledger: &Ledger, lesson: &Lesson, stamp: &Stamp, kind: EventKind) -> Vec<Event> {
    let mut events = Vec::new();
    if ledger.needs_import() {
        events.push(stamp.event(EventKind::Imported(lesson.counts())));
    }
    events.push(stamp.event(kind));
    events
}

/// Apply span edits to a document's text and parse the result; `check` compares the lesson
/// before and after and says what is wrong, if anything.
fn edited(
    doc: &Document,
    edits: &[Edit],
    check: impl Fn(&Lesson, &Lesson) -> Option<String>,
) -> Result<Document, CurateError> {
    let (text, applied) = apply_edits(&doc.source.text, edits);
    let path = doc.source.path.display().to_string();
    let read_back = |problem: String| CurateError::ReadBack {
        path: path.clone(),
        problem,
    };
    if applied != edits.len() {
        return Err(read_back("edits overlap".into()));
    }
    let new = Document::parse(Source::new(doc.source.path.clone(), text), None);
    if new.yaml_errors.len() > doc.yaml_errors.len() {
        return Err(read_back("the YAML no longer parses cleanly".into()));
    }
    let (Some(before), Some(after)) = (&doc.lesson, &new.lesson) else {
        return Err(read_back("the frontmatter is no longer a lesson".into()));
    };
    match check(before, after) {
        Some(problem) => Err(read_back(problem)),
        None => Ok(new),
    }
}

/// The lesson as JSON without the given top-level fields, for "nothing else changed" checks.
fn json_without(lesson: &Lesson, fields: &[&str]) -> serde_json::Value {
    let mut value = serde_json::to_value(lesson).expect("lessons serialize");
    if let Some(map) = value.as_object_mut() {
        for f in fields {
            map.remove(*f);
        }
    }
    value
}

/// The span-edit view of a document, with the file named in the error.
fn frontmatter(doc: &Document) -> Result<Frontmatter<'_>, CurateError> {
    Frontmatter::of(doc).map_err(|e| uneditable(doc, e))
}

fn uneditable(doc: &Document, e: Unedit) -> CurateError {
    CurateError::Uneditable {
        path: doc.source.path.display().to_string(),
        reason: e.0,
    }
}
