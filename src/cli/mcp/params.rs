//! The tools' inputs: each a JSON Schema (derived) that the client sees in `tools/list`.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use lesson::listing::{Query, QueryError};

/// `search`: the lessons that apply to a request, as `lesson search` finds them.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Search {
    /// The request text (a user message, a task description).
    pub request: String,
    /// Tags the request is classified with; tagged lessons must share one.
    #[serde(default)]
    pub tags: Vec<String>,
    /// The caller's operator, matched against lessons' target globs.
    pub operator: Option<String>,
    /// The caller's role.
    pub role: Option<String>,
    /// The caller's skill.
    pub skill: Option<String>,
    /// Lessons at most (default: the bank's `[retrieve] k`).
    pub k: Option<usize>,
    /// Token budget of the prompt block (default: the bank's `[retrieve] budget`).
    pub budget: Option<usize>,
    /// Expired lessons are candidates too (archival reads).
    #[serde(default)]
    pub include_expired: bool,
    /// The run the lessons are shown for: the search is logged in the bank's retrieval log
    /// (`lesson search --log RUN`), so that `record` with this run links its outcome to it.
    pub run_id: Option<String>,
}

/// `get`: one lesson.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Get {
    /// The lesson's slug.
    pub slug: String,
    /// Return an expired lesson too (archival read); without it an expired lesson is the
    /// error `expired`.
    #[serde(default)]
    pub include_expired: bool,
}

/// Which lessons `list` returns.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// Retrievable lessons.
    Active,
    /// Lessons another one supersedes.
    Superseded,
    /// Lessons past their `expires_at`.
    Expired,
    /// Lessons in quarantine (a human approves them with `lesson review --approve`).
    Quarantined,
    /// Every lesson.
    #[default]
    All,
}

/// A lesson's outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    /// Learned from a run that succeeded.
    Success,
    /// Learned from a run that failed.
    Failure,
    /// Both.
    Mixed,
}

/// Which date `since` and `until` test.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum DateField {
    /// When the lesson was added (git's first commit of its file, else its ledger's oldest
    /// event).
    #[default]
    Created,
    /// When it last changed (git's newest commit, else its ledger's newest event).
    Updated,
}

/// The order of `list`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Sort {
    /// By slug.
    #[default]
    Name,
    /// Newest created first.
    Created,
    /// Most recently updated first.
    Updated,
    /// Most of `tags` shared first, then most recently updated.
    Tags,
    /// Shown to the most runs first (logged searches).
    Shown,
    /// Highest utility first, never shown last.
    Utility,
}

/// `list`: the bank's lessons, as `lesson list --format json` with the same filters.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct List {
    /// Only lessons with this status (default: all).
    #[serde(default)]
    pub status: Status,
    /// Only lessons whose `date` is at or after this: `today`, `yesterday`, `7d` (also `h`,
    /// `w`), a date (`2026-11-20`, UTC) or an RFC 3339 timestamp.
    pub since: Option<String>,
    /// Only lessons whose `date` is before the end of this (a date includes its whole day).
    pub until: Option<String>,
    /// The date `since` and `until` test (default: created).
    #[serde(default)]
    pub date: DateField,
    /// Only lessons with at least one of these tags.
    #[serde(default)]
    pub tags: Vec<String>,
    /// Only lessons with one of these outcomes.
    #[serde(default)]
    pub outcomes: Vec<Outcome>,
    /// Only lessons from one of these sources: an evidence kind (`run`, `conversation`,
    /// `work-item`, `audit`, `wiki-page`), `KIND:REF`, or a REF alone (an evidence ref, or
    /// `metadata.lesson.origin.source` or `.run`); REF may be a glob.
    #[serde(default)]
    pub origins: Vec<String>,
    /// Only lessons whose ledger's first event was recorded by one of these ids (globs).
    #[serde(default)]
    pub by: Vec<String>,
    /// The order (default: name).
    #[serde(default)]
    pub sort: Sort,
    /// At most this many lessons (after sorting).
    pub limit: Option<usize>,
}

/// No arguments.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Nothing {}

/// Whether the lesson's advice was followed.
#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Applied {
    /// The run did what the lesson says.
    Followed,
    /// The run did the opposite of what the lesson says.
    Contradicted,
}

/// How the run ended.
#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum RunOutcome {
    /// The run succeeded.
    Success,
    /// The run failed.
    Failure,
}

/// Where an outcome was observed.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Evidence {
    /// `run`, `conversation`, `work-item`, `audit` or `wiki-page`.
    pub kind: String,
    /// The id of the run (or other record).
    #[serde(rename = "ref")]
    pub reference: String,
    /// A one-line note.
    pub note: Option<String>,
}

/// `record`: an observed outcome, as `lesson record`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Record {
    /// The lesson's slug.
    pub slug: String,
    /// Whether the run followed the lesson's advice.
    pub applied: Applied,
    /// How the run ended.
    pub run_outcome: RunOutcome,
    /// The run (or other record) the outcome was observed in.
    pub evidence: Evidence,
    /// The run whose logged search (`search` with `run_id`) showed the lesson, when the
    /// evidence cites something else (`lesson record --run RUN`).
    pub run_id: Option<String>,
    /// Who records it (default: as `lesson record`: $LESSON_BY, else $USER@hostname).
    pub by: Option<String>,
}

/// `propose`: candidate lessons through the `lesson add` gate (validation, dedup, all or
/// nothing). Give `candidates` or `markdown`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Propose {
    /// One candidate object or an array of them: the frontmatter's fields plus `body`.
    pub candidates: Option<Value>,
    /// One candidate as a whole LESSON.md file.
    pub markdown: Option<String>,
    /// Where the candidates come from, kept in each new lesson's
    /// `metadata.lesson.origin.source` (default: `mcp`).
    pub origin: Option<String>,
    /// Who records the ledger events (default: as `lesson add`).
    pub by: Option<String>,
    /// Say what would happen; write nothing.
    #[serde(default)]
    pub dry_run: bool,
}

/// `lint`: check the bank, as `lesson lint --output-format json`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Lint {
    /// Files or directories of the bank to report on, relative to it (default: all).
    #[serde(default)]
    pub paths: Vec<String>,
    /// Run only these rules: codes, code prefixes, names or `ALL`.
    #[serde(default)]
    pub select: Vec<String>,
}

/// The `lessons_for` prompt's arguments (prompt arguments are strings).
#[derive(Debug, Default, Deserialize)]
pub struct LessonsFor {
    /// The request.
    pub request: Option<String>,
    /// The caller's role.
    pub role: Option<String>,
    /// Tags, comma-separated.
    pub tags: Option<String>,
}

impl List {
    /// The library's query for these parameters, relative dates read at `now` (every row with
    /// its dates and author, as `lesson list --format json`).
    pub fn query(self, now: jiff::Timestamp) -> Result<Query, QueryError> {
        use lesson::listing as l;
        let query = Query {
            status: match self.status {
                Status::All => l::StatusFilter::All,
                Status::Active => l::StatusFilter::Active,
                Status::Superseded => l::StatusFilter::Superseded,
                Status::Expired => l::StatusFilter::Expired,
                Status::Quarantined => l::StatusFilter::Quarantined,
            },
            date: match self.date {
                DateField::Created => l::DateField::Created,
                DateField::Updated => l::DateField::Updated,
            },
            tags: self.tags,
            outcomes: self
                .outcomes
                .into_iter()
                .map(|o| match o {
                    Outcome::Success => lesson::lesson::Outcome::Success,
                    Outcome::Failure => lesson::lesson::Outcome::Failure,
                    Outcome::Mixed => lesson::lesson::Outcome::Mixed,
                })
                .collect(),
            sort: match self.sort {
                Sort::Name => l::Sort::Name,
                Sort::Created => l::Sort::Created,
                Sort::Updated => l::Sort::Updated,
                Sort::Tags => l::Sort::Tags,
                Sort::Shown => l::Sort::Shown,
                Sort::Utility => l::Sort::Utility,
            },
            limit: self.limit,
            dates: true,
            ..Query::default()
        };
        let text = l::QueryText {
            since: self.since.as_deref(),
            until: self.until.as_deref(),
            origins: &self.origins,
            by: &self.by,
        };
        query.with_text(text, now)
    }
}

impl Search {
    /// The library's request for these parameters at `now`, and the run to log the search for.
    pub fn request(self, now: jiff::Timestamp) -> (lesson::retrieve::Request, Option<String>) {
        let request = lesson::retrieve::Request {
            text: self.request,
            tags: self.tags,
            operator: self.operator,
            role: self.role,
            skill: self.skill,
            k: self.k,
            budget: self.budget,
            include_expired: self.include_expired,
            inferred_tags: None,
            now,
        };
        (request, self.run_id)
    }
}

impl Record {
    /// The library's request for these parameters, and who records; refused (the message says
    /// why) for an unknown evidence kind or a ref or note that is not one line.
    pub fn request(self) -> Result<(lesson::curate::record::Request, Option<String>), String> {
        use lesson::lesson::EvidenceKind;
        let kind = EvidenceKind::parse(&self.evidence.kind).ok_or_else(|| {
            let kinds: Vec<&str> = EvidenceKind::ALL.iter().map(|k| k.as_str()).collect();
            format!(
                "`{}` is not an evidence kind; use one of {}",
                self.evidence.kind,
                kinds.join(", ")
            )
        })?;
        if self.evidence.reference.trim().is_empty() {
            return Err(
                "the evidence ref is empty; give the id of the run, conversation or work item"
                    .into(),
            );
        }
        let one_line = |s: &str| !s.contains(['\n', '\r']);
        if !one_line(&self.evidence.reference)
            || !self.evidence.note.as_deref().is_none_or(one_line)
        {
            return Err("the evidence ref and note are one line each".into());
        }
        let request = lesson::curate::record::Request {
            slug: self.slug,
            applied: match self.applied {
                Applied::Followed => lesson::ledger::Applied::Followed,
                Applied::Contradicted => lesson::ledger::Applied::Contradicted,
            },
            run: match self.run_outcome {
                RunOutcome::Success => lesson::ledger::RunOutcome::Success,
                RunOutcome::Failure => lesson::ledger::RunOutcome::Failure,
            },
            evidence: lesson::curate::new::NewEvidence {
                kind,
                reference: self.evidence.reference,
                note: self.evidence.note.filter(|n| !n.is_empty()),
            },
            retrieval: self.run_id,
        };
        Ok((request, self.by))
    }
}

impl Propose {
    /// The input of `lesson add`'s reader and the intake (`origin`), taken out of the
    /// parameters; refused unless exactly one of `candidates` and `markdown` is given.
    pub fn input(&mut self) -> Result<(Vec<u8>, lesson::curate::add::Intake), String> {
        let bytes = match (self.candidates.take(), self.markdown.take()) {
            (Some(c), None) => serde_json::to_vec(&c).map_err(|e| format!("candidates: {e}"))?,
            (None, Some(md)) => md.into_bytes(),
            _ => {
                return Err("give `candidates` (JSON) or `markdown` (a LESSON.md), not both".into())
            }
        };
        let mut origin = serde_json::Map::new();
        origin.insert(
            "source".into(),
            Value::from(self.origin.take().unwrap_or_else(|| "mcp".into())),
        );
        let intake = lesson::curate::add::Intake {
            origin,
            ..Default::default()
        };
        Ok((bytes, intake))
    }
}
