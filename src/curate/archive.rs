//! `lesson archive`: move lessons out of the live set to `_archive/<slug>.md` (never deleted),
//! with an `archived` event in each ledger.

use std::path::PathBuf;

use super::retention::{self, Rule, Verdict};
use super::{archive_path, find, lesson_of, locked, with_import, ARCHIVE_DIR};
use super::{CurateError, Stamp};
use crate::bank::{Bank, Overlay};
use crate::ledger::{EventKind, Ledger};

/// Which lessons to archive.
#[derive(Debug, Clone, Default)]
pub struct Selection {
    /// These slugs.
    pub slugs: Vec<String>,
    /// And every expired lesson.
    pub expired: bool,
    /// And every lesson the retention policy (`[retention]`, [`super::retention`]) archives.
    pub policy: bool,
}

/// One lesson moved (or, in a dry run, to move).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Move {
    /// The slug.
    pub slug: String,
    /// Where it was.
    pub from: PathBuf,
    /// Where it goes.
    pub to: PathBuf,
    /// Lessons it alone superseded: with it gone they are active again.
    pub reactivated: Vec<String>,
    /// The retention rule that archives it (`--policy`), and why.
    pub rule: Option<(Rule, String)>,
}

/// What archiving `selection` would move; checks every destination first.
pub fn plan(bank: &Bank, selection: &Selection) -> Result<Vec<Move>, CurateError> {
    let mut slugs: Vec<String> = Vec::new();
    for slug in &selection.slugs {
        find(bank, slug)?;
        if !slugs.contains(slug) {
            slugs.push(slug.clone());
        }
    }
    if selection.expired {
        for (slug, (_, lesson)) in bank.by_slug() {
            if lesson.is_expired(bank.now) && !slugs.iter().any(|s| s == slug) {
                slugs.push(slug.to_string());
            }
        }
    }
    let mut rules: Vec<(String, Rule, String)> = Vec::new();
    if selection.policy {
        for (slug, verdict) in policy(bank)? {
            if !verdict.rule.archives() {
                continue;
            }
            if !slugs.contains(&slug) {
                slugs.push(slug.clone());
            }
            rules.push((slug, verdict.rule, verdict.why));
        }
    }
    let mut moves = Vec::new();
    for slug in &slugs {
        let doc = &bank.documents[find(bank, slug)?];
        let to = archive_path(&bank.root, slug);
        if to.symlink_metadata().is_ok() {
            return Err(CurateError::Refused(format!(
                "cannot archive `{slug}`: {} already exists; rename one of them first",
                to.display()
            )));
        }
        let reactivated = lesson_of(doc)
            .supersedes
            .iter()
            .map(|s| s.value.as_str())
            .filter(|old| {
                let by = bank.superseded_by(old);
                !by.is_empty() && by.iter().all(|b| slugs.contains(b))
            })
            .map(str::to_string)
            .collect();
        moves.push(Move {
            slug: slug.clone(),
            from: doc.source.path.clone(),
            to,
            reactivated,
            rule: rules
                .iter()
                .find(|(s, ..)| s == slug)
                .map(|(_, rule, why)| (*rule, why.clone())),
        });
    }
    Ok(moves)
}

/// The retention policy's verdicts on the bank's live, unsuperseded lessons, by slug: the
/// lessons `--policy` archives (a rule that [`Rule::archives`]) and those it flags for review.
/// Reads each lesson's ledger and the retrieval log; nothing when no rule is set.
pub fn policy(bank: &Bank) -> Result<Vec<(String, Verdict)>, CurateError> {
    let config = &bank.config.retention;
    if !retention::is_set(config) {
        return Ok(Vec::new());
    }
    let log = crate::usage::ShownLog::read(&bank.root).map_err(usage_error)?;
    let mut out = Vec::new();
    for (slug, (_, lesson)) in bank.by_slug() {
        if matches!(bank.status(lesson), crate::bank::Status::Superseded(_)) {
            continue;
        }
        if crate::lesson::slug_problem(slug).is_some() {
            continue;
        }
        let ledger = Ledger::read(&bank.root, slug)?;
        let usage = log.usage(slug, &ledger);
        if let Some(v) = retention::verdict(config, lesson, &ledger, &usage, bank.now) {
            out.push((slug.to_string(), v));
        }
    }
    Ok(out)
}

/// A retrieval-log error as a curation error.
fn usage_error(e: crate::usage::UsageError) -> CurateError {
    match e {
        crate::usage::UsageError::Edit(e) => CurateError::Edit(e),
        crate::usage::UsageError::Ledger(e) => CurateError::Ledger(e),
        other => CurateError::Refused(other.to_string()),
    }
}

/// Archive the selected lessons, holding the bank's lock; returns what moved. With `dry_run`,
/// only plans (without the lock).
pub fn archive(
    root: &std::path::Path,
    selection: &Selection,
    stamp: &Stamp,
    dry_run: bool,
) -> Result<Vec<Move>, CurateError> {
    if dry_run {
        let bank = crate::lint::load_with(root, &Overlay::new(), stamp.at)?;
        return plan(&bank, selection);
    }
    locked(root, || {
        let bank = crate::lint::load_with(root, &Overlay::new(), stamp.at)?;
        let moves = plan(&bank, selection)?;
        if moves.is_empty() {
            return Ok(moves);
        }
        // a broken index template stops here, before anything is written
        crate::index_md::render(&bank)?;
        // every target is checked before the first write: a refused one writes nothing
        let logs: Vec<std::path::PathBuf> = moves
            .iter()
            .map(|m| crate::ledger::path(root, &m.slug))
            .collect();
        let index_path = bank.index_path();
        crate::edit::check_targets(
            root,
            logs.iter()
                .map(|p| p.as_path())
                .chain(moves.iter().map(|m| m.from.as_path()))
                .chain([index_path.as_path()]),
        )?;
        let dir = root.join(ARCHIVE_DIR);
        std::fs::create_dir_all(&dir).map_err(|source| crate::edit::EditError::Io {
            path: dir.display().to_string(),
            source,
        })?;
        for m in &moves {
            let lesson = lesson_of(&bank.documents[find(&bank, &m.slug)?]);
            let mut ledger = Ledger::read(root, &m.slug)?;
            let to = format!("{ARCHIVE_DIR}/{}.md", m.slug);
            let rule = m.rule.as_ref().map(|(r, _)| r.key().to_string());
            let events = with_import(&ledger, lesson, stamp, EventKind::Archived { to, rule });
            ledger.append(root, &events)?;
            crate::edit::move_file(root, &m.from, &m.to)?;
        }
        let bank = crate::lint::load_with(root, &Overlay::new(), stamp.at)?;
        crate::index_md::refresh(&bank)?;
        Ok(moves)
    })
}
