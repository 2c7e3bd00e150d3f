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
//! Then each is **deduplicated**: a candidate with the slug of an existing lesson, or one that
//! [`crate::dedup::duplicate_of`] finds, is absorbed: its evidence items are appended to the
//! existing lesson (a span edit; body and trigger never change) and a `merged` event goes to
//! that lesson's ledger. Any other candidate becomes a new file with a `created` event.
//!
//! A batch is all or nothing: every candidate is validated and every change planned in memory
//! ([`Batch`]) before the first byte is written, under the bank's lock.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use super::{edited, find, frontmatter, lesson_of, with_import, write_index, CurateError, Stamp};
use crate::bank::{Bank, Overlay};
use crate::dedup::{DedupError, Pair};
use crate::diagnostic::{Diagnostic, Severity};
use crate::document::Document;
use crate::edit::frontmatter::NewItem;
use crate::ledger::{Counts, Event, EventKind, EvidenceRef, Ledger, Merge, RunOutcome};
use crate::lesson::{Lesson, EVIDENCE_KEYS, LEGACY_SCHEMAS, SCHEMA, TARGET_KEYS};
use crate::lesson::{TOP_LEVEL_KEYS, TRIGGER_KEYS};
use crate::lint::{Check, FileContext};
use crate::scaffold::{yaml_flow_scalar, yaml_scalar};
use crate::source::Source;

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
#[derive(Debug, Clone, Default)]
pub struct Intake {
    /// `metadata.lesson.origin` of every new lesson (`claimed` is added to it when the
    /// candidate brought counts, confidence or an origin of its own).
    pub origin: Map<String, Value>,
    /// How the run new lessons come from ended (their initial counts): `None` for `lesson add`.
    pub run: Option<RunOutcome>,
    /// The run the batch is for: recorded in every ledger event (`lesson distill`).
    pub run_id: Option<String>,
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
    if let Some(input) = &candidate.input {
        // a LESSON.md as given: findings point into the user's file
        let found = findings(input, bank);
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
            out.problem(
                label,
                format!(
                    "`body` is {}; it is the lesson's markdown, a string",
                    json_type(other)
                ),
            );
            return None;
        }
    };
    let counts = initial_counts(fields.get("outcome").and_then(Value::as_str), intake.run);
    let intended = match intended_fields(fields, intake, counts, &candidate.conflicts_with) {
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
    let doc = Document::parse(Source::new(PathBuf::from(label), text), None);
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
        let mut secrets = Vec::new();
        secret_findings(&doc, bank, &mut secrets);
        if !secrets.is_empty() {
            out.diagnostics.extend(secrets);
            out.sources.push(doc.source.clone());
        }
    }
    if out.errors() > errors_before {
        return None;
    }
    if let Err(problem) = reads_back(&doc, &intended) {
        out.problem(
            label,
            format!("the lesson written for it does not read back as the candidate ({problem}); please report this"),
        );
        return None;
    }
    let lesson = doc.lesson.clone()?;
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
        lesson,
        counts,
        conflicts_with: candidate.conflicts_with.clone(),
    })
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
// Writing a candidate as LESSON.md

/// The `LESSON.md` text of `fields` and `body` (a body in the shape of `lesson new`'s when
/// none is given). `crlf` writes the frontmatter with CRLF line endings.
pub fn render(fields: &Map<String, Value>, body: Option<&str>, crlf: bool) -> String {
    let mut yaml = String::new();
    write_map(&mut yaml, 0, fields, &TOP_LEVEL_KEYS, Context::Top);
    let mut text = format!("---\n{yaml}---\n");
    if crlf {
        text = text.replace('\n', "\r\n");
    }
    match body {
        Some(body) if body.starts_with(['\n', '\r']) || body.is_empty() => text.push_str(body),
        Some(body) => {
            text.push('\n');
            text.push_str(body);
        }
        None => text.push_str(&default_body(fields)),
    }
    if !text.ends_with('\n') {
        text.push('\n');
    }
    text
}

fn default_body(fields: &Map<String, Value>) -> String {
    let title = fields.get("title").and_then(Value::as_str).unwrap_or("");
    let when = fields
        .get("trigger")
        .and_then(|t| t.get("description"))
        .and_then(Value::as_str)
        .unwrap_or("");
    format!(
        "\n# {title}\n\n## When this applies\n\n{when}\n\n## What to do (or avoid)\n\n<!-- The distilled steps, imperative and concise. -->\n\n## Counter-example\n\n<!-- The run that taught this: what happened, and what it cost. -->\n"
    )
}

/// Where a mapping sits, for the order its keys are written in.
#[derive(Clone, Copy, PartialEq)]
enum Context {
    Top,
    Trigger,
    Evidence,
    Target,
    Other,
}

impl Context {
    fn of_child(self, key: &str) -> (Context, &'static [&'static str]) {
        match (self, key) {
            (Context::Top, "trigger") => (Context::Trigger, &TRIGGER_KEYS),
            (Context::Top, "evidence") => (Context::Evidence, &EVIDENCE_KEYS),
            (Context::Trigger, "targets") => (Context::Target, &TARGET_KEYS),
            _ => (Context::Other, &[]),
        }
    }
}

/// Keys in schema order (`known`), then the others in their own order.
fn ordered<'a>(map: &'a Map<String, Value>, known: &[&str]) -> Vec<(&'a String, &'a Value)> {
    let mut out: Vec<(&String, &Value)> = Vec::new();
    for k in known {
        if let Some((key, value)) = map.get_key_value(*k) {
            out.push((key, value));
        }
    }
    out.extend(map.iter().filter(|(k, _)| !known.contains(&k.as_str())));
    out
}

fn write_map(
    out: &mut String,
    indent: usize,
    map: &Map<String, Value>,
    known: &[&str],
    context: Context,
) {
    let pad = " ".repeat(indent);
    for (key, value) in ordered(map, known) {
        let key_text = yaml_scalar(key);
        let (child, child_known) = context.of_child(key);
        match value {
            Value::Object(m) if !m.is_empty() => {
                out.push_str(&format!("{pad}{key_text}:\n"));
                write_map(out, indent + 2, m, child_known, child);
            }
            Value::Array(items) if items.iter().any(is_collection) => {
                out.push_str(&format!("{pad}{key_text}:\n"));
                for item in items {
                    write_item(out, indent + 2, item, child_known, child);
                }
            }
            _ => out.push_str(&format!("{pad}{key_text}: {}\n", inline(value))),
        }
    }
}

/// One block list item (`- ...`) at `indent`.
fn write_item(out: &mut String, indent: usize, item: &Value, known: &[&str], context: Context) {
    let pad = " ".repeat(indent);
    match item {
        Value::Object(m) if !m.is_empty() => {
            let mut nested = String::new();
            write_map(&mut nested, indent + 2, m, known, context);
            // the first line's indentation becomes the dash
            let first = &nested[indent + 2..];
            out.push_str(&format!("{pad}- {first}"));
        }
        _ => out.push_str(&format!("{pad}- {}\n", inline(item))),
    }
}

fn is_collection(v: &Value) -> bool {
    matches!(v, Value::Object(m) if !m.is_empty()) || matches!(v, Value::Array(a) if !a.is_empty())
}

/// A value on one line: a scalar, `[a, b]` for a list of scalars, `{}` / `[]`, and JSON (a
/// subset of YAML's flow style) for anything nested deeper.
fn inline(value: &Value) -> String {
    match value {
        Value::Null => "null".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::String(s) => yaml_scalar(s),
        Value::Array(items) if items.iter().all(|v| !is_collection(v)) => {
            let parts: Vec<String> = items.iter().map(flow_item).collect();
            format!("[{}]", parts.join(", "))
        }
        Value::Object(m) if m.is_empty() => "{}".into(),
        other => serde_json::to_string(other).expect("JSON values serialize"),
    }
}

fn flow_item(v: &Value) -> String {
    match v {
        Value::String(s) => yaml_flow_scalar(s),
        Value::Object(_) => "{}".into(),
        Value::Array(_) => "[]".into(),
        other => inline(other),
    }
}

/// Whether the rendered document's frontmatter reads back as exactly `intended`.
fn reads_back(doc: &Document, intended: &Map<String, Value>) -> Result<(), String> {
    if !doc.yaml_errors.is_empty() {
        return Err("the YAML does not parse cleanly".into());
    }
    let (Some(yaml), Some(root)) = (&doc.yaml, doc.root_map()) else {
        return Err("no frontmatter mapping".into());
    };
    let Some(Value::Object(got)) = yaml.to_json(root, &mut NODE_BUDGET.clone()) else {
        return Err("the frontmatter does not convert".into());
    };
    for (key, want) in intended {
        if !same_json(got.get(key), Some(want)) {
            return Err(format!("`{key}` differs"));
        }
    }
    if let Some(extra) = got.keys().find(|k| !intended.contains_key(*k)) {
        return Err(format!("`{extra}` appeared"));
    }
    Ok(())
}

/// JSON equality with numbers compared by value (an integer written `1.0` reads back as 1).
fn same_json(a: Option<&Value>, b: Option<&Value>) -> bool {
    match (a, b) {
        (Some(Value::Number(x)), Some(Value::Number(y))) => x == y || x.as_f64() == y.as_f64(),
        (Some(Value::Array(x)), Some(Value::Array(y))) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| same_json(Some(a), Some(b)))
        }
        (Some(Value::Object(x)), Some(Value::Object(y))) => {
            x.len() == y.len() && x.iter().all(|(k, v)| same_json(Some(v), y.get(k)))
        }
        (a, b) => a == b,
    }
}

// ---------------------------------------------------------------------------------------------
// Planning: a batch of changes in memory, written at the end

/// Why a candidate went into an existing lesson.
#[derive(Debug, Clone, PartialEq)]
pub enum Why {
    /// It has that lesson's slug (AIP-11: one slug, one lesson; a repeat is an update).
    SameSlug,
    /// Dedup found it a near-duplicate.
    Similar(Pair),
}

/// What became of one candidate.
#[derive(Debug, Clone, PartialEq)]
pub enum Admitted {
    /// A new lesson.
    Created {
        /// Where the candidate came from.
        label: String,
        /// Its slug.
        slug: String,
        /// Its file.
        path: PathBuf,
        /// Its initial counts.
        counts: Counts,
        /// Lessons it conflicts with.
        conflicts_with: Vec<String>,
    },
    /// Absorbed by an existing lesson, which gained the evidence items.
    Merged {
        /// Where the candidate came from.
        label: String,
        /// The candidate's slug.
        candidate: String,
        /// The lesson that absorbed it.
        into: String,
        /// That lesson's file.
        path: PathBuf,
        /// The evidence items appended (none: the lesson had them all; nothing changed).
        added: Vec<EvidenceRef>,
        /// Why it is a duplicate.
        why: Why,
    },
}

/// Changes to a bank, planned in memory: lesson texts (edited or new) and ledger events.
/// [`Batch::commit`] writes them; dropping the batch writes nothing.
pub struct Batch {
    /// The bank as it will be (documents replaced and added).
    pub bank: Bank,
    stamp: Stamp,
    run_id: Option<String>,
    /// Text on disk of each document changed so far (`None`: a new file).
    original: BTreeMap<PathBuf, Option<String>>,
    /// Ledgers as read, by slug.
    ledgers: BTreeMap<String, Ledger>,
    /// Events to append, by slug, in order.
    pending: BTreeMap<String, Vec<Event>>,
    /// Slugs of the new lessons.
    new_slugs: Vec<String>,
}

impl Batch {
    /// A batch on a bank loaded under the lock. Events are stamped with `stamp` and, when
    /// given, `run_id`.
    pub fn new(bank: Bank, stamp: Stamp, run_id: Option<String>) -> Batch {
        Batch {
            bank,
            stamp,
            run_id,
            original: BTreeMap::new(),
            ledgers: BTreeMap::new(),
            pending: BTreeMap::new(),
            new_slugs: Vec::new(),
        }
    }

    /// Whether anything would be written.
    pub fn is_empty(&self) -> bool {
        self.pending.values().all(Vec::is_empty)
            && self
                .original
                .iter()
                .all(|(path, before)| before.as_deref() == self.text_of(path) && before.is_some())
    }

    fn text_of(&self, path: &Path) -> Option<&str> {
        self.bank
            .documents
            .iter()
            .find(|d| d.source.path == path)
            .map(|d| d.source.text.as_str())
    }

    /// An event stamped for this batch.
    pub fn event(&self, kind: EventKind) -> Event {
        let event = self.stamp.event(kind);
        match &self.run_id {
            Some(id) => event.with_run_id(id),
            None => event,
        }
    }

    /// The ledger of `slug` with this batch's events so far.
    pub fn ledger(&mut self, slug: &str) -> Result<Ledger, CurateError> {
        if !self.ledgers.contains_key(slug) {
            let ledger = Ledger::read(&self.bank.root, slug)?;
            self.ledgers.insert(slug.to_string(), ledger);
        }
        let disk = &self.ledgers[slug];
        match self.pending.get(slug) {
            Some(events) if !events.is_empty() => {
                let mut text = disk.text.clone();
                if !text.is_empty() && !text.ends_with('\n') {
                    text.push('\n');
                }
                text.extend(events.iter().map(Event::to_line));
                Ok(Ledger::parse(&disk.path, text.as_bytes()))
            }
            _ => Ok(disk.clone()),
        }
    }

    /// Queue events for `slug`'s ledger.
    pub fn push(&mut self, slug: &str, events: Vec<Event>) {
        self.pending
            .entry(slug.to_string())
            .or_default()
            .extend(events);
    }

    /// Replace the document at `i` with its edited version.
    pub fn replace(&mut self, i: usize, doc: Document) {
        let old = std::mem::replace(&mut self.bank.documents[i], doc);
        // a new file is in `original` already, as `None`
        self.original
            .entry(old.source.path)
            .or_insert(Some(old.source.text));
    }

    /// Add a new lesson file.
    fn insert(&mut self, slug: &str, doc: Document) {
        let key = |p: &Path| p.as_os_str().as_encoded_bytes().to_vec();
        let at = self
            .bank
            .documents
            .partition_point(|d| key(&d.source.path) < key(&doc.source.path));
        self.original.insert(doc.source.path.clone(), None);
        self.new_slugs.push(slug.to_string());
        self.bank.documents.insert(at, doc);
    }

    /// Plan `lesson record`'s change; see [`super::record::plan`].
    pub fn record(
        &mut self,
        req: &super::record::Request,
    ) -> Result<super::record::Recorded, CurateError> {
        let i = find(&self.bank, &req.slug)?;
        let ledger = self.ledger(&req.slug)?;
        let planned = super::record::plan(&self.bank.documents[i], &ledger, req, &self.stamp)?;
        let events = planned
            .events
            .into_iter()
            .map(|e| match &self.run_id {
                Some(id) => e.with_run_id(id),
                None => e,
            })
            .collect();
        self.push(&req.slug, events);
        if planned.recorded.changed {
            self.replace(i, planned.doc);
        }
        Ok(planned.recorded)
    }

    /// Admit a prepared candidate: absorbed by the lesson with its slug or by the lesson dedup
    /// finds it duplicates, else a new lesson. A candidate that conflicts with lessons is never
    /// absorbed: both pieces of advice are kept.
    pub fn admit(&mut self, candidate: &Prepared) -> Result<Admitted, AddError> {
        let slug = candidate.lesson.slug.value.clone();
        let same_slug = self.bank.lessons().any(|(_, l)| l.slug.value == slug);
        if same_slug {
            if !candidate.conflicts_with.is_empty() {
                return Err(CurateError::Refused(format!(
                    "{}: the candidate conflicts with other lessons but has the slug of the existing lesson `{slug}`; give it a slug of its own",
                    candidate.label
                ))
                .into());
            }
            return Ok(self.absorb(candidate, &slug, Why::SameSlug)?);
        }
        if candidate.conflicts_with.is_empty() {
            if let Some(pair) = crate::dedup::duplicate_of(&self.bank, &candidate.lesson)? {
                let into = pair.a.clone();
                return Ok(self.absorb(candidate, &into, Why::Similar(pair))?);
            }
        }
        Ok(self.create(candidate)?)
    }

    fn create(&mut self, candidate: &Prepared) -> Result<Admitted, CurateError> {
        let slug = candidate.lesson.slug.value.clone();
        if let Some(path) = crate::scaffold::existing(&self.bank, &slug) {
            return Err(CurateError::Refused(format!(
                "{}: the slug `{slug}` is taken by {} (an archived lesson or a ledger keeps it); give the candidate another slug",
                candidate.label,
                path.display()
            )));
        }
        for (with, _) in &candidate.conflicts_with {
            if with == &slug {
                return Err(CurateError::Refused(format!(
                    "{}: a lesson cannot conflict with itself",
                    candidate.label
                )));
            }
            find(&self.bank, with).map_err(|e| {
                CurateError::Refused(format!(
                    "{}: it conflicts with `{with}`, which is not a lesson of the bank: {e}",
                    candidate.label
                ))
            })?;
        }
        let path = crate::scaffold::lesson_path(&self.bank.root, &slug);
        let doc = Document::parse(
            Source::new(path.clone(), candidate.doc.source.text.clone()),
            None,
        );
        self.insert(&slug, doc);
        let created = self.event(EventKind::Created(candidate.counts));
        self.push(&slug, vec![created]);
        for (with, note) in &candidate.conflicts_with {
            let mine = self.event(EventKind::Conflict {
                with: with.clone(),
                note: note.clone(),
            });
            self.push(&slug, vec![mine]);
            let i = find(&self.bank, with)?;
            let ledger = self.ledger(with)?;
            let theirs = EventKind::Conflict {
                with: slug.clone(),
                note: note.clone(),
            };
            let events = with_import(
                &ledger,
                lesson_of(&self.bank.documents[i]),
                &self.stamp,
                theirs,
            )
            .into_iter()
            .map(|e| match &self.run_id {
                Some(id) => e.with_run_id(id),
                None => e,
            })
            .collect();
            self.push(with, events);
        }
        Ok(Admitted::Created {
            label: candidate.label.clone(),
            slug,
            path,
            counts: candidate.counts,
            conflicts_with: candidate
                .conflicts_with
                .iter()
                .map(|(s, _)| s.clone())
                .collect(),
        })
    }

    /// Append the candidate's evidence items that `into` lacks, one span edit each, and a
    /// `merged` event; nothing else of `into` changes.
    fn absorb(
        &mut self,
        candidate: &Prepared,
        into: &str,
        why: Why,
    ) -> Result<Admitted, CurateError> {
        let i = find(&self.bank, into)?;
        let mut doc = self.bank.documents[i].clone();
        let mut added: Vec<EvidenceRef> = Vec::new();
        for e in &candidate.lesson.evidence {
            let item = EvidenceRef {
                kind: e.kind.value.as_str().to_string(),
                reference: e.reference.value.clone(),
                note: e.note.as_ref().map(|n| n.value.clone()),
            };
            let listed = lesson_of(&doc)
                .evidence
                .iter()
                .any(|x| x.kind.value.as_str() == item.kind && x.reference.value == item.reference);
            if listed
                || added
                    .iter()
                    .any(|a| a.kind == item.kind && a.reference == item.reference)
            {
                continue;
            }
            let fm = frontmatter(&doc)?;
            let edit = fm
                .append_evidence(NewItem {
                    kind: &item.kind,
                    reference: &item.reference,
                    note: item.note.as_deref(),
                })
                .map_err(|e| super::uneditable(&doc, e))?;
            doc = edited(&doc, std::slice::from_ref(&edit), |old, new| {
                let mut expected: Vec<_> = old.evidence.iter().map(evidence_key).collect();
                expected.push((item.kind.clone(), item.reference.clone(), item.note.clone()));
                let got: Vec<_> = new.evidence.iter().map(evidence_key).collect();
                if got != expected {
                    return Some("the evidence list is not the old one plus the new item".into());
                }
                (super::json_without(old, &["evidence"]) != super::json_without(new, &["evidence"]))
                    .then(|| "a field other than the evidence changed".into())
            })?;
            added.push(item);
        }
        let path = doc.source.path.clone();
        if !added.is_empty() {
            let ledger = self.ledger(into)?;
            let kind = EventKind::Merged(Merge {
                into: None,
                from: Some(candidate.lesson.slug.value.clone()),
                evidence: added.clone(),
            });
            let events = with_import(
                &ledger,
                lesson_of(&self.bank.documents[i]),
                &self.stamp,
                kind,
            )
            .into_iter()
            .map(|e| match &self.run_id {
                Some(id) => e.with_run_id(id),
                None => e,
            })
            .collect();
            self.push(into, events);
            self.replace(i, doc);
        }
        Ok(Admitted::Merged {
            label: candidate.label.clone(),
            candidate: candidate.lesson.slug.value.clone(),
            into: into.to_string(),
            path,
            added,
            why,
        })
    }

    /// Write everything: the ledgers of existing lessons first, then their files (a writer
    /// killed in between leaves counts behind their ledger, which L001 repairs); each new
    /// lesson's file before its ledger (killed in between, it simply has no ledger yet); then
    /// `_index.md`. The index is rendered before the first write, so a broken template stops
    /// the batch with nothing written.
    pub fn commit(self) -> Result<(), CurateError> {
        let root = self.bank.root.clone();
        let index = crate::index_md::render(&self.bank)?;
        let mut ledgers = self.ledgers;
        let mut append = |slug: &str, events: &[Event]| -> Result<(), CurateError> {
            if events.is_empty() {
                return Ok(());
            }
            if !ledgers.contains_key(slug) {
                ledgers.insert(slug.to_string(), Ledger::read(&root, slug)?);
            }
            let ledger = ledgers.get_mut(slug).expect("inserted above");
            ledger.append(&root, events)?;
            Ok(())
        };
        let new_slugs = &self.new_slugs;
        for (slug, events) in &self.pending {
            if !new_slugs.contains(slug) {
                append(slug, events)?;
            }
        }
        let by_path: HashMap<&Path, &Document> = self
            .bank
            .documents
            .iter()
            .map(|d| (d.source.path.as_path(), d))
            .collect();
        for (path, before) in &self.original {
            let doc = by_path[path.as_path()];
            if before.as_deref().is_some_and(|b| b != doc.source.text) {
                crate::edit::write_atomic(&root, path, doc.source.text.as_bytes())?;
            }
        }
        for slug in new_slugs {
            let path = crate::scaffold::lesson_path(&root, slug);
            let doc = by_path[path.as_path()];
            crate::edit::write_atomic(&root, &path, doc.source.text.as_bytes())?;
            if let Some(events) = self.pending.get(slug) {
                append(slug, events)?;
            }
        }
        write_index(&self.bank, &index)?;
        Ok(())
    }
}

fn evidence_key(e: &crate::lesson::Evidence) -> (String, String, Option<String>) {
    (
        e.kind.value.as_str().to_string(),
        e.reference.value.clone(),
        e.note.as_ref().map(|n| n.value.clone()),
    )
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
}

/// Admit candidates into the bank at `root`, all or nothing, holding the bank's lock.
pub fn add(
    root: &Path,
    candidates: &[Candidate],
    intake: &Intake,
    stamp: &Stamp,
    dry_run: bool,
) -> Result<Added, AddError> {
    super::locked(root, || {
        Ok(add_locked(root, candidates, intake, stamp, dry_run))
    })?
}

fn add_locked(
    root: &Path,
    candidates: &[Candidate],
    intake: &Intake,
    stamp: &Stamp,
    dry_run: bool,
) -> Result<Added, AddError> {
    let bank = Bank::load_with(root, &Overlay::new(), stamp.at).map_err(CurateError::from)?;
    let (prepared, rejection) = prepare_all(&bank, candidates, intake);
    if rejection.refused() {
        return Err(AddError::Rejected(rejection));
    }
    let mut batch = Batch::new(bank, stamp.clone(), intake.run_id.clone());
    let mut admitted = Vec::new();
    for p in &prepared {
        admitted.push(batch.admit(p)?);
    }
    let changed = !batch.is_empty();
    if changed && !dry_run {
        batch.commit()?;
    }
    Ok(Added {
        admitted,
        warnings: rejection,
        changed,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn parse_back(text: &str) -> Map<String, Value> {
        let doc = Document::parse(Source::new("x.md", text.to_string()), None);
        assert!(doc.yaml_errors.is_empty(), "{text}");
        let (yaml, root) = (doc.yaml.as_ref().unwrap(), doc.root_map().unwrap());
        match yaml.to_json(root, &mut 10_000).unwrap() {
            Value::Object(m) => m,
            other => panic!("{other}"),
        }
    }

    #[test]
    fn writes_block_yaml_in_schema_order() {
        let fields: Map<String, Value> = serde_json::from_str(
            r#"{"title": "Use a: colon", "slug": "a-b", "evidence": [{"ref": "r1", "kind": "run"}],
                "trigger": {"tags": ["x", "y z"], "description": "when", "targets": [{"skill": "s*", "role": "r"}]},
                "metadata": {"v": {"deep": [[1, {"a": null}]], "e": {}}}, "outcome": "success"}"#,
        )
        .unwrap();
        let text = render(&fields, Some("# Use a: colon\n"), false);
        assert_eq!(
            text,
            "---\nslug: a-b\ntitle: 'Use a: colon'\ntrigger:\n  description: when\n  tags: [x, y z]\n  targets:\n    - role: r\n      skill: s*\noutcome: success\nevidence:\n  - kind: run\n    ref: r1\nmetadata:\n  v:\n    deep:\n      - [1,{\"a\":null}]\n    e: {}\n---\n\n# Use a: colon\n"
        );
        assert!(same_json(
            Some(&Value::Object(parse_back(&text))),
            Some(&Value::Object(fields))
        ));
    }

    fn json_leaf() -> impl Strategy<Value = Value> {
        prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            (-1e6f64..1e6).prop_map(Value::from),
            any::<String>().prop_map(Value::from),
            "[ a-z:#'\"\\-\\[\\]{},&*!|>%@`]{0,8}".prop_map(Value::from),
        ]
    }

    fn json_value() -> impl Strategy<Value = Value> {
        json_leaf().prop_recursive(3, 24, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                prop::collection::btree_map("[a-z:# ]{0,5}", inner, 0..4)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(500))]

        /// The writer is faithful: whatever the fields, the frontmatter reads back as them.
        #[test]
        fn any_fields_read_back(fields in prop::collection::btree_map("[a-z_ ]{1,6}", json_value(), 1..5)) {
            let fields: Map<String, Value> = fields.into_iter().collect();
            let text = render(&fields, Some("body\n"), false);
            let doc = Document::parse(Source::new("x.md", text.clone()), None);
            prop_assert_eq!(reads_back(&doc, &fields), Ok(()), "{}", text);
        }
    }

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
