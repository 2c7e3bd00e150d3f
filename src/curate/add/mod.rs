//! `lesson add`: admit candidate lessons (AIP-11's admit step, shared with `lesson distill`).
//!
//! A candidate is a `LESSON.md` or a JSON object with the frontmatter's fields plus `body`.
//! Each one is **validated** first: it is rendered as the `LESSON.md` it would become (a
//! frontmatter writer whose output is read back and compared, field by field, with what it
//! was asked to write) and the lint's file rules run on it, so every finding has a position;
//! the secret detector runs whatever the bank's rule levels say. Counts and confidence a
//! candidate brings are not trusted (AIP-11 "confidence laundering"): a new lesson starts at
//! `confidence: 0.5` with the counts of the run it comes from (none for `lesson add`), and
//! what the candidate claimed is kept under `metadata.lesson.origin.claimed`.
//!
//! Then each is **deduplicated**: a candidate with the slug of an existing lesson, one whose
//! merge into a lesson that lesson's ledger already records (with its evidence), or one that
//! [`crate::dedup::duplicates_of_with`] finds (by meaning too when `[retrieve] model` names a
//! model: the bank's vectors come from the retrieval index, read before the lock, and each
//! candidate is embedded), is absorbed: its evidence items are appended to the
//! existing lesson (a span edit; body and trigger never change) and a `merged` event goes to
//! that lesson's ledger. Any other candidate becomes a new file with a `created` event.
//!
//! The decision does not depend on the order of the candidates, and adding them again changes
//! nothing: they are admitted in a canonical order (by slug, then text), each compared with
//! the lessons the batch created before the bank's; then [`crate::dedup::pairs_involving`]
//! the new lessons, what `lesson dedup` reports of them, runs on the bank as it would be written, and a new lesson it pairs
//! with another is merged into that one (the later of two new ones into the earlier), again
//! until no pair is left. So `lesson dedup` never reports a pair that `lesson add` made.
//!
//! A batch is all or nothing: every candidate is validated and every change planned in memory
//! ([`Batch`]) before the first byte is written, under the bank's lock.

mod batch;
mod render;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use super::{CurateError, Stamp};
use crate::bank::{Bank, Overlay};
use crate::config::Config;
use crate::dedup::{DedupError, Embeddings, Pair};
use crate::diagnostic::{Diagnostic, Severity};
use crate::document::Document;
use crate::ledger::RunOutcome;
use crate::lesson::Counts;
use crate::lesson::QUARANTINE_KEY;
use crate::lesson::{Lesson, LEGACY_SCHEMAS, SCHEMA};
use crate::lint::rules::carrier;
use crate::lint::{Check, FileContext};
use crate::source::Source;

pub use batch::{created_labels, Admitted, Batch, Why};
pub use render::render;

/// The fields a candidate may not bring: the runtime computes them.
const UNTRUSTED: [&str; 3] = ["confidence", "success_count", "failure_count"];
/// Expanded YAML nodes at most when a `LESSON.md` candidate's frontmatter is read as data.
const NODE_BUDGET: usize = 100_000;

/// A candidate lesson, as read, not yet checked.
#[derive(Debug, Clone)]
pub struct Candidate {
    /// Where it comes from, for messages: `cands.json[2]`, `new.md`, `judge:candidates[0]`.
    pub label: String,
    /// The frontmatter's fields; `None` when a `LESSON.md` candidate's frontmatter is not a
    /// mapping (its lint findings say why).
    pub fields: Option<Map<String, Value>>,
    /// The markdown body, if given.
    pub body: Option<Value>,
    /// A `LESSON.md` candidate as read: findings point into it.
    pub input: Option<Document>,
    /// Existing lessons the candidate's advice conflicts with (from a judge), and why.
    pub conflicts_with: Vec<(String, Option<String>)>,
}

impl Candidate {
    /// A candidate from a JSON object: the frontmatter's fields plus `body`.
    pub fn from_json(label: impl Into<String>, mut object: Map<String, Value>) -> Candidate {
        let body = object.remove("body");
        Candidate {
            label: label.into(),
            fields: Some(object),
            body,
            input: None,
            conflicts_with: Vec::new(),
        }
    }

    /// A candidate from a `LESSON.md` file's bytes.
    pub fn from_markdown(label: impl Into<String>, bytes: Vec<u8>) -> Candidate {
        let label = label.into();
        let (source, problem) = Source::from_bytes(PathBuf::from(&label), bytes);
        let doc = Document::parse(source, problem);
        let fields = match (&doc.yaml, doc.root_map()) {
            (Some(yaml), Some(root)) => match yaml.to_json(root, &mut NODE_BUDGET.clone()) {
                Some(Value::Object(map)) => Some(map),
                _ => None,
            },
            _ => None,
        };
        let body = doc
            .fences()
            .map(|f| Value::String(doc.source.text[f.body_start..].to_string()));
        Candidate {
            label,
            fields,
            body,
            input: Some(doc),
            conflicts_with: Vec::new(),
        }
    }
}

/// Candidates could not be read at all.
#[derive(Debug, thiserror::Error)]
pub enum AddError {
    /// The input is neither a `LESSON.md` nor JSON candidates.
    #[error("{label}: {message}")]
    Input {
        /// Where the input comes from.
        label: String,
        /// What is wrong, and where.
        message: String,
    },
    /// A candidate failed validation; nothing was written.
    #[error("{0}")]
    Rejected(Rejection),
    /// Planning or writing failed; nothing was written unless the message says so.
    #[error(transparent)]
    Curate(#[from] CurateError),
    /// Dedup could not run.
    #[error(transparent)]
    Dedup(#[from] DedupError),
    /// A write failed after others succeeded.
    #[error("{0}; files written before the failure stay: `lesson lint` reports what is inconsistent (L001 resets counts from the ledger)")]
    PartlyWritten(CurateError),
}

/// Read candidates: JSON (one object, or an array of objects) when the text starts with `{`
/// or `[`, else one `LESSON.md`. `label` names the input in messages (`-` reads as `stdin`).
pub fn read_candidates(label: &str, bytes: Vec<u8>) -> Result<Vec<Candidate>, AddError> {
    let label = if label == "-" { "stdin" } else { label };
    let first = bytes.iter().find(|b| !b.is_ascii_whitespace());
    if !matches!(first, Some(b'{' | b'[')) {
        return Ok(vec![Candidate::from_markdown(label, bytes)]);
    }
    let input = |message: String| AddError::Input {
        label: label.to_string(),
        message,
    };
    let value: Value = serde_json::from_slice(&bytes).map_err(|e| {
        input(format!(
            "not valid JSON at line {} column {}: {}",
            e.line(),
            e.column(),
            json_message(&e)
        ))
    })?;
    match value {
        Value::Object(map) => Ok(vec![Candidate::from_json(label, map)]),
        Value::Array(items) => items
            .into_iter()
            .enumerate()
            .map(|(i, item)| match item {
                Value::Object(map) => Ok(Candidate::from_json(format!("{label}[{i}]"), map)),
                other => Err(input(format!(
                    "candidate [{i}] is {}, not an object with a lesson's fields",
                    json_type(&other)
                ))),
            })
            .collect(),
        other => Err(input(format!(
            "expected a candidate object or an array of them, found {}",
            json_type(&other)
        ))),
    }
}

/// serde_json's message without its " at line L column C" tail.
pub fn json_message(e: &serde_json::Error) -> String {
    let text = e.to_string();
    text.split(" at line ")
        .next()
        .unwrap_or_default()
        .to_string()
}

/// "a string", "an array", ... for messages.
pub fn json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// How candidates enter the bank.
#[derive(Debug, Clone)]
pub struct Intake {
    /// `metadata.lesson.origin` of every new lesson (`claimed` is added to it when the
    /// candidate brought counts, confidence or an origin of its own).
    pub origin: Map<String, Value>,
    /// How the run new lessons come from ended (their initial counts): `None` for `lesson add`.
    pub run: Option<RunOutcome>,
    /// The run the batch is for: recorded in every ledger event (`lesson distill`).
    pub run_id: Option<String>,
    /// Whether a candidate that trips an injection-carrier rule ([`carrier::CARRIER_RULES`],
    /// whatever the bank's levels and the candidate's suppressions say) is admitted in
    /// quarantine: on by default (`lesson add`, `lesson distill`, the MCP `propose`, `lesson
    /// promote`); `lesson sync`, which only merges a lesson someone already admitted, turns it
    /// off.
    pub screen: bool,
}

impl Default for Intake {
    fn default() -> Intake {
        Intake {
            origin: Map::new(),
            run: None,
            run_id: None,
            screen: true,
        }
    }
}

/// A new lesson's counts, from the one run it was distilled from: a success lesson from a
/// successful run has worked once; a failure lesson from a failed run has been contradicted
/// once (AIP-11: a lesson may come from a single failure, `failure_count: 1`). Anything else,
/// and every lesson without a run, starts at 0/0.
pub fn initial_counts(outcome: Option<&str>, run: Option<RunOutcome>) -> Counts {
    match (outcome, run) {
        (Some("success"), Some(RunOutcome::Success)) => Counts {
            success_count: 1,
            failure_count: 0,
        },
        (Some("failure"), Some(RunOutcome::Failure)) => Counts {
            success_count: 0,
            failure_count: 1,
        },
        _ => Counts::default(),
    }
}

/// A problem without a position in a file (the candidate's shape, a gate).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// The candidate.
    pub label: String,
    /// What is wrong and what to do.
    pub message: String,
}

/// Why candidates were refused: findings (with positions in the sources) and problems.
#[derive(Debug, Default)]
pub struct Rejection {
    /// Lint findings on the candidates, errors and warnings.
    pub diagnostics: Vec<Diagnostic>,
    /// Problems without a position.
    pub problems: Vec<Problem>,
    /// The texts the findings point into (a `LESSON.md` as given, a JSON candidate as
    /// rendered).
    pub sources: Vec<Source>,
}

impl Rejection {
    /// Error-level findings and problems.
    pub fn errors(&self) -> usize {
        self.problems.len()
            + self
                .diagnostics
                .iter()
                .filter(|d| d.severity == Severity::Error)
                .count()
    }

    /// Whether anything blocks writing.
    pub fn refused(&self) -> bool {
        self.errors() > 0
    }

    /// Add a problem.
    pub fn problem(&mut self, label: &str, message: impl Into<String>) {
        self.problems.push(Problem {
            label: label.to_string(),
            message: message.into(),
        });
    }

    /// Keep only what is about the candidates labelled `labels` (the warnings of candidates
    /// that were merged into existing lessons say nothing about the bank).
    pub fn keep_only(&mut self, labels: &[&str]) {
        let kept = |p: &Path| labels.iter().any(|l| Path::new(l) == p);
        self.diagnostics.retain(|d| kept(&d.path));
        self.problems.retain(|p| labels.contains(&p.label.as_str()));
        self.sources.retain(|s| kept(&s.path));
    }

    /// Take another rejection's findings.
    pub fn extend(&mut self, other: Rejection) {
        self.diagnostics.extend(other.diagnostics);
        self.problems.extend(other.problems);
        self.sources.extend(other.sources);
    }
}

impl std::fmt::Display for Rejection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let n = self.errors();
        write!(
            f,
            "{n} error{} in the candidates; nothing was written",
            if n == 1 { "" } else { "s" }
        )
    }
}

/// A candidate that passed validation, rendered as the lesson it would become.
#[derive(Debug, Clone)]
pub struct Prepared {
    /// Where it comes from.
    pub label: String,
    /// The rendered `LESSON.md` (its path is the label until it is planned into a bank).
    pub doc: Document,
    /// Its lesson.
    pub lesson: Lesson,
    /// Its initial counts.
    pub counts: Counts,
    /// Existing lessons it conflicts with, and why.
    pub conflicts_with: Vec<(String, Option<String>)>,
    /// The injection-carrier rules it tripped: it is written with
    /// `metadata.lesson.quarantine` listing them.
    pub quarantine: Option<Vec<String>>,
    /// Whether one of its evidence items trips a carrier rule itself: a quarantined candidate
    /// is merged into a live lesson (which takes only its evidence) only when none does.
    pub evidence_carriers: bool,
}

/// Validate every candidate. Returns those that passed and everything found (warnings
/// included); the caller writes nothing when the rejection has errors.
pub fn prepare_all(
    bank: &Bank,
    candidates: &[Candidate],
    intake: &Intake,
) -> (Vec<Prepared>, Rejection) {
    let mut rejection = Rejection::default();
    let mut prepared = Vec::new();
    for candidate in candidates {
        if let Some(p) = prepare(bank, candidate, intake, &mut rejection) {
            prepared.push(p);
        }
    }
    (prepared, rejection)
}

/// Validate one candidate and render it; `None` (with the reasons in `out`) when it fails.
pub fn prepare(
    bank: &Bank,
    candidate: &Candidate,
    intake: &Intake,
    out: &mut Rejection,
) -> Option<Prepared> {
    let label = candidate.label.as_str();
    let errors_before = out.errors();
    let first_finding = out.diagnostics.len();
    if let Some(input) = &candidate.input {
        // a LESSON.md as given: findings point into the user's file; those on the fields a
        // candidate cannot bring are moot (their values only go to `origin.claimed`)
        let moot = untrusted_ranges(input);
        let mut found = findings(input, bank);
        found.retain(|d| {
            !moot
                .iter()
                .any(|r| r.start <= d.range.start && d.range.end <= r.end)
        });
        let blocked = found.iter().any(|d| d.severity == Severity::Error);
        out.diagnostics.extend(found);
        out.sources.push(input.source.clone());
        if blocked {
            return None;
        }
    }
    let Some(fields) = &candidate.fields else {
        out.problem(
            label,
            "the frontmatter is not a mapping of a lesson's fields",
        );
        return None;
    };
    let body = match &candidate.body {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.as_str()),
        Some(other) => {
            // reported, and the rest checked all the same (with the default body)
            out.problem(
                label,
                format!(
                    "`body` is {}; it is the lesson's markdown, a string",
                    json_type(other)
                ),
            );
            None
        }
    };
    let counts = initial_counts(fields.get("outcome").and_then(Value::as_str), intake.run);
    let mut intended = match intended_fields(fields, intake, counts, &candidate.conflicts_with) {
        Ok(v) => v,
        Err(message) => {
            out.problem(label, message);
            return None;
        }
    };
    let crlf = candidate
        .input
        .as_ref()
        .and_then(|d| {
            d.fences()
                .map(|f| d.source.text[f.open.end..].starts_with("\r\n"))
        })
        .unwrap_or(false);
    let generated_body = body.is_none();
    let text = render(&intended, body, crlf);
    // a LESSON.md's findings point into the file as given, which has the label as its path
    let shown = match &candidate.input {
        None => PathBuf::from(label),
        Some(_) => PathBuf::from(format!("{label} (as it would be written)")),
    };
    let mut doc = Document::parse(Source::new(shown, text), None);
    if candidate.input.is_none() {
        // a JSON candidate: findings point into the LESSON.md it would become
        let body_start = doc.body.as_ref().map_or(usize::MAX, |b| b.start);
        let mut found = findings(&doc, bank);
        if generated_body {
            found.retain(|d| d.range.start < body_start || d.severity == Severity::Error);
        }
        out.diagnostics.extend(found);
        out.sources.push(doc.source.clone());
    } else {
        // the findings on the file as given are in; what is new here is what writing it made
        // an error (found by fuzzing: `success_coun+: 3` was a likely misspelling in the input,
        // and an unknown field beside the `success_count` the lesson is written with), and
        // secrets whatever the levels say
        let mut found: Vec<Diagnostic> = crate::lint::lint_document(&doc, bank)
            .into_iter()
            .filter(|d| d.severity == Severity::Error)
            .collect();
        secret_findings(&doc, bank, &mut found);
        if !found.is_empty() {
            out.diagnostics.extend(found);
            out.sources.push(doc.source.clone());
        }
    }
    if out.errors() > errors_before {
        return None;
    }
    let mut quarantine = None;
    let mut evidence_carriers = false;
    if intake.screen {
        let rules = screen(bank, candidate, &doc, &mut out.diagnostics);
        out.diagnostics[first_finding..].sort_by(|a, b| a.sort_key().cmp(&b.sort_key()));
        if !rules.is_empty() {
            set_quarantine(&mut intended, &rules);
            let text = render(&intended, body, crlf);
            doc = Document::parse(Source::new(doc.source.path.clone(), text), None);
            evidence_carriers = intended
                .get("evidence")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .any(|item| {
                    ["ref", "note"].iter().any(|k| {
                        item.get(*k)
                            .and_then(Value::as_str)
                            .is_some_and(|t| !carrier::trips(t).is_empty())
                    })
                });
            quarantine = Some(rules);
        }
    }
    if let Err(problem) = render::reads_back(&doc, &intended) {
        out.problem(
            label,
            format!("the lesson written for it does not read back as the candidate ({problem}); please report this"),
        );
        return None;
    }
    let Some(lesson) = doc.lesson.clone() else {
        out.problem(
            label,
            "it is not a complete lesson: a required field is missing or holds a value the schema does not allow (the rule that would say which is off in lesson.toml)",
        );
        return None;
    };
    if !lesson.supersedes.is_empty() {
        out.problem(
            label,
            "a candidate cannot supersede lessons (supersession is explicit): drop `supersedes`, then run `lesson supersede OLD --by NEW` once it is admitted",
        );
        return None;
    }
    Some(Prepared {
        label: label.to_string(),
        doc,
        lesson: *lesson,
        counts,
        conflicts_with: candidate.conflicts_with.clone(),
        quarantine,
        evidence_carriers,
    })
}

/// The injection-carrier rules `candidate` trips, as rendered (`doc`) or as given (a
/// `LESSON.md`), sorted. Their findings join `found` as warnings where the lint at the bank's
/// levels did not report them (a rule turned off, a suppression), so that the quarantine says
/// why, with positions in the file as given.
fn screen(
    bank: &Bank,
    candidate: &Candidate,
    doc: &Document,
    found: &mut Vec<Diagnostic>,
) -> Vec<String> {
    let rendered = carrier::scan(&FileContext::new(doc, &bank.config, bank.now));
    let mut rules = carrier::codes(&rendered);
    let shown = match &candidate.input {
        Some(input) => {
            let given = carrier::scan(&FileContext::new(input, &bank.config, bank.now));
            rules.extend(carrier::codes(&given));
            rules.sort();
            rules.dedup();
            given
        }
        None => rendered,
    };
    for mut d in shown {
        let same = |e: &Diagnostic| e.code == d.code && e.range == d.range && e.path == d.path;
        if !found.iter().any(same) {
            d.severity = Severity::Warning;
            found.push(d);
        }
    }
    rules
}

/// `metadata.lesson.quarantine: [rules]` in the fields a lesson is written with.
fn set_quarantine(fields: &mut Map<String, Value>, rules: &[String]) {
    let ours = fields
        .entry("metadata")
        .or_insert_with(|| Value::Object(Map::new()))
        .as_object_mut()
        .map(|m| {
            m.entry("lesson")
                .or_insert_with(|| Value::Object(Map::new()))
        });
    if let Some(Value::Object(ours)) = ours {
        let rules = rules.iter().map(|r| Value::from(r.as_str())).collect();
        ours.insert(QUARANTINE_KEY.into(), Value::Array(rules));
    }
}

/// The byte ranges of the untrusted top-level entries (`confidence: 2`, key and value).
fn untrusted_ranges(doc: &Document) -> Vec<std::ops::Range<usize>> {
    let (Some(yaml), Some(root)) = (&doc.yaml, doc.root_map()) else {
        return Vec::new();
    };
    UNTRUSTED
        .iter()
        .filter_map(|key| {
            let (k, v) = yaml.get(root, key)?;
            Some(yaml.node(k).span.start..yaml.node(v).span.end.max(yaml.node(k).span.end))
        })
        .collect()
}

/// The lint's file rules on a candidate (its configured levels, its suppressions), plus the
/// secret detector whatever the bank's levels and the candidate's suppressions say.
fn findings(doc: &Document, bank: &Bank) -> Vec<Diagnostic> {
    let mut found = crate::lint::lint_document(doc, bank);
    secret_findings(doc, bank, &mut found);
    found
}

/// The secret detector's findings on `doc`, as errors, whatever the bank's rule levels and the
/// document's suppressions say.
pub fn secret_scan(doc: &Document, bank: &Bank) -> Vec<Diagnostic> {
    let mut found = Vec::new();
    secret_findings(doc, bank, &mut found);
    found
}

/// The secret detector's findings, as errors, unless `found` has them already.
fn secret_findings(doc: &Document, bank: &Bank, found: &mut Vec<Diagnostic>) {
    let rule = &crate::lint::rules::secret::RULE;
    let Check::File(check) = rule.check else {
        return;
    };
    let mut secrets = Vec::new();
    check(&FileContext::new(doc, &bank.config, bank.now), &mut secrets);
    for mut d in secrets {
        d.severity = Severity::Error;
        let same = |e: &Diagnostic| e.code == d.code && e.range == d.range;
        match found.iter_mut().find(|e| same(e)) {
            Some(e) => e.severity = Severity::Error,
            None => found.push(d),
        }
    }
    found.sort_by(|a, b| a.sort_key().cmp(&b.sort_key()));
}

/// The fields the new lesson is written with: the candidate's, with `schema` filled in, the
/// untrusted fields replaced, and `metadata.lesson.origin` (and `conflicts_with`) set.
fn intended_fields(
    fields: &Map<String, Value>,
    intake: &Intake,
    counts: Counts,
    conflicts_with: &[(String, Option<String>)],
) -> Result<Map<String, Value>, String> {
    let mut out = fields.clone();
    let schema_ok = match out.get("schema") {
        None | Some(Value::Null) => false,
        Some(Value::String(s)) => !LEGACY_SCHEMAS.contains(&s.as_str()),
        Some(_) => true,
    };
    if !schema_ok {
        out.insert("schema".into(), Value::from(SCHEMA));
    }
    let mut claimed = Map::new();
    for key in UNTRUSTED {
        if let Some(v) = out.remove(key) {
            claimed.insert(key.to_string(), v);
        }
    }
    out.insert("confidence".into(), Value::from(0.5));
    out.insert("success_count".into(), Value::from(counts.success_count));
    out.insert("failure_count".into(), Value::from(counts.failure_count));
    let metadata = out
        .entry("metadata")
        .or_insert_with(|| Value::Object(Map::new()));
    let Value::Object(metadata) = metadata else {
        return Err(format!(
            "`metadata` is {}; it is a mapping of vendor namespaces",
            json_type(metadata)
        ));
    };
    let ours = metadata
        .entry("lesson")
        .or_insert_with(|| Value::Object(Map::new()));
    let Value::Object(ours) = ours else {
        return Err(format!(
            "`metadata.lesson` is {}; it is a mapping (this tool's namespace)",
            json_type(ours)
        ));
    };
    if let Some(previous) = ours.remove("origin") {
        claimed.insert("origin".into(), previous);
    }
    // quarantine is the gate's to set, not the candidate's
    if let Some(previous) = ours.remove(QUARANTINE_KEY) {
        claimed.insert(QUARANTINE_KEY.into(), previous);
    }
    let mut origin = intake.origin.clone();
    if !claimed.is_empty() {
        origin.insert("claimed".into(), Value::Object(claimed));
    }
    if !origin.is_empty() {
        ours.insert("origin".into(), Value::Object(origin));
    }
    if !conflicts_with.is_empty() {
        let slugs = conflicts_with.iter().map(|(s, _)| Value::from(s.as_str()));
        ours.insert("conflicts_with".into(), Value::Array(slugs.collect()));
    }
    Ok(out)
}

// ---------------------------------------------------------------------------------------------
// lesson add

/// What `lesson add` did (or, with `dry_run`, would do).
#[derive(Debug)]
pub struct Added {
    /// What became of each candidate, in input order.
    pub admitted: Vec<Admitted>,
    /// Warnings on the candidates (nothing at error level: that refuses the batch).
    pub warnings: Rejection,
    /// Whether anything was (or would be) written.
    pub changed: bool,
    /// Why the candidates were compared with the bank by words alone although
    /// `[retrieve] model` names a model (it cannot be loaded, or failed).
    pub semantic_problem: Option<String>,
}

/// Admit candidates into the bank at `root` (`lesson add`), all or nothing, holding the bank's
/// lock. [`crate::define_lesson`] admits one lesson defined in code this way.
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
/// use lesson::curate::add::{add, read_candidates, Admitted, Intake};
/// use lesson::curate::Stamp;
///
/// let file = b"---
/// schema: learning/v1
/// slug: pin-the-toolchain
/// title: Pin the Rust toolchain.
/// trigger:
///   description: CI builds break when a new stable Rust ships.
/// outcome: failure
/// evidence:
///   - kind: work-item
///     ref: wi-9
/// ---
/// # Pin the Rust toolchain.
/// ";
/// let candidates = read_candidates("new.md", file.to_vec())?;
/// let added = add(bank, &candidates, &Intake::default(), &Stamp::now("ana"), false)?;
/// assert!(matches!(&added.admitted[0], Admitted::Created { slug, .. } if slug == "pin-the-toolchain"));
/// # Ok(())
/// # }
/// ```
pub fn add(
    root: &Path,
    candidates: &[Candidate],
    intake: &Intake,
    stamp: &Stamp,
    dry_run: bool,
) -> Result<Added, AddError> {
    // read before the lock: the retrieval index takes it to keep what it embeds
    let semantic = match Config::load(root) {
        Ok(config) => crate::dedup::embeddings_of(root, &config),
        Err(_) => Ok(None), // the load under the lock says what is wrong
    };
    super::locked(root, || {
        Ok(add_locked(
            root, candidates, intake, stamp, dry_run, semantic,
        ))
    })?
}

fn add_locked(
    root: &Path,
    candidates: &[Candidate],
    intake: &Intake,
    stamp: &Stamp,
    dry_run: bool,
    semantic: Result<Option<Embeddings>, String>,
) -> Result<Added, AddError> {
    let load =
        || crate::lint::load_with(root, &Overlay::new(), stamp.at).map_err(CurateError::from);
    let bank = load()?;
    let (prepared, rejection) = prepare_all(&bank, candidates, intake);
    if rejection.refused() {
        return Err(AddError::Rejected(rejection));
    }
    let (embeddings, semantic_problem) = match semantic {
        Ok(embeddings) => (embeddings, None),
        Err(problem) => (None, Some(problem)),
    };
    let (batch, admitted) = plan(
        Some(bank),
        load,
        &prepared,
        stamp,
        intake,
        embeddings.as_ref(),
    )?;
    let changed = !batch.is_empty();
    if changed && !dry_run {
        batch.commit()?;
    }
    let mut warnings = rejection;
    warnings.keep_only(&created_labels(&admitted));
    Ok(Added {
        admitted,
        warnings,
        changed,
        semantic_problem,
    })
}

/// Plan the admission of `prepared` (see the module docs): the batch and what became of each
/// candidate, in input order. `bank` is the bank as loaded; `load` reads it again when a new
/// lesson has to be merged after all and the plan is made afresh.
fn plan(
    mut bank: Option<Bank>,
    load: impl Fn() -> Result<Bank, CurateError>,
    prepared: &[Prepared],
    stamp: &Stamp,
    intake: &Intake,
    embeddings: Option<&Embeddings>,
) -> Result<(Batch, Vec<Admitted>), AddError> {
    // a canonical order: the input's order changes nothing
    let mut order: Vec<usize> = (0..prepared.len()).collect();
    let key = |p: &Prepared| (p.lesson.slug.value.clone(), p.doc.source.text.clone());
    order.sort_by_cached_key(|&i| key(&prepared[i]));
    let rank: BTreeMap<usize, usize> = order.iter().enumerate().map(|(r, &i)| (i, r)).collect();
    // candidates that dedup paired after they were created: merged into that lesson instead
    let mut forced: BTreeMap<usize, Pair> = BTreeMap::new();
    loop {
        let bank = match bank.take() {
            Some(bank) => bank,
            None => load()?,
        };
        let mut batch = Batch::new(bank, stamp.clone(), intake.run_id.clone());
        batch.set_embeddings(embeddings.cloned());
        let mut admitted: Vec<Option<Admitted>> = vec![None; prepared.len()];
        for &i in order.iter().filter(|i| !forced.contains_key(i)) {
            admitted[i] = Some(batch.admit(&prepared[i])?);
        }
        // where each candidate's slug went: a forced merge into a lesson that went elsewhere
        // follows it there
        let mut went: BTreeMap<String, String> = BTreeMap::new();
        for a in admitted.iter().flatten() {
            if let Admitted::Merged {
                candidate, into, ..
            } = a
            {
                went.entry(candidate.clone())
                    .or_insert_with(|| into.clone());
            }
        }
        for &i in order.iter().filter(|i| forced.contains_key(i)) {
            let pair = &forced[&i];
            let mut into = pair.a.clone();
            let mut seen = BTreeSet::new();
            while !batch.bank.by_slug().contains_key(into.as_str()) && seen.insert(into.clone()) {
                match went.get(&into) {
                    Some(next) => into = next.clone(),
                    None => break,
                }
            }
            let done = if batch.bank.by_slug().contains_key(into.as_str()) {
                let why = Why::Similar(Pair {
                    a: into.clone(),
                    ..pair.clone()
                });
                batch.merge_into(&prepared[i], &into, why)?
            } else {
                batch.admit(&prepared[i])?
            };
            if let Admitted::Merged { into, .. } = &done {
                went.insert(prepared[i].lesson.slug.value.clone(), into.clone());
            }
            admitted[i] = Some(done);
        }
        // what `lesson dedup` would report on the bank as written: a new lesson in a pair is
        // merged into the other one
        let created: BTreeMap<&str, usize> = admitted
            .iter()
            .enumerate()
            .filter_map(|(i, a)| match a {
                Some(Admitted::Created { slug, .. }) => Some((slug.as_str(), i)),
                _ => None,
            })
            .collect();
        let mut more = false;
        if !created.is_empty() {
            let new: BTreeSet<&str> = created.keys().copied().collect();
            for pair in crate::dedup::pairs_involving(&batch.bank, batch.embeddings(), &new)? {
                let (from, into) =
                    match (created.get(pair.a.as_str()), created.get(pair.b.as_str())) {
                        (None, None) => continue,
                        (Some(&i), None) => (i, &pair.b),
                        (None, Some(&j)) => (j, &pair.a),
                        (Some(&i), Some(&j)) if rank[&i] > rank[&j] => (i, &pair.b),
                        (Some(_), Some(&j)) => (j, &pair.a),
                    };
                if forced.contains_key(&from) || !prepared[from].conflicts_with.is_empty() {
                    continue;
                }
                let candidate = prepared[from].lesson.slug.value.clone();
                forced.insert(
                    from,
                    Pair {
                        a: into.clone(),
                        b: candidate,
                        ..pair.clone()
                    },
                );
                more = true;
            }
        }
        if !more {
            let admitted = admitted
                .into_iter()
                .map(|a| a.expect("every candidate is admitted"))
                .collect();
            return Ok((batch, admitted));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn untrusted_fields_move_to_the_claimed_origin() {
        let fields: Map<String, Value> = serde_json::from_str(
            r#"{"schema": "agentlearning/v1", "confidence": 0.99, "success_count": 40,
                "metadata": {"lesson": {"origin": "elsewhere"}, "acme": {"x": 1}}, "outcome": "failure"}"#,
        )
        .unwrap();
        let intake = Intake {
            origin: serde_json::from_str(r#"{"source": "in.json"}"#).unwrap(),
            run: Some(RunOutcome::Failure),
            run_id: None,
            screen: true,
        };
        let counts = initial_counts(Some("failure"), intake.run);
        let out = intended_fields(&fields, &intake, counts, &[("other".into(), None)]).unwrap();
        assert_eq!(
            Value::Object(out),
            serde_json::json!({
                "schema": "learning/v1", "outcome": "failure", "confidence": 0.5,
                "success_count": 0, "failure_count": 1,
                "metadata": {"acme": {"x": 1}, "lesson": {
                    "origin": {"source": "in.json", "claimed": {"confidence": 0.99, "success_count": 40, "origin": "elsewhere"}},
                    "conflicts_with": ["other"]}}
            })
        );
        let bad: Map<String, Value> =
            serde_json::from_str(r#"{"metadata": {"lesson": 3}}"#).unwrap();
        assert!(intended_fields(&bad, &intake, counts, &[])
            .unwrap_err()
            .contains("`metadata.lesson` is a number"));
    }

    #[test]
    fn counts_come_from_the_run_alone() {
        let c = |o, r| initial_counts(Some(o), r);
        assert_eq!(c("success", Some(RunOutcome::Success)).success_count, 1);
        assert_eq!(c("failure", Some(RunOutcome::Failure)).failure_count, 1);
        assert_eq!(c("success", Some(RunOutcome::Failure)), Counts::default());
        assert_eq!(c("mixed", Some(RunOutcome::Success)), Counts::default());
        assert_eq!(c("success", None), Counts::default());
    }

    #[test]
    fn input_is_json_or_markdown() {
        let one = read_candidates("-", b" {\"slug\": \"a\", \"body\": \"x\"}".to_vec()).unwrap();
        assert_eq!(one[0].label, "stdin");
        assert_eq!(one[0].body, Some(Value::from("x")));
        let many = read_candidates("c.json", b"[{}, {}]".to_vec()).unwrap();
        assert_eq!(many[1].label, "c.json[1]");
        let err = read_candidates("c.json", b"[{}, 3]".to_vec()).unwrap_err();
        assert_eq!(
            err.to_string(),
            "c.json: candidate [1] is a number, not an object with a lesson's fields"
        );
        let err = read_candidates("c.json", b"{\"a\": }".to_vec()).unwrap_err();
        assert_eq!(
            err.to_string(),
            "c.json: not valid JSON at line 1 column 7: expected value"
        );
        let md = read_candidates("l.md", b"---\nslug: a\n---\n\n# T\n".to_vec()).unwrap();
        assert_eq!(md[0].body, Some(Value::from("\n# T\n")));
        assert_eq!(md[0].fields.as_ref().unwrap()["slug"], Value::from("a"));
    }
}
