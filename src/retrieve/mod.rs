//! Retrieval: which lessons apply to a request (AIP-11's retrieve contract, as made exact in
//! DESIGN.md §4).
//!
//! 1. **Candidates**: active lessons (superseded never; expired only on request).
//! 2. **Targets gate**: a lesson with `targets` is eligible only when one target's globs all
//!    match the caller's operator / role / skill (a key the target names must be given and
//!    match). A caller that gives none of the three is not eligible for targeted lessons.
//! 3. **Tags gate**: when the caller gives tags, a tagged lesson must share one of them. Known
//!    tags of the bank that occur among the request's words (*inferred* tags) are only words of
//!    the request (`[retrieve] inferred-tags = "ignore"`, the default), raise the score of the
//!    lessons that carry them (`"boost"`), or gate as given tags do when none is given
//!    (`"gate"`). Tags compare in normal form ([`text::tag_key`]: `Code_Review` =
//!    `code-review` = `code review`).
//! 4. **Score**: `similarity × confidence × count factor × recency × tag boost` ([`score`]). A
//!    request without text (no terms; tags given then only gate) ranks every lesson that passes
//!    the gates by `confidence × count factor × recency` alone (similarity counts as 1).
//! 5. Top K, ties by slug then path; for a request with text, up to `[retrieve] max-cautions`
//!    matching cautions keep a place among them, in place of the lowest-ranked other hits
//!    (never of the first).
//!
//! Two hits **conflict** only where a conflict is recorded: one names the other in
//! `metadata.lesson.conflicts_with` (as `lesson distill` records a judged contradiction), or in
//! a `conflict` event of its ledger (as `lesson record --contradicted --conflicts-with` and
//! `lesson distill` write). Sharing a tag and differing in `outcome` is no conflict: `outcome`
//! is how the source run ended, not which way the advice points. A hit is a **caution** when
//! its lesson failed more often than it worked (`failure_count > success_count`).
//!
//! [`Bank::retrieve`] builds an index in memory from a loaded bank; [`Retriever`] keeps the
//! persisted index in the bank's `.lesson/` current and searches it without parsing unchanged
//! files.

mod answer;
mod codec;
mod dense;
pub mod index;
mod layered;
pub mod marker;
pub mod record;
pub mod render;
pub mod score;
pub(crate) mod segment;
pub mod store;
pub mod text;
pub mod vectors;
mod warm;

use serde::{Deserialize, Serialize};

use crate::bank::Bank;
pub use crate::config::InferredTags;
use crate::lesson::Outcome;

pub use answer::Answer;
pub use codec::Corrupt;
pub use dense::Embeddings;
pub use index::{HeldBack, Search};
pub use marker::Identity;
pub use record::TargetGlobs;
pub use score::Settings;
pub use store::{Refresh, RetrieveError, Retriever};
pub use warm::Freshness;

/// What the caller asks for (as JSON, what `lesson search` asks a watcher,
/// [`crate::watch::serve`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Request {
    /// The request text (a user message, a task description).
    pub text: String,
    /// Tags the caller classified the request with.
    pub tags: Vec<String>,
    /// The caller's operator.
    pub operator: Option<String>,
    /// The caller's role.
    pub role: Option<String>,
    /// The caller's skill.
    pub skill: Option<String>,
    /// Hits at most; `None` for the bank's `[retrieve] k`.
    pub k: Option<usize>,
    /// The prompt block's token budget; `None` for the bank's `[retrieve] budget`.
    pub budget: Option<usize>,
    /// Whether expired lessons are candidates (archival reads).
    pub include_expired: bool,
    /// What tags found among the request's words do; `None` for the bank's
    /// `[retrieve] inferred-tags`.
    pub inferred_tags: Option<InferredTags>,
    /// The instant expiry and recency are judged at.
    pub now: jiff::Timestamp,
}

impl Default for Request {
    fn default() -> Self {
        Request {
            text: String::new(),
            tags: Vec::new(),
            operator: None,
            role: None,
            skill: None,
            k: None,
            budget: None,
            include_expired: false,
            inferred_tags: None,
            now: jiff::Timestamp::now(),
        }
    }
}

impl Request {
    /// A request for `text`, judged now.
    pub fn new(text: impl Into<String>) -> Request {
        Request {
            text: text.into(),
            ..Request::default()
        }
    }

    /// Add a tag.
    pub fn tag(mut self, tag: impl Into<String>) -> Request {
        self.tags.push(tag.into());
        self
    }

    /// Set the operator.
    pub fn operator(mut self, v: impl Into<String>) -> Request {
        self.operator = Some(v.into());
        self
    }

    /// Set the role.
    pub fn role(mut self, v: impl Into<String>) -> Request {
        self.role = Some(v.into());
        self
    }

    /// Set the skill.
    pub fn skill(mut self, v: impl Into<String>) -> Request {
        self.skill = Some(v.into());
        self
    }

    /// Set K.
    pub fn k(mut self, k: usize) -> Request {
        self.k = Some(k);
        self
    }

    /// Set the prompt block's token budget.
    pub fn budget(mut self, tokens: usize) -> Request {
        self.budget = Some(tokens);
        self
    }

    /// Include expired lessons.
    pub fn include_expired(mut self, yes: bool) -> Request {
        self.include_expired = yes;
        self
    }

    /// Say what tags found among the request's words do.
    pub fn inferred_tags(mut self, mode: InferredTags) -> Request {
        self.inferred_tags = Some(mode);
        self
    }

    /// Judge expiry and recency at `now`.
    pub fn now(mut self, now: jiff::Timestamp) -> Request {
        self.now = now;
        self
    }
}

/// The factors of a hit's score.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct ScoreParts {
    /// BM25F similarity of the request to the lesson, in `[0, 1)`; with `[retrieve] model`,
    /// the hybrid similarity (`lesson::semantic::fuse` of it and `semantic`).
    pub similarity: f64,
    /// With `[retrieve] model`: the cosine of the request's and the lesson's embeddings;
    /// none without a model.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub semantic: Option<f64>,
    /// `confidence` (0.5 when absent), clamped to `[0, 1]`.
    pub confidence: f64,
    /// `(s − f + 1) / (s + f + 1)`, at least 0.1.
    pub count_factor: f64,
    /// `0.5^(days since the lesson last changed / half-life)`: its last commit when the bank
    /// is in git, else its ledger's newest event; 1 without decay or without either.
    pub recency: f64,
    /// `[retrieve] tag-boost` when the lesson carries a tag found among the request's words
    /// (with `inferred-tags = "boost"`), else 1.
    pub tag_boost: f64,
    /// With `[retrieve] usage-weight` above 0: the factor of the lesson's retrieval figures
    /// ([`crate::usage::Usage::rank_factor`]); none when the weight is 0 (the default).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub usage: Option<f64>,
    /// The product.
    pub score: f64,
}

/// How a hit passed the targets gate.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum TargetGate {
    /// The lesson has no targets.
    Anyone,
    /// This target matched the caller.
    Matched(TargetGlobs),
}

/// How a hit passed the tags gate.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum TagGate {
    /// No tag of the request gates (none was given, and inferred tags do not gate).
    RequestUntagged,
    /// The lesson has no tags.
    LessonUntagged,
    /// The gating tags the lesson shares with the request (normal form).
    Shared(Vec<String>),
}

/// The gates a hit passed.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Gates {
    /// `active`, or `expired` (with `include_expired`).
    pub status: &'static str,
    /// Targets.
    pub targets: TargetGate,
    /// Tags.
    pub tags: TagGate,
}

/// One lesson that applies to the request.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Hit {
    /// The bank it comes from, when the bank includes others (`[banks] include`): `.` for
    /// the bank in front, else the included bank's name ([`crate::layers::Layer::name`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bank: Option<String>,
    /// Slug.
    pub slug: String,
    /// Path relative to the bank root.
    pub path: String,
    /// Title.
    pub title: String,
    /// `trigger.description`.
    pub description: String,
    /// One line of advice ("What to do (or avoid)", else the description), shortened.
    pub gist: String,
    /// Outcome.
    pub outcome: Outcome,
    /// Confidence as written (0.5 when absent).
    pub confidence: f64,
    /// `success_count`.
    pub success_count: u64,
    /// `failure_count`.
    pub failure_count: u64,
    /// Tags as written.
    pub tags: Vec<String>,
    /// Tags in normal form.
    #[serde(skip)]
    pub tag_keys: Vec<String>,
    /// The score and its factors.
    pub score: ScoreParts,
    /// The gates it passed.
    pub gates: Gates,
    /// Whether it failed more often than it worked.
    pub caution: bool,
    /// Whether it is among the hits only as a caution (`[retrieve] max-cautions`): its score
    /// alone would not have placed it in the top K.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub kept_as_caution: bool,
    /// Slugs of the other hits it conflicts with.
    pub conflicts_with: Vec<String>,
    /// The lessons it declares a conflict with: its `metadata.lesson.conflicts_with` and the
    /// `conflict` events of its ledger.
    #[serde(skip)]
    pub declared_conflicts: Vec<String>,
}

/// Why a lesson is or is not among a request's hits (`lesson search --explain SLUG`): the
/// first gate or threshold that excludes it, in the order retrieval applies them, else where
/// it ranks and its score parts.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "verdict", rename_all = "kebab-case")]
pub enum Explanation {
    /// No live lesson has this slug (archived, or never written).
    Unknown,
    /// Its own file has error-level findings: never served.
    HeldBack {
        /// The codes of its findings.
        codes: Vec<String>,
    },
    /// Admitted in quarantine: never served until `lesson review --approve` clears it.
    Quarantined {
        /// The injection-carrier rules it tripped.
        rules: Vec<String>,
    },
    /// A live lesson supersedes it.
    Superseded {
        /// The lessons that supersede it.
        by: Vec<String>,
    },
    /// Past its `expires_at` (only `include_expired` serves it).
    Expired {
        /// When it expired.
        expires_at: String,
    },
    /// No target of the lesson matches the caller's operator, role and skill.
    Targets {
        /// The lesson's targets.
        targets: Vec<TargetGlobs>,
    },
    /// The request's gating tags and the lesson's share none.
    Tags {
        /// The tags that gate the request (normal form).
        request: Vec<String>,
        /// The lesson's tags (normal form).
        lesson: Vec<String>,
    },
    /// No term of the request occurs in it.
    NoMatch,
    /// It is less similar to the request than `[retrieve] min-similarity`.
    BelowMinSimilarity {
        /// Its similarity.
        similarity: f64,
        /// The threshold.
        min_similarity: f64,
    },
    /// It matches, but ranks below the top K.
    BelowTopK {
        /// Its rank among the matching lessons (1 is the best).
        rank: usize,
        /// Lessons that match.
        matching: usize,
        /// K.
        k: usize,
        /// Its score parts.
        score: ScoreParts,
    },
    /// It is among the top K, but the prompt block's token budget cut it.
    OverBudget {
        /// Its rank among the hits.
        rank: usize,
        /// The budget.
        budget: usize,
        /// Its score parts.
        score: ScoreParts,
    },
    /// It is shown.
    Shown {
        /// Its rank among the hits (1 is the best).
        rank: usize,
        /// Its score parts.
        score: ScoreParts,
        /// Whether it is there only as a caution (`[retrieve] max-cautions`).
        kept_as_caution: bool,
    },
}

/// Whether two hits conflict: one declares the other (`metadata.lesson.conflicts_with`, or a
/// `conflict` event in its ledger). Nothing else is guessed.
pub fn conflict(a: &Hit, b: &Hit) -> bool {
    a.declared_conflicts.contains(&b.slug) || b.declared_conflicts.contains(&a.slug)
}

/// Fill each hit's `conflicts_with` from the other hits in the list.
pub fn mark_conflicts(hits: &mut [Hit]) {
    let marks: Vec<Vec<String>> = hits
        .iter()
        .map(|a| {
            hits.iter()
                .filter(|b| !std::ptr::eq(a, *b) && conflict(a, b))
                .map(|b| b.slug.clone())
                .collect()
        })
        .collect();
    for (h, m) in hits.iter_mut().zip(marks) {
        h.conflicts_with = m;
    }
}

impl Bank {
    /// The lessons that apply to `request`, best first: an index built in memory from this
    /// loaded bank, ranked with its `[retrieve]` settings.
    pub fn retrieve(&self, request: &Request) -> Vec<Hit> {
        self.search(request).hits
    }

    /// Like [`Bank::retrieve`], with the request's inferred tags and search statistics.
    pub fn search(&self, request: &Request) -> Search {
        let records = store::records_of_bank(self);
        let mut index = index::Index::build(records, segment::Header::default());
        let provenance = crate::git::provenance::Provenance::of_bank(&self.root)
            .ok()
            .flatten();
        index.set_provenance(provenance.map(std::sync::Arc::new));
        let settings = Settings::from_config(&self.config.retrieve);
        index
            .search(request, &settings)
            .expect("an index built in memory decodes")
    }
}
