//! `lesson distill`: AIP-11's distill contract, with the judge (an LLM, the runtime's concern)
//! behind a command that speaks JSON ([`protocol`], [`judge`]).
//!
//! 1. **Replay-match**: the lessons whose triggers match the run (retrieval on the run's
//!    request and caller, [`Bank::retrieve`]) are sent to the judge, which says for each
//!    whether the run followed or contradicted it; each verdict is recorded as `lesson record`
//!    records an outcome ([`crate::curate::record::plan`], ADAPTER.md's replay-match rules).
//! 2. **Propose**: the judge returns 0..N candidate lessons.
//! 3. **Write gate**, fail closed: every candidate valid (schema, lint, no secrets, no
//!    suppressions, no `supersedes`), each citing the run, at most `[distill] max-candidates`;
//!    verdicts only on lessons the judge was shown, notes one line and free of secrets. One
//!    failure and nothing at all is written. The bank's `[distill]` gates come first: a run
//!    whose trajectory is shorter than `min-steps` is skipped before the judge is called
//!    ([`Distilled::TooShort`]), candidates rated below `min-confidence` are dropped (the rest
//!    admitted), and under `secrets = "redact"` secrets in bodies and notes are replaced by
//!    `[redacted: KIND]` before the gate scans the answer (anything it still finds refuses).
//! 4. **Dedup and admit** as `lesson add` does ([`crate::curate::add`]). A candidate the judge
//!    flags as conflicting with existing lessons is kept beside them, never merged: the new
//!    lesson lists them under `metadata.lesson.conflicts_with` and both ledgers get a
//!    `conflict` event. Nothing is deleted.
//! 5. `_index.md` is regenerated.
//!
//! The judge runs without the bank's lock; the lock is taken after it answers, the bank read
//! again and the answer applied to what is there then. Every event carries the run's id, and a
//! run any ledger already names is not distilled again (the judge is not even called): one run
//! distilled twice changes nothing the second time.

pub mod judge;
pub mod protocol;

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Map, Value};

use crate::bank::{Bank, Overlay};
use crate::config::SecretPolicy;
use crate::curate::add::{self, AddError, Admitted, Batch, Candidate, Intake, Prepared, Rejection};
use crate::curate::new::NewEvidence;
use crate::curate::record::{Recorded, Request};
use crate::curate::{CurateError, Stamp};
use crate::diagnostic::Diagnostic;
use crate::document::Document;
use crate::ledger::{ledger_files, Ledger, LedgerError};
use crate::source::Source;

pub use judge::JudgeError;
pub use protocol::{Answer, Run, Verdict, PROTOCOL};

/// A verdict or conflict note is at most this many characters (an evidence note's limit).
const MAX_NOTE: usize = 500;

/// How to judge.
#[derive(Debug, Clone)]
pub struct Options {
    /// The judge command (run by the shell).
    pub judge: String,
    /// How long the judge may take.
    pub timeout: Duration,
}

/// Distilling failed; the bank is as it was.
#[derive(Debug, thiserror::Error)]
pub enum DistillError {
    /// The judge crashed, hung or could not start.
    #[error("nothing was written: {0}")]
    Judge(JudgeError),
    /// The judge's stdout is not an answer.
    #[error("nothing was written: the judge `{command}` did not answer: {message}")]
    Garbage {
        /// The command.
        command: String,
        /// What is wrong with its output.
        message: String,
    },
    /// The write gate refused the answer.
    #[error("{0}")]
    Gate(Rejection),
    /// Admitting failed.
    #[error(transparent)]
    Add(#[from] AddError),
    /// The bank could not be read or written.
    #[error(transparent)]
    Curate(#[from] CurateError),
    /// A ledger could not be read.
    #[error(transparent)]
    Ledger(#[from] LedgerError),
}

impl From<JudgeError> for DistillError {
    fn from(e: JudgeError) -> Self {
        // not `#[from]`: the judge's error is the message, not a cause to print again
        DistillError::Judge(e)
    }
}

/// What distilling a run did.
#[derive(Debug)]
pub enum Distilled {
    /// The run was distilled before: a ledger names it. Nothing was done.
    Already {
        /// The run id.
        run_id: String,
        /// The ledger that names it.
        ledger: PathBuf,
        /// The line.
        line: usize,
    },
    /// The run's trajectory is shorter than `[distill] min-steps`: nothing was done, the judge
    /// was not called.
    TooShort {
        /// The trajectory's steps.
        steps: usize,
        /// `[distill] min-steps`.
        min_steps: usize,
    },
    /// The run was distilled now.
    Done(Report),
}

/// What distilling did.
#[derive(Debug)]
pub struct Report {
    /// The slugs of the lessons sent to the judge, best match first.
    pub matched: Vec<String>,
    /// The verdicts recorded, in the judge's order.
    pub recorded: Vec<(Verdict, Recorded)>,
    /// Verdicts not recorded, and why (the lesson left the bank, or this run is recorded for
    /// it with another outcome already).
    pub skipped: Vec<(String, String)>,
    /// What became of each candidate.
    pub admitted: Vec<Admitted>,
    /// Candidates dropped by `[distill] min-confidence`: their label (`judge:candidates[i]`)
    /// and why.
    pub dropped: Vec<(String, String)>,
    /// Secrets replaced under `[distill] secrets = "redact"`: where (a label such as
    /// `judge:candidates[0].body`) and their kind.
    pub redacted: Vec<(String, &'static str)>,
    /// Warnings on the candidates.
    pub warnings: Rejection,
    /// Whether anything was written.
    pub changed: bool,
    /// Why candidates were compared with the bank by words alone although `[retrieve] model`
    /// names a model (it cannot be loaded, or failed).
    pub semantic_problem: Option<String>,
}

/// Distill `run` into the bank at `root`.
pub fn distill(
    root: &Path,
    run: &Run,
    options: &Options,
    stamp: &Stamp,
) -> Result<Distilled, DistillError> {
    let bank =
        crate::lint::load_with(root, &Overlay::new(), stamp.at).map_err(CurateError::from)?;
    let min_steps = bank.config.distill.min_steps;
    let steps = run.steps();
    if steps < min_steps {
        return Ok(Distilled::TooShort { steps, min_steps });
    }
    if let Some((ledger, line)) = distilled_in(root, &run.id)? {
        return Ok(Distilled::Already {
            run_id: run.id.clone(),
            ledger,
            line,
        });
    }
    let lessons = matched(&bank, run);
    let max = bank.config.distill.max_candidates;
    let request = protocol::JudgeRequest {
        protocol: PROTOCOL,
        run: &run.raw,
        lessons,
        max_candidates: max,
        cite: protocol::Cite {
            kind: run.kind.as_str(),
            reference: run.id.clone(),
        },
    };
    let input = serde_json::to_vec(&request).expect("the request serializes");
    let matched: Vec<String> = request.lessons.iter().map(|l| l.slug.clone()).collect();
    let stdout = judge::run(&options.judge, &input, options.timeout)?;
    let answer = protocol::parse_answer(&stdout).map_err(|message| DistillError::Garbage {
        command: options.judge.clone(),
        message,
    })?;
    let gated = gate(&bank, run, &matched, answer, &intake(run));
    if gated.rejection.refused() {
        return Err(DistillError::Gate(gated.rejection));
    }
    // the lessons' embeddings when a model is configured, read before the lock (the
    // retrieval index takes it to keep what it embeds): the add gate compares by meaning too
    let semantic = crate::dedup::embeddings_of(root, &bank.config);
    drop(bank);
    crate::curate::locked(root, || {
        Ok(apply(root, run, stamp, matched, gated, semantic))
    })?
}

/// How the candidates of `run` enter the bank.
fn intake(run: &Run) -> Intake {
    Intake {
        origin: Map::from_iter([("run".to_string(), Value::from(run.id.as_str()))]),
        run: Some(run.outcome),
        run_id: Some(run.id.clone()),
        screen: true,
    }
}

/// The write gate on a judge's raw stdout, as [`distill`] applies it once the judge has
/// answered (`matched`: the slugs the judge was shown): the verdicts and candidates that pass,
/// and what was refused. Nothing is written. For the fuzz target and tests.
#[doc(hidden)]
pub fn gate_answer(
    bank: &Bank,
    run: &Run,
    matched: &[String],
    stdout: &[u8],
) -> Result<(Vec<Verdict>, Vec<Prepared>, Rejection), String> {
    let answer = protocol::parse_answer(stdout)?;
    let gated = gate(bank, run, matched, answer, &intake(run));
    Ok((gated.verdicts, gated.prepared, gated.rejection))
}

/// Under the lock: read the bank again, record the verdicts, admit the candidates, write.
fn apply(
    root: &Path,
    run: &Run,
    stamp: &Stamp,
    matched: Vec<String>,
    gated: Gated,
    semantic: Result<Option<crate::dedup::Embeddings>, String>,
) -> Result<Distilled, DistillError> {
    let (embeddings, semantic_problem) = match semantic {
        Ok(embeddings) => (embeddings, None),
        Err(problem) => (None, Some(problem)),
    };
    let Gated {
        verdicts,
        prepared,
        rejection: warnings,
        dropped,
        redacted,
    } = gated;
    // another distill of the same run may have won the race for the lock
    if let Some((ledger, line)) = distilled_in(root, &run.id)? {
        return Ok(Distilled::Already {
            run_id: run.id.clone(),
            ledger,
            line,
        });
    }
    let bank =
        crate::lint::load_with(root, &Overlay::new(), stamp.at).map_err(CurateError::from)?;
    let mut batch = Batch::new(bank, stamp.clone(), Some(run.id.clone()));
    batch.set_embeddings(embeddings);
    let mut recorded = Vec::new();
    let mut skipped = Vec::new();
    for v in &verdicts {
        let req = Request {
            slug: v.slug.clone(),
            applied: v.applied,
            run: run.outcome,
            evidence: NewEvidence {
                kind: run.kind,
                reference: run.id.clone(),
                note: v.note.clone(),
            },
            // the evidence cites the run: its logged searches are linked through it
            retrieval: None,
        };
        match batch.record(&req) {
            Ok(r) => recorded.push((v.clone(), r)),
            Err(CurateError::Refused(why)) => skipped.push((v.slug.clone(), why)),
            Err(e @ (CurateError::NotFound { .. } | CurateError::Archived { .. })) => {
                skipped.push((
                    v.slug.clone(),
                    format!("{e} (it left the bank while the judge ran)"),
                ));
            }
            Err(e) => return Err(e.into()),
        }
    }
    let mut admitted = Vec::new();
    for p in &prepared {
        admitted.push(batch.admit(p)?);
    }
    let changed = !batch.is_empty();
    if changed {
        batch.commit()?;
    }
    let mut warnings = warnings;
    warnings.keep_only(&add::created_labels(&admitted));
    Ok(Distilled::Done(Report {
        matched,
        recorded,
        skipped,
        admitted,
        dropped,
        redacted,
        warnings,
        changed,
        semantic_problem,
    }))
}

/// The ledger (and line) whose events name `run_id` as the run they were recorded for.
pub fn distilled_in(root: &Path, run_id: &str) -> Result<Option<(PathBuf, usize)>, LedgerError> {
    let needle = format!(
        "\"run_id\":{}",
        serde_json::to_string(run_id).expect("strings serialize")
    );
    let finder = memchr::memmem::Finder::new(needle.as_bytes());
    for path in ledger_files(root) {
        let bytes = std::fs::read(&path).map_err(|source| LedgerError {
            path: path.display().to_string(),
            source,
        })?;
        if finder.find(&bytes).is_none() {
            continue;
        }
        let ledger = Ledger::parse(&path, &bytes);
        let named = ledger
            .entries
            .iter()
            .find(|e| e.event.run_id.as_deref() == Some(run_id));
        if let Some(entry) = named {
            return Ok(Some((path, entry.line)));
        }
    }
    Ok(None)
}

/// The lessons whose triggers match the run: retrieval on its request, tags and caller.
fn matched(bank: &Bank, run: &Run) -> Vec<protocol::ShownLesson> {
    let text = run.request.clone().unwrap_or_default();
    if text.trim().is_empty() && run.tags.is_empty() {
        return Vec::new();
    }
    let request = crate::retrieve::Request {
        text,
        tags: run.tags.clone(),
        operator: run.operator.clone(),
        role: run.role.clone(),
        skill: run.skill.clone(),
        k: None,
        budget: None,
        include_expired: false,
        inferred_tags: None,
        now: bank.now,
    };
    let by_slug = bank.by_slug();
    bank.retrieve(&request)
        .into_iter()
        .map(|hit| {
            let body = by_slug
                .get(hit.slug.as_str())
                .and_then(|(doc, _)| {
                    let start = doc.fences()?.body_start;
                    Some(doc.source.text[start..].trim().to_string())
                })
                .unwrap_or_default();
            protocol::ShownLesson {
                slug: hit.slug,
                title: hit.title,
                description: hit.description,
                tags: hit.tags,
                outcome: hit.outcome.as_str(),
                confidence: hit.confidence,
                success_count: hit.success_count,
                failure_count: hit.failure_count,
                body,
            }
        })
        .collect()
}

/// What passed the write gate.
struct Gated {
    /// The verdicts (their notes redacted when asked).
    verdicts: Vec<Verdict>,
    /// The candidates that pass, prepared for admission.
    prepared: Vec<Prepared>,
    /// Every reason to refuse, and the warnings.
    rejection: Rejection,
    /// Candidates dropped by `min-confidence`, and why.
    dropped: Vec<(String, String)>,
    /// Secrets redacted: where, and their kind.
    redacted: Vec<(String, &'static str)>,
}

/// Under `secrets = "redact"`: `text` with its secrets replaced, each one noted in `redacted`
/// under `label`.
fn redact_into(text: &mut String, label: &str, redacted: &mut Vec<(String, &'static str)>) {
    let (clean, kinds) = crate::lint::rules::secret::redact(text);
    if !kinds.is_empty() {
        *text = clean;
        redacted.extend(kinds.into_iter().map(|k| (label.to_string(), k)));
    }
}

/// A candidate's body and evidence notes with their secrets redacted (fields that are not
/// text are left to the gate's validation).
fn redact_candidate(
    object: &mut Map<String, Value>,
    label: &str,
    redacted: &mut Vec<(String, &'static str)>,
) {
    if let Some(Value::String(body)) = object.get_mut("body") {
        redact_into(body, &format!("{label}.body"), redacted);
    }
    if let Some(Value::Array(items)) = object.get_mut("evidence") {
        for (j, item) in items.iter_mut().enumerate() {
            if let Some(Value::String(note)) = item.get_mut("note") {
                redact_into(note, &format!("{label}.evidence[{j}].note"), redacted);
            }
        }
    }
    if let Some(Value::Array(items)) = object.get_mut("conflicts_with") {
        for (j, item) in items.iter_mut().enumerate() {
            if let Some(Value::String(note)) = item.get_mut("note") {
                redact_into(note, &format!("{label}.conflicts_with[{j}].note"), redacted);
            }
        }
    }
}

/// The confidence a candidate claims: its `confidence` when it is a number, else AIP-11's
/// default for a first sighting.
fn claimed_confidence(object: &Map<String, Value>) -> f64 {
    object
        .get("confidence")
        .and_then(Value::as_f64)
        .unwrap_or(crate::lesson::DEFAULT_CONFIDENCE)
}

/// The write gate: the verdicts and candidates that pass, and every reason to refuse.
fn gate(bank: &Bank, run: &Run, matched: &[String], answer: Answer, intake: &Intake) -> Gated {
    let mut out = Rejection::default();
    let policy = &bank.config.distill;
    let redact = policy.secrets == SecretPolicy::Redact;
    let mut redacted = Vec::new();
    let mut dropped = Vec::new();
    let mut answer = answer;
    if redact {
        for (i, v) in answer.verdicts.iter_mut().enumerate() {
            if let Some(note) = &mut v.note {
                redact_into(note, &format!("judge:verdicts[{i}].note"), &mut redacted);
            }
        }
    }
    let mut judged = HashSet::new();
    for (i, v) in answer.verdicts.iter().enumerate() {
        let label = format!("judge:verdicts[{i}]");
        if !matched.contains(&v.slug) {
            out.problem(
                &label,
                format!(
                    "`{}` is not one of the lessons the judge was shown ({}); a verdict is about a lesson that matched the run",
                    v.slug.escape_debug(),
                    if matched.is_empty() { "none".to_string() } else { matched.join(", ") }
                ),
            );
        } else if !judged.insert(v.slug.as_str()) {
            out.problem(&label, format!("a second verdict on `{}`", v.slug));
        }
        if let Some(note) = &v.note {
            check_note(bank, &format!("{label}.note"), note, &mut out);
        }
    }
    let max = bank.config.distill.max_candidates;
    if answer.candidates.len() > max {
        out.problem(
            "judge",
            format!(
                "{} candidates for one run; at most {max} are admitted per run (`[distill] max-candidates` in lesson.toml)",
                answer.candidates.len()
            ),
        );
    }
    let mut prepared = Vec::new();
    for (i, value) in answer.candidates.into_iter().enumerate() {
        let label = format!("judge:candidates[{i}]");
        let Value::Object(mut object) = value else {
            out.problem(
                &label,
                format!(
                    "{}, not an object with a lesson's fields",
                    add::json_type(&value)
                ),
            );
            continue;
        };
        let claimed = claimed_confidence(&object);
        if claimed < policy.min_confidence {
            dropped.push((
                label,
                format!(
                    "the judge rates it {claimed}, below `[distill] min-confidence` = {}",
                    policy.min_confidence
                ),
            ));
            continue;
        }
        if redact {
            redact_candidate(&mut object, &label, &mut redacted);
        }
        let conflicts = match conflicts(object.remove("conflicts_with")) {
            Ok(c) => c,
            Err(message) => {
                out.problem(&label, message);
                continue;
            }
        };
        for (slug, note) in &conflicts {
            if crate::curate::find(bank, slug).is_err() {
                out.problem(
                    &label,
                    format!(
                        "it conflicts with `{}`, which is not a lesson of the bank",
                        slug.escape_debug()
                    ),
                );
            }
            if let Some(note) = note {
                check_note(bank, &format!("{label}.conflicts_with"), note, &mut out);
            }
        }
        let mut candidate = Candidate::from_json(label.clone(), object);
        candidate.conflicts_with = conflicts;
        let Some(p) = add::prepare(bank, &candidate, intake, &mut out) else {
            continue;
        };
        let cites_run = p
            .lesson
            .evidence
            .iter()
            .any(|e| e.kind.value == run.kind && e.reference.value == run.id);
        if !cites_run {
            out.problem(
                &label,
                format!(
                    "no evidence item cites the run (kind: {}, ref: {}); a distilled lesson points back to the run it came from",
                    run.kind.as_str(),
                    run.id
                ),
            );
            continue;
        }
        if let Some(how) = suppression(&p.doc) {
            out.problem(
                &label,
                format!("it suppresses lint rules ({how}); a distilled lesson passes every rule"),
            );
            continue;
        }
        prepared.push(p);
    }
    Gated {
        verdicts: answer.verdicts,
        prepared,
        rejection: out,
        dropped,
        redacted,
    }
}

/// `conflicts_with`: absent, or a list of slugs / `{slug, note}`.
fn conflicts(value: Option<Value>) -> Result<Vec<(String, Option<String>)>, String> {
    let Some(value) = value else {
        return Ok(Vec::new());
    };
    let refs: Vec<protocol::ConflictRef> = serde_json::from_value(value).map_err(|_| {
        "`conflicts_with` is not a list of slugs (or of {slug, note} objects)".to_string()
    })?;
    Ok(refs.into_iter().map(protocol::ConflictRef::parts).collect())
}

/// A judge's note goes into a lesson or a ledger: one line, at most [`MAX_NOTE`] characters,
/// no secrets.
fn check_note(bank: &Bank, label: &str, note: &str, out: &mut Rejection) {
    if note.chars().any(char::is_control) {
        out.problem(
            label,
            "the note holds a line break or control character; a note is one line",
        );
    }
    let n = note.chars().count();
    if n > MAX_NOTE {
        out.problem(
            label,
            format!("the note has {n} characters; at most {MAX_NOTE}"),
        );
    }
    let doc = Document::parse(Source::new(PathBuf::from(label), note.to_string()), None);
    let secrets: Vec<Diagnostic> = add::secret_scan(&doc, bank);
    if !secrets.is_empty() {
        out.diagnostics.extend(secrets);
        out.sources.push(doc.source);
    }
}

/// How a rendered candidate suppresses lint rules, if it does.
fn suppression(doc: &Document) -> Option<&'static str> {
    if let (Some(yaml), Some(root)) = (&doc.yaml, doc.root_map()) {
        let allow = yaml
            .get(root, "metadata")
            .and_then(|(_, m)| yaml.get(m, "lesson"))
            .and_then(|(_, l)| yaml.get(l, "allow"));
        if allow.is_some() {
            return Some("`metadata.lesson.allow`");
        }
    }
    let body = doc.body.as_ref()?;
    body.comments
        .iter()
        .any(|c| doc.source.text[c.clone()].contains("lesson-allow"))
        .then_some("a `lesson-allow` comment")
}
