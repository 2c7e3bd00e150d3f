//! `lesson promote SLUG --to BANK`: move a lesson into another bank (a personal lesson into the
//! team's shared bank, say) through that bank's `add` gate.
//!
//! 1. **Gate.** The lesson's file is a candidate of the other bank, validated against it as
//!    `lesson add` validates (its lint levels, secrets, evidence, no `supersedes`); its
//!    confidence and counts are not taken (a new lesson of that bank starts at 0.5 and 0/0,
//!    what the source claimed kept under `metadata.lesson.origin.claimed`).
//! 2. **Dedup.** A lesson of the other bank with the same slug, or one `dedup` pairs it with
//!    under that bank's `[dedup]`, refuses the promotion: a promotion never merges silently
//!    into an existing lesson (record the evidence there, or supersede it, instead).
//! 3. **Write the other bank.** `<slug>.md`, its ledger starting with an `imported` event
//!    (counts 0/0) whose `promoted_from` cites the source bank and slug; its `_index.md`.
//! 4. **Leave the source.** The source ledger gets a `promoted` event (naming the other bank)
//!    and an `archived` event, and the file moves to `_archive/<slug>.md`: out of the live set,
//!    never deleted, as `lesson archive` leaves a lesson. Its `_index.md` is regenerated.
//!
//! Both banks are locked, in the byte order of their canonical paths (two promotions in
//! opposite directions cannot deadlock). The other bank is written first: a promotion killed
//! in between leaves the lesson in both banks, and running it again finishes it (the other
//! bank's copy, whose ledger cites this lesson, is taken as the promotion's own).

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use super::add::{prepare, AddError, Batch, Candidate, Intake, Rejection};
use super::{archive_path, find, lesson_of, with_import, CurateError, Stamp, ARCHIVE_DIR};
use crate::bank::Overlay;
use crate::edit::BankLock;
use crate::ledger::{EventKind, Ledger, PromotedFrom};

/// What a promotion did (or, with `dry_run`, would do).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Promoted {
    /// The slug.
    pub slug: String,
    /// The lesson's file in the bank it left.
    pub from: PathBuf,
    /// Where that file went (`_archive/<slug>.md`).
    pub archived: PathBuf,
    /// Its new file in the other bank.
    pub to: PathBuf,
    /// The other bank as the source names it (relative to the source bank).
    pub bank: String,
    /// Whether the other bank already had the promoted lesson (a promotion finished again).
    pub resumed: bool,
}

/// Promote the lesson `slug` of the bank at `root` into the bank at `to` (see the module docs).
pub fn promote(
    root: &Path,
    slug: &str,
    to: &Path,
    stamp: &Stamp,
    dry_run: bool,
) -> Result<Promoted, AddError> {
    let real = |p: &Path| {
        p.canonicalize().map_err(|_| {
            CurateError::from(crate::bank::BankError::NotFound(p.display().to_string()))
        })
    };
    let (source_real, target_real) = (real(root)?, real(to)?);
    if source_real == target_real {
        return Err(CurateError::Refused(format!(
            "`{slug}` is already in {}: promote it into another bank",
            to.display()
        ))
        .into());
    }
    if !to.join(crate::layout::CONFIG_FILE).is_file() {
        return Err(CurateError::Refused(format!(
            "{} is not a bank: it has no {} (`lesson init` makes one)",
            to.display(),
            crate::layout::CONFIG_FILE
        ))
        .into());
    }
    let run = || promote_locked(root, slug, to, (&source_real, &target_real), stamp, dry_run);
    if dry_run {
        return run();
    }
    // both locks, in a fixed order
    let (first, second) = if source_real.as_os_str() < target_real.as_os_str() {
        (root, to)
    } else {
        (to, root)
    };
    let mut outer = BankLock::open(first).map_err(CurateError::from)?;
    outer
        .with(|| {
            let mut inner = BankLock::open(second).map_err(CurateError::from)?;
            inner.with(run).map_err(CurateError::from)?
        })
        .map_err(CurateError::from)?
}

fn promote_locked(
    root: &Path,
    slug: &str,
    to: &Path,
    (source_real, target_real): (&Path, &Path),
    stamp: &Stamp,
    dry_run: bool,
) -> Result<Promoted, AddError> {
    let load = |r: &Path| crate::lint::load_with(r, &Overlay::new(), stamp.at);
    let source = load(root).map_err(CurateError::from)?;
    let target = load(to).map_err(CurateError::from)?;
    let i = find(&source, slug)?;
    let doc = &source.documents[i];
    if let Some(rules) = doc.lesson.as_ref().and_then(|l| l.quarantine.as_ref()) {
        return Err(CurateError::Refused(format!(
            "cannot promote `{slug}`: it is in quarantine ({}); `lesson review --approve {slug}` first",
            rules.join(", ")
        ))
        .into());
    }
    let from = PromotedFrom {
        bank: relative(target_real, source_real),
        slug: slug.to_string(),
    };
    let bank = relative(source_real, target_real);
    let archived = archive_path(root, slug);
    if archived.symlink_metadata().is_ok() {
        return Err(CurateError::Refused(format!(
            "cannot promote `{slug}`: {} already exists; rename one of them first",
            archived.display()
        ))
        .into());
    }
    let new_path = crate::layout::lesson_path(to, slug);
    // a promotion killed after writing the other bank: its copy cites this lesson
    let resumed = target.by_slug().contains_key(slug)
        && Ledger::read(to, slug)
            .ok()
            .and_then(|l| l.entries.first().map(|e| e.event.promoted_from.clone()))
            .flatten()
            .is_some_and(|f| f == from);
    let mut batch = None;
    if !resumed {
        let mut origin = Map::new();
        let source_file = format!(
            "{}/{}",
            from.bank,
            crate::layout::bank_relative(root, &doc.source.path)
        );
        origin.insert("source".into(), Value::from(source_file));
        let intake = Intake {
            origin,
            ..Intake::default()
        };
        let label = doc.source.path.display().to_string();
        let candidate = Candidate::from_markdown(label, doc.source.text.clone().into_bytes());
        let mut rejection = Rejection::default();
        let prepared = prepare(&target, &candidate, &intake, &mut rejection);
        let prepared = match prepared {
            Some(p) if !rejection.refused() => p,
            _ => return Err(AddError::Rejected(rejection)),
        };
        if target.by_slug().contains_key(slug) {
            return Err(duplicate(slug, &bank, &format!("it has a lesson `{slug}`")));
        }
        if let Some(pair) = crate::dedup::duplicate_of(&target, &prepared.lesson)? {
            let why = format!(
                "its lesson `{}` reads like it (score {:.2}: slug {:.2}, text {:.2})",
                pair.a, pair.score, pair.slug_similarity, pair.text_similarity
            );
            return Err(duplicate(slug, &bank, &why));
        }
        let mut b = Batch::new(target, stamp.clone(), None);
        let first = stamp
            .event(EventKind::Imported(prepared.counts))
            .with_promoted_from(from.clone());
        b.create_with(&prepared, first)?;
        batch = Some(b);
    }
    let promoted = Promoted {
        slug: slug.to_string(),
        from: doc.source.path.clone(),
        archived: archived.clone(),
        to: new_path,
        bank: bank.clone(),
        resumed,
    };
    if dry_run {
        return Ok(promoted);
    }
    // every target of the source side is checked before the first write of either bank
    crate::index_md::render(&source).map_err(CurateError::from)?;
    let log = crate::ledger::path(root, slug);
    let index_path = source.index_path();
    crate::edit::check_targets(
        root,
        [
            log.as_path(),
            doc.source.path.as_path(),
            index_path.as_path(),
        ],
    )
    .map_err(CurateError::from)?;
    if let Some(batch) = batch {
        batch.commit()?;
    }
    let dir = root.join(ARCHIVE_DIR);
    std::fs::create_dir_all(&dir).map_err(|e| {
        CurateError::from(crate::edit::EditError::Io {
            path: dir.display().to_string(),
            source: e,
        })
    })?;
    let lesson = lesson_of(doc);
    let mut ledger = Ledger::read(root, slug).map_err(CurateError::from)?;
    let mut events = with_import(&ledger, lesson, stamp, EventKind::Promoted { bank });
    events.push(stamp.event(EventKind::Archived {
        to: format!("{ARCHIVE_DIR}/{slug}.md"),
        rule: None,
    }));
    ledger.append(root, &events).map_err(CurateError::from)?;
    crate::edit::move_file(root, &doc.source.path, &archived).map_err(CurateError::from)?;
    let source = load(root).map_err(CurateError::from)?;
    crate::index_md::refresh(&source).map_err(CurateError::from)?;
    Ok(promoted)
}

fn duplicate(slug: &str, bank: &str, why: &str) -> AddError {
    CurateError::Refused(format!(
        "cannot promote `{slug}` into {bank}: {why}; record this lesson's evidence there or supersede it instead (nothing was written)"
    ))
    .into()
}

/// `to` relative to `from` (both canonical directories), `/`-separated.
fn relative(from: &Path, to: &Path) -> String {
    let a: Vec<_> = from.components().collect();
    let b: Vec<_> = to.components().collect();
    let common = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
    let mut parts: Vec<String> = vec!["..".to_string(); a.len() - common];
    parts.extend(
        b[common..]
            .iter()
            .map(|c| c.as_os_str().to_string_lossy().into_owned()),
    );
    if parts.is_empty() {
        ".".to_string()
    } else {
        parts.join("/")
    }
}
