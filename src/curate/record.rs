//! `lesson record`: an observed outcome, appended to the lesson's ledger and cached in its
//! frontmatter (the two count lines and one new evidence item, nothing else).

use std::path::{Path, PathBuf};

use super::{edited, find, frontmatter, json_without, lesson_of, locked};
use super::{with_import, CurateError, Stamp};
use crate::bank::{Bank, Overlay};
use crate::curate::new::NewEvidence;
use crate::document::Document;
use crate::edit::frontmatter::NewItem;
use crate::ledger::{
    Applied, Counts, Delta, Event, EventKind, EvidenceRef, Ledger, LineProblem, OutcomeEvent,
    RunOutcome,
};
use crate::source::Source;

/// What to record.
#[derive(Debug, Clone)]
pub struct Request {
    /// The lesson.
    pub slug: String,
    /// Whether its advice was followed.
    pub applied: Applied,
    /// How the run ended.
    pub run: RunOutcome,
    /// Where it was observed. For a failed run a missing note is filled in ("followed; the run
    /// failed"): nothing else in the lesson would say what the item stands for.
    pub evidence: NewEvidence,
    /// The run whose logged search showed the lesson (`lesson record --run RUN`, see
    /// [`crate::usage`]), when the evidence cites something else: the ledger's outcome then
    /// carries it as `retrieval`. `None` (or the evidence's own `ref`) links the outcome to the
    /// run its evidence names.
    pub retrieval: Option<String>,
}

/// What `record` did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recorded {
    /// The lesson file.
    pub path: PathBuf,
    /// The counts the file had.
    pub before: Counts,
    /// The counts it has now (the ledger's).
    pub after: Counts,
    /// What this outcome added.
    pub delta: Delta,
    /// `false` when the ledger already held this outcome (a retry): nothing was appended, and
    /// the lesson was only brought in line with the ledger.
    pub appended: bool,
    /// Whether the lesson file changed.
    pub changed: bool,
    /// Lines of the ledger that are not whole events (ignored).
    pub ledger_problems: Vec<LineProblem>,
}

/// The note written for a failed run when the caller gives none.
pub fn default_note(applied: Applied, run: RunOutcome) -> String {
    let ran = match run {
        RunOutcome::Success => "the run succeeded",
        RunOutcome::Failure => "the run failed",
    };
    format!("{}; {ran}", applied.as_str())
}

/// Record an outcome (`lesson record`), holding the bank's lock: one `outcome` event appended
/// to the lesson's ledger, its two count lines set from the ledger and the evidence item
/// appended; recording the same evidence again changes nothing.
///
/// ```
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # let dir = tempfile::tempdir()?;
/// # let bank = dir.path();
/// # lesson::curate::init::init(bank, jiff::Timestamp::now())?;
/// # lesson::define_lesson(bank, serde_json::json!({
/// #     "slug": "cite-the-source-url", "title": "Cite the source URL of every quoted figure.",
/// #     "trigger": {"description": "A summary quotes figures from web pages.", "tags": ["research"]},
/// #     "outcome": "success", "evidence": [{"kind": "run", "ref": "run-1"}],
/// # }), &lesson::curate::Stamp::now("doc"))?;
/// use lesson::curate::{record, Stamp};
/// use lesson::ledger::{Applied, RunOutcome};
///
/// let outcome = record::Request::new("cite-the-source-url", Applied::Followed, RunOutcome::Success, "run-2");
/// let done = record::record(bank, &outcome, &Stamp::now("my-runtime"))?;
/// assert_eq!((done.before.success_count, done.after.success_count), (0, 1));
/// assert!(done.appended);
/// // a retry of the same outcome appends nothing
/// assert!(!record::record(bank, &outcome, &Stamp::now("my-runtime"))?.appended);
/// # Ok(())
/// # }
/// ```
pub fn record(
    root: &std::path::Path,
    req: &Request,
    stamp: &Stamp,
) -> Result<Recorded, CurateError> {
    record_with(root, req, &[], stamp)
}

/// [`record`] a contradiction that names the lessons whose advice the run followed instead
/// (`lesson record --contradicted --conflicts-with OTHER`): besides the outcome, the ledger
/// gets a `conflict` event naming each of them (once: a conflict already recorded is not
/// repeated), which retrieval reads as a declared conflict. Each must be another live lesson,
/// and the outcome a contradiction.
pub fn record_with(
    root: &std::path::Path,
    req: &Request,
    conflicts_with: &[String],
    stamp: &Stamp,
) -> Result<Recorded, CurateError> {
    if let Some(run) = &req.retrieval {
        crate::usage::check_run(run).map_err(|e| CurateError::Refused(e.to_string()))?;
    }
    if !conflicts_with.is_empty() && req.applied != Applied::Contradicted {
        return Err(CurateError::Refused(
            "a conflict is recorded with a contradiction (--contradicted)".into(),
        ));
    }
    locked(root, || record_locked(root, req, conflicts_with, stamp))
}

fn record_locked(
    root: &std::path::Path,
    req: &Request,
    conflicts_with: &[String],
    stamp: &Stamp,
) -> Result<Recorded, CurateError> {
    // the common case reads the lesson and `_index.md` only (a bank of 100,000 lessons is not
    // read for one outcome); anything out of the ordinary reads the whole bank
    if conflicts_with.is_empty() {
        if let Some(one) = load_one(root, &req.slug, stamp.at) {
            return record_in(root, req, conflicts_with, stamp, one, true);
        }
    }
    let bank = crate::lint::load_with(root, &Overlay::new(), stamp.at)?;
    record_in(root, req, conflicts_with, stamp, bank, false)
}

/// The lesson `slug` (`<slug>.md` at the bank's top level) as a bank of its own, with the
/// bank's `_index.md`, when recording on it needs nothing else: the bank's `_index.md` is the
/// built-in template's, lists `slug` once, at that file, and its row is what rendering the
/// lesson as it is now gives ([`crate::index_md::replace_row`] changes nothing), so the row can
/// be replaced after the change with the same bytes as rendering the whole bank.
/// `None` sends the caller to the whole bank, which also reports whatever is wrong (a
/// duplicate slug that `_index.md` does not list is the one thing this cannot see).
fn load_one(root: &Path, slug: &str, now: jiff::Timestamp) -> Option<Bank> {
    use crate::layout::{lesson_path, INDEX_FILE, TEMPLATES_DIR};
    let regular = |p: &Path| std::fs::symlink_metadata(p).is_ok_and(|m| m.is_file());
    if crate::lesson::slug_problem(slug).is_some()
        || std::fs::symlink_metadata(root.join(TEMPLATES_DIR).join(crate::index_md::TEMPLATE))
            .is_ok()
    {
        return None;
    }
    let config = crate::config::Config::load(root).ok()?;
    let exclude = crate::bank::exclude_set(&config).ok()?;
    let rel = format!("{slug}.md");
    let path = lesson_path(root, slug);
    let index_path = root.join(INDEX_FILE);
    if !crate::walk::is_lesson_path(&rel, &exclude) || !regular(&path) || !regular(&index_path) {
        return None;
    }
    let (current, problem) = Source::read(&index_path, index_path.clone(), 64 << 20);
    if problem.is_some() {
        return None;
    }
    let bytes = std::fs::read(&path).ok()?;
    let check = crate::lint::FileErrors::default();
    let has_config = root.join(crate::config::CONFIG_FILE).is_file();
    let mut bank = Bank::from_files(root, config, [(path, bytes)], now, Some(&check));
    bank.has_config = has_config;
    let doc = bank.documents.first()?;
    if doc.has_file_errors() || doc.lesson.as_ref().map(|l| l.slug.value.as_str()) != Some(slug) {
        return None;
    }
    // the row, rendered from the file as it is, is the one there: so it links `<slug>.md`
    if crate::index_md::replace_row(&current.text, &bank)? != current.text {
        return None;
    }
    bank.index = Some(current);
    Some(bank)
}

/// [`record_locked`] on a loaded bank: the whole bank, or `one` lesson ([`load_one`]) whose
/// `_index.md` row is replaced rather than the whole file rendered.
fn record_in(
    root: &Path,
    req: &Request,
    conflicts_with: &[String],
    stamp: &Stamp,
    mut bank: Bank,
    one: bool,
) -> Result<Recorded, CurateError> {
    let i = find(&bank, &req.slug)?;
    for other in conflicts_with {
        if other == &req.slug {
            return Err(CurateError::Refused(format!(
                "`{other}` cannot conflict with itself"
            )));
        }
        find(&bank, other)?;
    }
    let mut ledger = Ledger::read(root, &req.slug)?;
    let mut planned = plan(&bank.documents[i], &ledger, req, stamp)?;
    let lesson = lesson_of(&bank.documents[i]);
    let mut named: Vec<&String> = Vec::new();
    for other in conflicts_with {
        let recorded = ledger
            .entries
            .iter()
            .any(|e| matches!(&e.event.kind, EventKind::Conflict { with, .. } if with == other));
        if recorded || named.contains(&other) {
            continue;
        }
        named.push(other);
        let conflict = EventKind::Conflict {
            with: other.clone(),
            note: Some(format!(
                "contradicted in {}:{}",
                req.evidence.kind.as_str(),
                req.evidence.reference
            )),
        };
        if planned.events.is_empty() {
            planned
                .events
                .extend(with_import(&ledger, lesson, stamp, conflict));
        } else {
            planned.events.push(stamp.event(conflict));
        }
    }
    let new_text = planned.doc.source.text.clone();
    // counts and evidence do not change supersession: the loaded bank stays valid with the new
    // file, and the index is rendered before anything is written (a broken template stops here)
    bank.documents[i] = planned.doc;
    let index = match one {
        false => crate::index_md::render_parts(&bank)?,
        true => {
            let current = bank.index.as_ref().map(|s| s.text.as_str());
            match current.and_then(|c| crate::index_md::replace_row(c, &bank)) {
                Some(index) => crate::index_md::Rendered::from(index),
                // cannot happen (`load_one` replaced this row of this `_index.md`); nothing is written yet
                None => {
                    let bank = crate::lint::load_with(root, &Overlay::new(), stamp.at)?;
                    return record_in(root, req, conflicts_with, stamp, bank, false);
                }
            }
        }
    };

    // every target is checked before the first write: a refused one writes nothing
    let log = crate::ledger::path(root, &req.slug);
    let index_path = bank.index_path();
    crate::edit::check_targets(
        root,
        [log.as_path(), &planned.recorded.path, index_path.as_path()],
    )?;
    ledger.append(root, &planned.events)?;
    let after_ledger = |source| CurateError::AfterLedger {
        ledger: log.display().to_string(),
        source,
    };
    if planned.recorded.changed {
        crate::edit::write_atomic(root, &planned.recorded.path, new_text.as_bytes()).map_err(
            |e| match planned.events.is_empty() {
                true => CurateError::Edit(e),
                false => after_ledger(e),
            },
        )?;
    }
    crate::index_md::write_if_changed(&bank, &index).map_err(|e| {
        if planned.events.is_empty() && !planned.recorded.changed {
            CurateError::Edit(e)
        } else {
            after_ledger(e)
        }
    })?;
    Ok(planned.recorded)
}

/// An outcome worked out on a lesson and its ledger, not yet written.
#[derive(Debug, Clone)]
pub struct Planned {
    /// The lesson as it will read (the same text when nothing changes).
    pub doc: Document,
    /// The events to append to its ledger (none for a retry).
    pub events: Vec<Event>,
    /// What recording does.
    pub recorded: Recorded,
}

/// Work out what recording `req` does to the lesson in `doc` whose ledger is `ledger`: the
/// edited file (two count lines and one evidence item, checked by reading it back) and the
/// events to append. Writes nothing; `lesson distill` plans several outcomes in one batch.
pub fn plan(
    doc: &Document,
    ledger: &Ledger,
    req: &Request,
    stamp: &Stamp,
) -> Result<Planned, CurateError> {
    let lesson = lesson_of(doc);
    let evidence = EvidenceRef {
        kind: req.evidence.kind.as_str().to_string(),
        reference: req.evidence.reference.clone(),
        // ADAPTER.md: a failed run adds evidence "with a failure note"
        note: req.evidence.note.clone().or_else(|| {
            (req.run == RunOutcome::Failure).then(|| default_note(req.applied, req.run))
        }),
    };
    let delta = Delta::of(req.applied, req.run);
    let outcome = OutcomeEvent {
        applied: req.applied,
        run: req.run,
        delta,
        evidence: evidence.clone(),
        retrieval: req
            .retrieval
            .clone()
            .filter(|r| *r != req.evidence.reference),
    };
    let already = already_recorded(ledger, &outcome)?;
    let before = lesson.counts();
    let mut after = match ledger.tally() {
        Some(t) => t.counts(),
        None => before,
    };
    if !already {
        after.success_count += delta.success;
        after.failure_count += delta.failure;
    }

    let fm = frontmatter(doc)?;
    let mut edits = fm
        .set_counts(after)
        .map_err(|e| super::uneditable(doc, e))?;
    let listed = lesson
        .evidence
        .iter()
        .any(|e| e.kind.value.as_str() == evidence.kind && e.reference.value == evidence.reference);
    if !listed {
        let item = NewItem {
            kind: &evidence.kind,
            reference: &evidence.reference,
            note: evidence.note.as_deref(),
        };
        // first: when the count keys are missing they are inserted where the list ends, and
        // of two insertions at one place the first edit's text comes first
        edits.insert(
            0,
            fm.append_evidence(item)
                .map_err(|e| super::uneditable(doc, e))?,
        );
    }
    let new = edited(doc, &edits, |old, new| {
        if new.counts() != after {
            return Some(format!("the counts read {}, not {after}", new.counts()));
        }
        let mut expected: Vec<_> = old.evidence.iter().map(evidence_key).collect();
        if !listed {
            expected.push((
                evidence.kind.clone(),
                evidence.reference.clone(),
                evidence.note.clone(),
            ));
        }
        let got: Vec<_> = new.evidence.iter().map(evidence_key).collect();
        if got != expected {
            return Some("the evidence list is not the old one plus the new item".into());
        }
        let fields = ["success_count", "failure_count", "evidence"];
        (json_without(old, &fields) != json_without(new, &fields))
            .then(|| "a field other than the counts and evidence changed".into())
    })?;

    let events = if already {
        Vec::new()
    } else {
        with_import(ledger, lesson, stamp, EventKind::Outcome(outcome))
    };
    let changed = new.source.text != doc.source.text;
    let recorded = Recorded {
        path: doc.source.path.clone(),
        before,
        after,
        delta,
        appended: !already,
        changed,
        ledger_problems: ledger.problems.clone(),
    };
    Ok(Planned {
        doc: new,
        events,
        recorded,
    })
}

fn evidence_key(e: &crate::lesson::Evidence) -> (String, String, Option<String>) {
    (
        e.kind.value.as_str().to_string(),
        e.reference.value.clone(),
        e.note.as_ref().map(|n| n.value.clone()),
    )
}

/// Whether the ledger holds this outcome already (same evidence, same outcome): a retry. The
/// same evidence with another outcome is refused: one run is one observation.
fn already_recorded(ledger: &Ledger, outcome: &OutcomeEvent) -> Result<bool, CurateError> {
    let same_ref = |e: &EvidenceRef| {
        e.kind == outcome.evidence.kind && e.reference == outcome.evidence.reference
    };
    for (entry, o) in ledger.outcomes() {
        if !same_ref(&o.evidence) {
            continue;
        }
        if o.applied == outcome.applied && o.run == outcome.run {
            return Ok(true);
        }
        return Err(CurateError::Refused(format!(
            "{}:{}: {}:{} is already recorded for this lesson as {}, run {} (at {}); one run is one observation",
            ledger.path.display(),
            entry.line,
            o.evidence.kind,
            o.evidence.reference,
            o.applied.as_str(),
            o.run.as_str(),
            entry.event.at
        )));
    }
    Ok(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn now() -> jiff::Timestamp {
        "2026-11-22T12:00:00Z".parse().unwrap()
    }

    /// A copy of a bank of the repository (relative to the crate) in a temporary directory,
    /// its `_index.md` rendered at [`now`].
    fn copy(bank: &str) -> tempfile::TempDir {
        fn copy_dir(from: &Path, to: &Path) {
            std::fs::create_dir_all(to).unwrap();
            for entry in std::fs::read_dir(from).unwrap() {
                let entry = entry.unwrap();
                let target = to.join(entry.file_name());
                match entry.file_type().unwrap().is_dir() {
                    true => copy_dir(&entry.path(), &target),
                    false => drop(std::fs::copy(entry.path(), target).unwrap()),
                }
            }
        }
        let dir = tempfile::tempdir().unwrap();
        copy_dir(
            &Path::new(env!("CARGO_MANIFEST_DIR")).join(bank),
            dir.path(),
        );
        let _ = std::fs::remove_dir_all(dir.path().join(crate::layout::STATE_DIR));
        let whole = crate::lint::load_with(dir.path(), &Overlay::new(), now()).unwrap();
        crate::index_md::refresh(&whole).unwrap();
        dir
    }

    fn index_md(root: &Path) -> String {
        std::fs::read_to_string(root.join(crate::layout::INDEX_FILE)).unwrap()
    }

    fn rendered(root: &Path) -> String {
        let whole = crate::lint::load_with(root, &Overlay::new(), now()).unwrap();
        crate::index_md::render(&whole).unwrap()
    }

    fn outcome(slug: &str, run: &str) -> Request {
        Request::new(slug, Applied::Contradicted, RunOutcome::Success, run)
    }

    #[test]
    fn recording_on_one_lesson_writes_the_index_rendering_the_bank_would() {
        let stamp = Stamp {
            at: now(),
            by: "test".into(),
        };
        for fixture in ["lessons", "tests/fixtures/banks/ledger"] {
            let dir = copy(fixture);
            let root = dir.path();
            let listed: Vec<String> = crate::lint::load_with(root, &Overlay::new(), now())
                .unwrap()
                .lessons()
                .map(|(_, l)| l.slug.value.clone())
                .filter(|slug| !crate::index_md::paths_of(&index_md(root), slug).is_empty())
                .collect();
            assert!(listed.len() >= 8, "{fixture}: {listed:?}");
            for (n, slug) in listed.iter().enumerate() {
                // active, superseded and expired lessons alike
                assert!(load_one(root, slug, now()).is_some(), "{fixture}: {slug}");
                let before = index_md(root);
                let done = record(root, &outcome(slug, &format!("run-{n}")), &stamp).unwrap();
                assert!(done.appended && done.changed, "{fixture}: {slug}");
                let after = index_md(root);
                assert_ne!(
                    before, after,
                    "{fixture}: {slug}: the failure count is in its row"
                );
                assert_eq!(
                    after,
                    rendered(root),
                    "{fixture}: after recording on {slug}"
                );
            }
        }
    }

    #[test]
    fn a_bank_out_of_the_ordinary_is_read_whole() {
        let stamp = Stamp {
            at: now(),
            by: "test".into(),
        };
        let slug = "keep-triggers-narrow";
        let fresh = || {
            let dir = copy("lessons");
            assert!(load_one(dir.path(), slug, now()).is_some());
            dir
        };
        // each case: what makes the bank unusual, then the whole bank's rendering after record
        type Make<'a> = &'a dyn Fn(&Path);
        let cases: [(&str, Make); 5] = [
            ("a stale row", &|root| {
                let path = crate::layout::lesson_path(root, slug);
                let text = std::fs::read_to_string(&path).unwrap();
                let text = text.replacen("confidence: 0.7", "confidence: 0.4", 1);
                std::fs::write(path, text).unwrap();
            }),
            ("another lesson's stale row", &|root| {
                let path = crate::layout::lesson_path(root, "write-files-atomically");
                let text = std::fs::read_to_string(&path).unwrap();
                std::fs::write(path, text.replacen("confidence: 0.9", "confidence: 0.3", 1))
                    .unwrap();
            }),
            ("a template override", &|root| {
                let dir = root.join(crate::layout::TEMPLATES_DIR);
                std::fs::create_dir_all(&dir).unwrap();
                let template = crate::index_md::BUILTIN_TEMPLATE.replace("# Lessons", "# Ours");
                std::fs::write(dir.join(crate::index_md::TEMPLATE), template).unwrap();
            }),
            ("no _index.md", &|root| {
                std::fs::remove_file(root.join(crate::layout::INDEX_FILE)).unwrap();
            }),
            ("a duplicate the index lists", &|root| {
                let from = crate::layout::lesson_path(root, slug);
                std::fs::create_dir_all(root.join("more")).unwrap();
                std::fs::copy(from, root.join("more").join(format!("{slug}.md"))).unwrap();
                let whole = crate::lint::load_with(root, &Overlay::new(), now()).unwrap();
                crate::index_md::refresh(&whole).unwrap();
            }),
        ];
        for (case, make) in cases {
            let dir = fresh();
            let root = dir.path();
            make(root);
            let one = load_one(root, slug, now());
            match case {
                // the other row is not this record's to check: it is patched around
                "another lesson's stale row" => assert!(one.is_some(), "{case}"),
                _ => assert!(one.is_none(), "{case}"),
            }
            let done = record(root, &outcome(slug, "run-x"), &stamp);
            if case == "a duplicate the index lists" {
                assert!(
                    matches!(done, Err(CurateError::Duplicate { .. })),
                    "{done:?}"
                );
                continue;
            }
            done.unwrap();
            if case == "another lesson's stale row" {
                // only this lesson's row and the counts line are written: the stale row stays
                assert_ne!(index_md(root), rendered(root), "{case}");
                continue;
            }
            assert_eq!(index_md(root), rendered(root), "{case}");
        }
    }
}
