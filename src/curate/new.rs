//! `lesson new`: a new lesson from `templates/lesson.md.j2`.
//!
//! A new lesson is rendered, parsed back and linted before anything is written: what the
//! template produced must read back as exactly the lesson that was asked for.

use std::path::{Path, PathBuf};

use serde::Serialize;

use super::Stamp;
use crate::bank::{Bank, BankError, Overlay};
use crate::diagnostic::{Diagnostic, Severity};
use crate::document::Document;
use crate::edit::{write_atomic, BankLock, EditError};
use crate::index_md::IndexError;
use crate::ledger::{EventKind, Ledger, LedgerError};
use crate::lesson::{EvidenceKind, Lesson, Outcome, SCHEMA, TARGET_KEYS};
use crate::lint::{self, Selection};
use crate::source::Source;
use crate::template::{Template, TemplateError};

/// The lesson template's file name (built in, or in the bank's `templates/`).
pub const TEMPLATE: &str = "lesson.md.j2";
/// The built-in lesson template.
pub const BUILTIN_TEMPLATE: &str = include_str!("../../templates/lesson.md.j2");

/// `lesson new` failed or was refused.
#[derive(Debug, thiserror::Error)]
pub enum NewError {
    /// The slug cannot name a lesson file.
    #[error("{0}")]
    Slug(String),
    /// A title must fit on one line (it is also the body's `# heading`).
    #[error("the title has a line break; a title is one sentence on one line")]
    MultilineTitle,
    /// A lesson with that slug, or a file at that path, exists.
    #[error("lesson `{slug}` already exists: {path}")]
    Exists {
        /// The slug asked for.
        slug: String,
        /// The file in the way.
        path: String,
    },
    /// The lesson template produced text that does not read back as the lesson asked for.
    #[error("{origin} does not write back the lesson it was given: {problem}; fix the template, or delete it to use the built-in one")]
    TemplateMismatch {
        /// The template file.
        origin: String,
        /// What differs.
        problem: String,
    },
    /// The bank's lock could not be taken.
    #[error("cannot lock the bank at {path}")]
    Lock {
        /// The bank.
        path: String,
        /// Why.
        #[source]
        source: EditError,
    },
    /// The bank could not be loaded.
    #[error("cannot load the bank at {path}")]
    Load {
        /// The bank.
        path: String,
        /// Why.
        #[source]
        source: BankError,
    },
    /// The lesson was written, but the bank could not be loaded again to update `_index.md`.
    #[error("wrote {path}, but cannot reload the bank to update _index.md")]
    Reload {
        /// The lesson written.
        path: String,
        /// Why.
        #[source]
        source: BankError,
    },
    /// A template could not be read or rendered.
    #[error(transparent)]
    Template(#[from] TemplateError),
    /// `_index.md` could not be rendered or written.
    #[error(transparent)]
    Index(#[from] IndexError),
    /// The bank is missing.
    #[error(transparent)]
    Bank(#[from] BankError),
    /// The new lesson's ledger could not be read.
    #[error(transparent)]
    Ledger(#[from] LedgerError),
    /// A write failed.
    #[error(transparent)]
    Edit(#[from] EditError),
}

/// Why `s` cannot be a new lesson's slug, phrased for `lesson new`. The rule itself is the
/// schema's ([`crate::lesson::slug_problem`]).
fn slug_problem(s: &str) -> Option<String> {
    let problem = crate::lesson::slug_problem(s)?;
    let shown = s.escape_debug();
    if s.contains(['/', '\\']) || s.starts_with('.') {
        return Some(format!(
            "slug `{shown}` is not a file name: a slug names one file in the bank, so it has no `/`, `\\` or leading `.`"
        ));
    }
    let lower = s.to_lowercase();
    let hint = if lower != s && crate::lesson::slug_problem(&lower).is_none() {
        format!(" (try `{lower}`)")
    } else {
        String::new()
    };
    Some(format!("invalid slug `{shown}`: {problem}{hint}"))
}

/// What `lesson new` was asked to write.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NewLesson {
    /// The slug, also the file name.
    pub slug: String,
    /// One-sentence imperative title.
    pub title: String,
    /// `trigger.description`.
    pub trigger: String,
    /// `trigger.tags`.
    pub tags: Vec<String>,
    /// `trigger.targets`, one key each.
    pub targets: Vec<NewTarget>,
    /// `outcome`.
    pub outcome: Outcome,
    /// `evidence`.
    pub evidence: Vec<NewEvidence>,
    /// `confidence`.
    pub confidence: f64,
}

/// `--target role=GLOB`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NewTarget {
    /// `operator`, `role` or `skill`.
    pub key: &'static str,
    /// The glob.
    pub glob: String,
}

/// `--evidence KIND:REF[:NOTE]`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NewEvidence {
    /// What `ref` points to.
    pub kind: EvidenceKind,
    /// The opaque id.
    #[serde(rename = "ref")]
    pub reference: String,
    /// A one-line note.
    pub note: Option<String>,
}

/// Parse `operator=GLOB`, `role=GLOB` or `skill=GLOB`.
pub fn parse_target(s: &str) -> Result<NewTarget, String> {
    let Some((key, glob)) = s.split_once('=') else {
        return Err("expected operator=GLOB, role=GLOB or skill=GLOB".into());
    };
    let Some(key) = TARGET_KEYS.into_iter().find(|k| *k == key) else {
        return Err(format!(
            "`{key}` is not a target key; use operator, role or skill"
        ));
    };
    if glob.is_empty() {
        return Err(format!("{key}= needs a glob, e.g. {key}=reviewer"));
    }
    globset::Glob::new(glob).map_err(|e| format!("invalid glob `{glob}`: {}", e.kind()))?;
    Ok(NewTarget {
        key,
        glob: glob.to_string(),
    })
}

/// Parse `KIND:REF[:NOTE]`. A `://` after the kind belongs to the ref (`wiki-page:https://…`).
pub fn parse_evidence(s: &str) -> Result<NewEvidence, String> {
    let kinds = || {
        EvidenceKind::ALL
            .iter()
            .map(|k| k.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let Some((kind, rest)) = s.split_once(':') else {
        return Err(format!("expected KIND:REF[:NOTE], KIND one of {}", kinds()));
    };
    let Some(kind) = EvidenceKind::parse(kind) else {
        return Err(format!(
            "`{kind}` is not an evidence kind; use one of {}",
            kinds()
        ));
    };
    let mut split = None;
    let mut from = 0;
    while let Some(i) = rest[from..].find(':') {
        let at = from + i;
        if rest[at + 1..].starts_with("//") {
            from = at + 3;
            continue;
        }
        split = Some(at);
        break;
    }
    let (reference, note) = match split {
        Some(at) => (&rest[..at], Some(&rest[at + 1..])),
        None => (rest, None),
    };
    if reference.trim().is_empty() {
        return Err(
            "the evidence ref is empty; give the id of the run, conversation or work item".into(),
        );
    }
    Ok(NewEvidence {
        kind,
        reference: reference.to_string(),
        note: note.filter(|n| !n.is_empty()).map(str::to_string),
    })
}

#[derive(Serialize)]
struct LessonContext<'a> {
    schema: &'static str,
    #[serde(flatten)]
    lesson: &'a NewLesson,
    success_count: u64,
    failure_count: u64,
}

/// A new lesson, rendered and checked against the bank, not yet written.
#[derive(Debug)]
pub struct Draft {
    /// Where it goes.
    pub path: PathBuf,
    /// The file's text.
    pub text: String,
    /// The bank with the draft added (for rendering findings and the index).
    pub bank: Bank,
    /// Findings on the draft, minus `index-stale` and sub-error findings in the placeholder body.
    pub findings: Vec<Diagnostic>,
    /// The existing lesson it looks like a near-duplicate of (`a` is that lesson's slug), as
    /// `lesson add` and `lesson dedup` judge it: `new` writes it all the same, with a warning.
    pub near: Option<crate::dedup::Pair>,
}

impl Draft {
    /// Whether a finding blocks writing.
    pub fn refused(&self) -> bool {
        self.findings.iter().any(|d| d.severity == Severity::Error)
    }
}

pub use crate::layout::lesson_path;

/// A file of the bank that already uses `slug`: a lesson with that slug, a file with that
/// name anywhere in the bank, or one in `_archive/`.
pub fn existing(bank: &Bank, slug: &str) -> Option<PathBuf> {
    if let Some((doc, _)) = bank.by_slug().get(slug) {
        return Some(doc.source.path.clone());
    }
    if let Some(doc) = bank.documents.iter().find(|d| d.stem() == Some(slug)) {
        return Some(doc.source.path.clone());
    }
    [
        lesson_path(&bank.root, slug),
        crate::layout::archive_path(&bank.root, slug),
        // a slug with a ledger was used before: its history is not a new lesson's
        crate::ledger::path(&bank.root, slug),
    ]
    .into_iter()
    .find(|p| p.symlink_metadata().is_ok())
}

/// Render a new lesson with the bank's template and check it: the slug, that nothing uses it
/// yet, that the text reads back as the lesson asked for, and the lint rules.
pub fn draft(mut bank: Bank, new: &NewLesson) -> Result<Draft, NewError> {
    if let Some(problem) = slug_problem(&new.slug) {
        return Err(NewError::Slug(problem));
    }
    if new.title.contains(['\n', '\r']) {
        return Err(NewError::MultilineTitle);
    }
    if let Some(path) = existing(&bank, &new.slug) {
        return Err(NewError::Exists {
            slug: new.slug.clone(),
            path: path.display().to_string(),
        });
    }
    let template = Template::load(&bank.root, TEMPLATE, BUILTIN_TEMPLATE)?;
    let text = template.render(LessonContext {
        schema: SCHEMA,
        lesson: new,
        success_count: 0,
        failure_count: 0,
    })?;
    let path = lesson_path(&bank.root, &new.slug);
    let doc = Document::parse(Source::new(path.clone(), text.clone()), None);
    let body_start = doc.body.as_ref().map_or(usize::MAX, |b| b.start);
    let read_back = doc.lesson.clone();
    // the lesson `lesson add` would have merged it into, if any (a bank whose dedup settings
    // are invalid says so in `lesson dedup`; here it only means no hint)
    let near = read_back
        .as_deref()
        .and_then(|lesson| crate::dedup::duplicate_of(&bank, lesson).ok().flatten());
    let at = bank.documents.partition_point(|d| d.source.path < path);
    bank.documents.insert(at, doc);

    let selection = Selection {
        paths: vec![path.clone()],
        rules: Vec::new(),
    };
    let mut findings = lint::lint(&bank, &selection);
    findings.retain(|d| {
        d.code != crate::lint::rules::index_stale::RULE.code
            && !(d.range.start >= body_start && d.severity < Severity::Error)
    });
    let draft = Draft {
        path,
        text,
        bank,
        findings,
        near,
    };
    if draft.refused() {
        return Ok(draft);
    }
    let origin = template.path.as_ref().map_or_else(
        || format!("built-in {TEMPLATE}"),
        |p| p.display().to_string(),
    );
    match read_back {
        None => Err(NewError::TemplateMismatch {
            origin,
            problem: "the frontmatter is not a complete lesson".into(),
        }),
        Some(lesson) => match mismatch(&lesson, new) {
            Some(problem) => Err(NewError::TemplateMismatch { origin, problem }),
            None => Ok(draft),
        },
    }
}

/// What [`create`] did.
#[derive(Debug)]
pub enum Created {
    /// The lesson was written to the draft's `path`; its findings, if any, are below error level.
    Written(Draft),
    /// A finding at error level refused the draft; nothing was written.
    Refused(Draft),
}

/// The bank at `root`, as `lesson new` checks a draft against it.
fn load(root: &Path, now: jiff::Timestamp) -> Result<Bank, NewError> {
    crate::lint::load_with(root, &Overlay::new(), now).map_err(|source| NewError::Load {
        path: root.display().to_string(),
        source,
    })
}

/// `lesson new --dry-run`: the draft of `new` against the bank at `root` as of `now`, written
/// nowhere.
pub fn preview(root: &Path, new: &NewLesson, now: jiff::Timestamp) -> Result<Draft, NewError> {
    draft(load(root, now)?, new)
}

/// `lesson new`: under the bank's lock, draft `new` against the bank at `root` (see [`draft`])
/// and, unless a finding refuses it, write the lesson, start its ledger with a `created` event
/// stamped `stamp` (whose `at` is also the `now` expiry is judged at), and bring `_index.md` up
/// to date. A missing bank is an error, not a directory to create.
pub fn create(root: &Path, new: &NewLesson, stamp: &Stamp) -> Result<Created, NewError> {
    if !root.is_dir() {
        return Err(BankError::NotFound(root.display().to_string()).into());
    }
    let mut lock = BankLock::open(root).map_err(|source| NewError::Lock {
        path: root.display().to_string(),
        source,
    })?;
    lock.with(|| {
        let draft = draft(load(root, stamp.at)?, new)?;
        if draft.refused() {
            return Ok(Created::Refused(draft));
        }
        // fail on a broken index template before anything is written
        crate::index_md::render_parts(&draft.bank)?;
        write_atomic(root, &draft.path, draft.text.as_bytes())?;
        created_event(root, &draft, stamp)?;
        let bank = crate::lint::load_with(root, &Overlay::new(), stamp.at).map_err(|source| {
            NewError::Reload {
                path: draft.path.display().to_string(),
                source,
            }
        })?;
        crate::index_md::refresh(&bank)?;
        Ok(Created::Written(draft))
    })?
}

/// Start the new lesson's ledger with a `created` event holding its initial counts. The file
/// goes first: killed in between, the lesson simply has no ledger yet (its counts are initial).
fn created_event(root: &Path, draft: &Draft, stamp: &Stamp) -> Result<(), NewError> {
    let Some(lesson) = draft
        .bank
        .documents
        .iter()
        .find(|d| d.source.path == draft.path)
        .and_then(|d| d.lesson.as_ref())
    else {
        return Ok(());
    };
    let kind = EventKind::Created(lesson.counts());
    let mut ledger = Ledger::read(root, &lesson.slug.value)?;
    ledger.append(root, &[stamp.event(kind)])?;
    Ok(())
}

/// The first field that did not survive the round trip through the template and the parser.
fn mismatch(lesson: &Lesson, new: &NewLesson) -> Option<String> {
    let differs = |field: &str| Some(format!("`{field}` differs"));
    if lesson.slug.value != new.slug {
        return differs("slug");
    }
    if lesson.title.value != new.title {
        return differs("title");
    }
    if lesson.trigger.description.value != new.trigger {
        return differs("trigger.description");
    }
    let tags: Vec<&str> = lesson
        .trigger
        .tags
        .iter()
        .map(|t| t.value.as_str())
        .collect();
    if tags != new.tags {
        return differs("trigger.tags");
    }
    let targets: Vec<(&str, &str)> = lesson
        .trigger
        .targets
        .iter()
        .flat_map(|t| t.globs().map(|(k, v)| (k, v.value.as_str())))
        .collect();
    let wanted: Vec<(&str, &str)> = new
        .targets
        .iter()
        .map(|t| (t.key, t.glob.as_str()))
        .collect();
    if targets != wanted {
        return differs("trigger.targets");
    }
    if lesson.outcome.value != new.outcome {
        return differs("outcome");
    }
    let evidence: Vec<(EvidenceKind, &str, Option<&str>)> = lesson
        .evidence
        .iter()
        .map(|e| {
            (
                e.kind.value,
                e.reference.value.as_str(),
                e.note.as_ref().map(|n| n.value.as_str()),
            )
        })
        .collect();
    let wanted: Vec<(EvidenceKind, &str, Option<&str>)> = new
        .evidence
        .iter()
        .map(|e| (e.kind, e.reference.as_str(), e.note.as_deref()))
        .collect();
    if evidence != wanted {
        return differs("evidence");
    }
    if (lesson.confidence() - new.confidence).abs() > 1e-9 {
        return differs("confidence");
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hostile_slugs_are_refused_with_a_reason() {
        for (slug, says) in [
            ("../x", "not a file name"),
            ("x/y", "not a file name"),
            (".hidden", "not a file name"),
            ("A", "uppercase"),
            ("Fix-It", "try `fix-it`"),
            ("a", "too short"),
            ("a_b", "underscore at column 2"),
            ("1a", "starts with a digit"),
            ("ab-", "ends with `-`"),
            ("", "empty"),
        ] {
            let problem = slug_problem(slug).unwrap_or_default();
            assert!(problem.contains(says), "{slug}: {problem}");
            assert!(!problem.ends_with('.'), "{problem}");
        }
        assert_eq!(slug_problem("verify-page-id"), None);
        assert!(slug_problem(&"a".repeat(81)).is_some());
    }

    #[test]
    fn evidence_and_targets_parse() {
        let e = parse_evidence("run:r_1:it broke: badly").unwrap();
        assert_eq!(
            (e.kind, e.reference.as_str(), e.note.as_deref()),
            (EvidenceKind::Run, "r_1", Some("it broke: badly"))
        );
        let e = parse_evidence("wiki-page:https://x.test/a:b").unwrap();
        assert_eq!(
            (e.reference.as_str(), e.note.as_deref()),
            ("https://x.test/a", Some("b"))
        );
        assert!(parse_evidence("log:r_1")
            .unwrap_err()
            .contains("not an evidence kind"));
        assert!(parse_evidence("run:").is_err());
        let t = parse_target("skill=rust-*").unwrap();
        assert_eq!((t.key, t.glob.as_str()), ("skill", "rust-*"));
        assert!(parse_target("team=x")
            .unwrap_err()
            .contains("not a target key"));
        assert!(parse_target("role=[").is_err());
    }
}
