//! The tools' inputs: each a JSON Schema (derived) that the client sees in `tools/list`.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

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
    /// Every lesson.
    #[default]
    All,
}

/// `list`: the bank's lessons, as `lesson list --format json`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct List {
    /// Only lessons with this status (default: all).
    #[serde(default)]
    pub status: Status,
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
